// The domain (actors/) stands alone: it may use the engine's ids and StateMachine types,
// and nothing else of src/. The HTTP front maps the domain's errors to statuses, never the
// other way round, so no domain file imports from src/http. The engine (src/engine) stands
// below everything else of src/: it imports nothing outside itself, knows nothing of how a
// host stores or replicates its log (cluster mode is a storage it is given), and stays in
// files a reader can hold. The HTTP front (src/http) knows nothing of the cluster: a host
// that serves environments on other nodes carries prepared requests there itself.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { sourcesUnder, specifiers } from './support/imports.js';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Lines a file of src/engine may have at most. */
const ENGINE_FILE_MAX_LINES = 450;
/** Words of cluster mode that no file of src/engine says, in code or in comments. */
const CLUSTER_WORDS = /\b(cluster|shards?|nats|jetstream)\b/i;

/** Words of cluster mode and of sending requests on that no file of src/http says, in code or in comments. */
const HTTP_CLUSTER_WORDS = /\b(cluster\w*|shards?|nats|jetstream|forward\w*)\b/i;

/** What a file under actors/ may import from src/: these modules (ids, the StateMachine contract and its change tracking), nothing else. */
const ALLOWED_FROM_SRC = ['src/engine/ids.js', 'src/engine/state-machine.js', 'src/engine/change-log.js'];

// Compiled tests run from dist/test/, sources are two levels up.
const actorsDir = fileURLToPath(new URL('../../actors/', import.meta.url));
const walletDir = fileURLToPath(new URL('../../src/wallet/', import.meta.url));
const repoDir = fileURLToPath(new URL('../../', import.meta.url));
const engineDir = fileURLToPath(new URL('../../src/engine/', import.meta.url));
const httpDir = fileURLToPath(new URL('../../src/http/', import.meta.url));

/** What in `source` (the file `file` of src/engine) breaks the engine's boundary: imports from outside it, cluster words, length. */
function engineOffences(file: string, source: string): string[] {
  const offending: string[] = [];
  for (const spec of specifiers(source)) {
    if (!spec.startsWith('.') && !spec.startsWith('/')) continue;
    const target = relative(repoDir, resolve(dirname(join(engineDir, file)), spec));
    if (!target.startsWith('src/engine/')) offending.push(`src/engine/${file} imports ${spec}`);
  }
  source.split('\n').forEach((line, i) => {
    const word = CLUSTER_WORDS.exec(line);
    if (word !== null) offending.push(`src/engine/${file}:${i + 1} says ${word[0]}`);
  });
  const lines = source.endsWith('\n') ? source.split('\n').length - 1 : source.split('\n').length;
  if (lines > ENGINE_FILE_MAX_LINES) offending.push(`src/engine/${file} has ${lines} lines`);
  return offending;
}

/** What in `source` (the file `file` of src/http) shows knowledge of the cluster: an import from src/cluster, a cluster word. */
function httpOffences(file: string, source: string): string[] {
  const offending: string[] = [];
  for (const spec of specifiers(source)) {
    const target = relative(repoDir, resolve(dirname(join(httpDir, file)), spec));
    if (target.startsWith('src/cluster/')) offending.push(`src/http/${file} imports ${spec}`);
  }
  source.split('\n').forEach((line, i) => {
    const word = HTTP_CLUSTER_WORDS.exec(line);
    if (word !== null) offending.push(`src/http/${file}:${i + 1} says ${word[0]}`);
  });
  return offending;
}

