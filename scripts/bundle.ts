// The service as one module: `npm run build` bundles dist/src/main.js, and every module it
// imports, into dist/src/main.bundle.js (with the chunks it shares with what it imports only
// when asked to), which `npm start` runs. Node 20 resolves, reads and
// compiles each ES module on its own at every start (it keeps no compile cache), and the
// service imports some 650 of them, most from packages (typebox alone is 249 files): the
// bundle holds only the code the service reaches, and starts in about half the CPU.
// Tests import the modules tsc emits; those that start the service as a child process run
// the bundle, as operators do.
import { build } from 'esbuild';
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVICE_BUNDLE } from '../src/built-layout.js';

/**
 * Packages left to Node's own loading, each for a reason: native addons found by their
 * package's path (uWebSockets.js, lmdb, msgpackr's extension), worker threads started from
 * their package's files (piscina, pino's transports), and packages the service imports only
 * when a feature is first used (passkeys, mail, the cluster's NATS client), which would
 * otherwise be compiled into every start.
 */
const EXTERNAL = ['uWebSockets.js', 'lmdb', 'msgpackr', 'piscina', 'pino', '@simplewebauthn/server', 'nodemailer', '@nats-io/*'];

const OUT_DIR = dirname(SERVICE_BUNDLE);

// A build's chunks are named by their content: those of earlier builds go first.
for (const name of readdirSync(OUT_DIR)) if (name.startsWith('main.bundle')) rmSync(join(OUT_DIR, name));

await build({
  entryPoints: [fileURLToPath(new URL('../src/main.js', import.meta.url))],
  // Beside main.js, chunks too, so that the paths src/built-layout.ts gives hold for the bundle.
  outdir: OUT_DIR,
  entryNames: '[name].bundle',
  // What main imports only when asked to (the cluster node, with the NATS client it imports)
  // is a chunk of its own, loaded then: in one file, its imports of packages left external
  // would be hoisted to the top and loaded at every start.
  splitting: true,
  chunkNames: 'main.bundle-[hash]',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  external: EXTERNAL,
  // CommonJS packages bundled into an ES module still call require() for Node's built-ins.
  banner: { js: "import { createRequire as bundleRequire } from 'node:module'; const require = bundleRequire(import.meta.url);" },
  sourcemap: 'linked',
  logLevel: 'warning',
});
