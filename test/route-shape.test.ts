// Routes parse and render (issue 37): a route reaches the service only through its context's
// run (a command), read (a query, answered once what came before it is durable) and the
// named ports of RoutePorts, so no file in src/http/routes imports the services or waits
// for the log by hand; and its path parameters are read by its own schema, which names
// exactly the parameters of its path.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourcesUnder, specifiers } from './support/imports.js';
import { routes } from '../src/http/routes/index.js';

// Compiled tests run from dist/test/, sources are two levels up.
const routesDir = fileURLToPath(new URL('../../src/http/routes/', import.meta.url));
const repoDir = fileURLToPath(new URL('../../', import.meta.url));

describe('the shape of a route', () => {
  it('no file in src/http/routes imports src/services.ts or calls settled()', () => {
    const files = sourcesUnder(routesDir);
    assert.ok(files.length >= 10, `found only ${files.length} route files in ${routesDir}`);
    const offending: string[] = [];
    for (const file of files) {
      const source = readFileSync(join(routesDir, file), 'utf8');
      for (const spec of specifiers(source)) {
        if (relative(repoDir, resolve(dirname(join(routesDir, file)), spec)) === 'src/services.js') offending.push(`src/http/routes/${file} imports ${spec}`);
      }
      if (source.includes('settled(')) offending.push(`src/http/routes/${file} calls settled()`);
    }
    assert.deepEqual(offending, []);
  });

  it("every route's params schema names exactly the parameters of its path", () => {
    const offending: string[] = [];
    for (const r of routes) {
      const inPath = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!).sort();
      const inSchema = Object.keys((r.params?.schema.properties ?? {}) as object).sort();
      if (inPath.join() !== inSchema.join()) offending.push(`${r.method} ${r.path}: schema ${inSchema.join(', ') || '(none)'}`);
    }
    assert.ok(routes.some((r) => r.params !== undefined), 'some routes take path parameters');
    assert.deepEqual(offending, []);
  });
});