describe('domain boundary', () => {
  it('files under actors/ (commands included) import from src/ only the engine ids, StateMachine types and the change log', () => {
    const files = sourcesUnder(actorsDir);
    assert.ok(files.length >= 7, `found only ${files.length} domain files in ${actorsDir}`);
    assert.ok(files.some((file) => file.startsWith('commands/')), 'the scan reaches actors/commands/');
    const offending: string[] = [];
    for (const file of files) {
      for (const spec of specifiers(readFileSync(join(actorsDir, file), 'utf8'))) {
        if (!spec.startsWith('.') && !spec.startsWith('/')) continue;
        const target = relative(repoDir, resolve(dirname(join(actorsDir, file)), spec));
        if (!target.startsWith('actors/') && !ALLOWED_FROM_SRC.includes(target)) offending.push(`actors/${file} imports ${spec}`);
      }
    }
    assert.deepEqual(offending, []);
  });

  it('the wallet module (src/wallet) imports nothing from the HTTP front', () => {
    const files = readdirSync(walletDir).filter((name) => name.endsWith('.ts'));
    assert.ok(files.length >= 5, `found only ${files.length} wallet files in ${walletDir}`);
    const offending = files.flatMap((file) =>
      specifiers(readFileSync(walletDir + file, 'utf8'))
        .filter((spec) => spec.startsWith('../http/') || spec.includes('/src/http/'))
        .map((spec) => `src/wallet/${file} imports ${spec}`),
    );
    assert.deepEqual(offending, []);
  });

  it(`src/engine imports nothing outside src/engine, says nothing of cluster mode, and no file of it is over ${ENGINE_FILE_MAX_LINES} lines`, () => {
    const files = sourcesUnder(engineDir);
    assert.ok(files.length >= 20, `found only ${files.length} engine files in ${engineDir}`);
    assert.deepEqual(
      files.flatMap((file) => engineOffences(file, readFileSync(join(engineDir, file), 'utf8'))),
      [],
    );
  });

  it('the engine check finds an import from outside, a cluster word and a long file', () => {
    const long = Array.from({ length: ENGINE_FILE_MAX_LINES + 1 }, (_, i) => `const v${i} = ${i};`).join('\n') + '\n';
    assert.deepEqual(engineOffences('a.ts', "import { x } from '../cluster/shard.js';\nimport { y } from './log.js';\n"), [
      "src/engine/a.ts imports ../cluster/shard.js",
      'src/engine/a.ts:1 says cluster',
    ]);
    assert.deepEqual(engineOffences('b.ts', '// published to the JetStream stream\n'), ['src/engine/b.ts:1 says JetStream']);
    assert.deepEqual(engineOffences('c.ts', long), [`src/engine/c.ts has ${ENGINE_FILE_MAX_LINES + 1} lines`]);
    assert.deepEqual(engineOffences('d.ts', long.split('\n').slice(1).join('\n')), []);
  });

  it('src/http knows nothing of the cluster: no file imports src/cluster or says cluster, shard, NATS, JetStream or forwarding', () => {
    const files = sourcesUnder(httpDir);
    assert.ok(files.length >= 30 && files.some((file) => file.startsWith('routes/')), `found only ${files.length} HTTP files in ${httpDir}`);
    assert.deepEqual(
      files.flatMap((file) => httpOffences(file, readFileSync(join(httpDir, file), 'utf8'))),
      [],
    );
  });

  it('the HTTP check finds an import of src/cluster and a cluster word', () => {
    assert.deepEqual(httpOffences('routes/a.ts', "import { d } from '../../cluster/directory.js';\n"), [
      'src/http/routes/a.ts imports ../../cluster/directory.js',
      'src/http/routes/a.ts:1 says cluster',
    ]);
    assert.deepEqual(httpOffences('b.ts', "case 'cluster-forwarded':\n// sent on to the owner\n/** Forwarded by another node */\n"), ['src/http/b.ts:1 says cluster', 'src/http/b.ts:3 says Forwarded']);
  });

  it('the import scan sees every form of import', () => {
    const source = [
      "import { a } from '../src/http/errors.js';",
      "import type {\n  B,\n} from '../src/http/schemas/account-info.js';",
      "export { c } from './c.js';",
      "import './side-effect.js';",
      "const d = await import('../src/services.js');",
    ].join('\n');
    assert.deepEqual(specifiers(source).sort(), ['../src/http/errors.js', '../src/http/schemas/account-info.js', '../src/services.js', './c.js', './side-effect.js']);
  });
});
