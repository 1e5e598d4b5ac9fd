// All benches, one after another, each in its own process: the engine micro-benchmarks,
// the crypto bench (when built: bench/crypto.bench.ts is optional), then the HTTP load.
// Arguments after `--` go to the HTTP load (e.g. `npm run bench -- --duration 3`).
// Exits non-zero if any bench failed; the others still run.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { spawnTracked, exited } from './support/children.js';

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));

const benches: Array<{ name: string; file: string; args: string[]; optional: boolean }> = [
  { name: 'engine', file: here('./engine.bench.js'), args: [], optional: false },
  { name: 'crypto', file: here('./crypto.bench.js'), args: [], optional: true },
  { name: 'http', file: here('./http-load.js'), args: process.argv.slice(2), optional: false },
];

const failed: string[] = [];
const started = performance.now();
for (const bench of benches) {
  if (!existsSync(bench.file)) {
    if (bench.optional) {
      console.log(`\n(${bench.name} bench not built: ${bench.file} is absent, skipped)\n`);
      continue;
    }
    failed.push(`${bench.name}: ${bench.file} is missing (npm run build)`);
    continue;
  }
  console.log(`\n=== ${bench.name} bench ===\n`);
  const t0 = performance.now();
  const child = spawnTracked(process.execPath, [bench.file, ...bench.args], { stdio: 'inherit' });
  const how = await exited(child);
  console.log(`\n(${bench.name} bench: ${((performance.now() - t0) / 1000).toFixed(1)} s${how === 0 ? '' : `, FAILED (${how})`})`);
  if (how !== 0) failed.push(`${bench.name}: exit ${how}`);
}
console.log(`\nall benches: ${((performance.now() - started) / 1000).toFixed(1)} s`);
if (failed.length > 0) {
  console.error(`FAILED: ${failed.join('; ')}`);
  process.exit(1);
}
