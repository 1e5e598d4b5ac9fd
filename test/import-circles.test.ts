// No import circle anywhere in src/ or actors/, type-only imports included: a module can be
// read (and changed) after the ones it imports, never in a loop with them. Each kind
// declares the events it applies as the shapes it reads, which is what keeps kinds from
// importing each other (actors/registry.ts, Appliers).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourcesUnder, specifiers } from './support/imports.js';

// Compiled tests run from dist/test/, sources are two levels up.
const repoDir = fileURLToPath(new URL('../../', import.meta.url));

/** Each source file of src/ and actors/ with the source files it imports (repository-relative .ts paths). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const root of ['src', 'actors']) {
    for (const file of sourcesUnder(join(repoDir, root))) {
      const path = `${root}/${file}`;
      const imports = specifiers(readFileSync(join(repoDir, path), 'utf8'))
        .filter((spec) => spec.startsWith('.'))
        .map((spec) => relative(repoDir, resolve(dirname(join(repoDir, path)), spec)).replace(/\.js$/, '.ts'));
      graph.set(path, imports);
    }
  }
  return graph;
}

/** Every circle of `graph` found by a depth-first walk, each as the files around it. */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string): void => {
    if (onPath.has(file)) {
      found.push([...path.slice(path.indexOf(file)), file]);
      return;
    }
    if (done.has(file) || !graph.has(file)) return;
    path.push(file);
    onPath.add(file);
    for (const next of graph.get(file)!) visit(next);
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

describe('import circles', () => {
  it('src/ and actors/ import without a circle', () => {
    const graph = importGraph();
    assert.ok(graph.size > 100, `read only ${graph.size} files`);
    assert.deepEqual(circles(graph).map((circle) => circle.join(' -> ')), []);
  });

  it('the walk finds a circle, type-only imports included', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    assert.deepEqual(circles(graph), [['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
    assert.deepEqual(specifiers("import type { A } from './a.js';"), ['./a.js']);
  });
});
