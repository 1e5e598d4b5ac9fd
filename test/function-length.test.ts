// No function in src/ or actors/ is longer than 80 lines (issue 14): a long function mixes
// what should be steps with names. Tests and benches are exempt. The lengths are read from
// the source with the TypeScript compiler's own parser; a function's lines include those
// of the functions inside it, so a long closure counts against its enclosing function too.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const MAX_LINES = 80;
const root = fileURLToPath(new URL('../../', import.meta.url));

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Every function (declaration, method, constructor, accessor, arrow, expression) longer than `max` lines. */
function longFunctions(path: string, max: number): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const last = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > max) found.push(`${relative(root, path)}:${first + 1} (${last - first + 1} lines)`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('function length', () => {
  it(`no function in src/ or actors/ is longer than ${MAX_LINES} lines`, () => {
    const files = [...sourcesUnder(join(root, 'src')), ...sourcesUnder(join(root, 'actors'))];
    assert.ok(files.length > 50, `found only ${files.length} source files under ${root}`);
    assert.deepEqual(files.flatMap((path) => longFunctions(path, MAX_LINES)), []);
  });

  it('finds a long function, a long closure and a long method, and not a short one', () => {
    const lines = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const source = [
      `function short(): void {\n${lines(3)}\n}`,
      `function long(): void {\n${lines(MAX_LINES)}\n}`,
      `const closure = (): void => {\n${lines(MAX_LINES)}\n};`,
      `class C {\n  method(): void {\n${lines(MAX_LINES)}\n  }\n}`,
    ].join('\n');
    const path = join(mkdtempSync(join(tmpdir(), 'fn-length-')), 'sample.ts');
    writeFileSync(path, source);
    assert.deepEqual(
      longFunctions(path, MAX_LINES).map((where) => where.replace(/^.*sample\.ts:/, '')),
      [`6 (${MAX_LINES + 2} lines)`, `${MAX_LINES + 8} (${MAX_LINES + 2} lines)`, `${2 * MAX_LINES + 11} (${MAX_LINES + 2} lines)`],
    );
  });
});
