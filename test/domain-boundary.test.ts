// The domain (actors/) stands alone: it may use the engine's ids and StateMachine types,
// and nothing else of src/. The HTTP front maps the domain's errors to statuses, never the
// other way round, so no domain file imports from src/http.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { sourcesUnder, specifiers } from './support/imports.js';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What a file under actors/ may import from src/: these two modules, nothing else. */
const ALLOWED_FROM_SRC = ['src/engine/ids.js', 'src/engine/state-machine.js'];

// Compiled tests run from dist/test/, sources are two levels up.
const actorsDir = fileURLToPath(new URL('../../actors/', import.meta.url));
const walletDir = fileURLToPath(new URL('../../src/wallet/', import.meta.url));
const repoDir = fileURLToPath(new URL('../../', import.meta.url));

describe('domain boundary', () => {
  it('files under actors/ (commands included) import from src/ only the engine ids and StateMachine types', () => {
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
