// Issue 19's ground rule: nothing in actors/, the engine, the crypto, the wallet or webhook
// delivery reads the real clock or draws randomness directly. Time comes from the injected
// Clock, randomness from the process's Entropy (src/engine/entropy.ts), so a simulation can
// drive both from one seed. The calls are
// found with the TypeScript compiler's parser (comments and strings do not count); the
// few allowed ones are listed with why. And one seed gives the same ids, twice.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { newId } from '../src/engine/ids.js';
import { seededEntropy, systemEntropy, useEntropy } from '../src/engine/entropy.js';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Calls that read the real clock or draw randomness, by how the callee is written. */
const NONDETERMINISTIC = new Set([
  'Date.now',
  'Math.random',
  'performance.now',
  'process.hrtime',
  'randomUUID',
  'randomBytes',
  'randomFillSync',
  'randomInt',
  'getRandomValues',
  // Keys made by a library's own source: node:crypto's and noble's.
  'generateKeys',
  'generateKeyPairSync',
  'generateKeyPair',
  'randomSecretKey',
  'randomPrivateKey',
]);

/** Imports that draw randomness of their own, whatever they are called locally. */
const NONDETERMINISTIC_IMPORTS: Readonly<Record<string, readonly string[]>> = { '@scure/bip39': ['generateMnemonic'] };

/** Where one is allowed, and why. */
const ALLOWED: Readonly<Record<string, { calls: readonly string[]; why: string }>> = {
  'src/engine/clock.ts': { calls: ['Date.now'], why: 'systemClock is the real clock; everything else is handed a Clock' },
  'src/engine/entropy.ts': { calls: ['randomFillSync'], why: "systemEntropy is the system's source; everything else is handed an Entropy" },
  'src/engine/engine.ts': { calls: ['performance.now'], why: 'when opening began, and the default meter pacing recovery: never in a decision or an event' },
  'src/engine/recovery.ts': { calls: ['performance.now'], why: 'durations for reports: never in a decision or an event' },
  'src/engine/snapshot-policy.ts': { calls: ['performance.now'], why: "a snapshot's duration for reports and metrics: never in what it writes" },
  'src/engine/log.ts': { calls: ['performance.now'], why: 'commit latency for metrics: never in an entry' },
  'src/engine/snapshot.ts': { calls: ['performance.now'], why: "pacing a snapshot's writes (the default meter): never in what it writes" },
  'src/crypto/pool.ts': { calls: ['performance.now'], why: "a closing pool's bounded wait for its workers to load: never in a result" },
  'src/outbound/egress.ts': { calls: ['performance.now'], why: "the real network's answer time; a simulation sends through its own egress" },
};

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** `file:line callee` for every clock read or random draw in a source file, `new Date()` included. */
function nondeterministicCalls(path: string): Array<{ where: string; callee: string }> {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Array<{ where: string; callee: string }> = [];
  const at = (node: ts.Node): string => `${relative(root, path)}:${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}`;
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const text = node.expression.getText(file);
      const name = ts.isPropertyAccessExpression(node.expression) ? node.expression.name.text : text;
      const callee = NONDETERMINISTIC.has(text) ? text : NONDETERMINISTIC.has(name) ? name : undefined;
      if (callee !== undefined) found.push({ where: at(node), callee });
    }
    if (ts.isNewExpression(node) && node.expression.getText(file) === 'Date' && (node.arguments?.length ?? 0) === 0) found.push({ where: at(node), callee: 'new Date()' });
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && node.importClause?.namedBindings !== undefined && ts.isNamedImports(node.importClause.namedBindings)) {
      const drawing = NONDETERMINISTIC_IMPORTS[node.moduleSpecifier.text] ?? [];
      for (const element of node.importClause.namedBindings.elements) {
        const imported = (element.propertyName ?? element.name).text;
        if (drawing.includes(imported)) found.push({ where: at(element), callee: `${node.moduleSpecifier.text} ${imported}` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

function violations(dirs: readonly string[]): string[] {
  return dirs.flatMap((dir) =>
    sourcesUnder(join(root, dir)).flatMap((path) => {
      const allowed = ALLOWED[relative(root, path)]?.calls ?? [];
      return nondeterministicCalls(path)
        .filter(({ callee }) => !allowed.includes(callee))
        .map(({ where, callee }) => `${where} ${callee}`);
    }),
  );
}

describe('determinism seams', () => {
  after(() => useEntropy(systemEntropy));

  it('actors/, the engine, the crypto, the wallet and webhooks read no real clock and draw no randomness but through Clock and Entropy', () => {
    assert.deepEqual(violations(['actors', 'src/engine', 'src/crypto', 'src/wallet', 'src/webhooks']), []);
  });

  it('finds a clock read, a random draw and a new Date() planted in a file, and not the same words in comments or strings', () => {
    const dir = mkdtempSync(join(tmpdir(), 'seams-'));
    const path = join(dir, 'planted.ts');
    writeFileSync(
      path,
      [
        "import { randomUUID } from 'node:crypto';",
        '// Date.now() in a comment',
        "const text = 'Math.random()';",
        'export const at = Date.now();',
        'export const id = randomUUID();',
        'export const when = new Date();',
        'export const fixed = new Date(0);',
      ].join('\n'),
    );
    assert.deepEqual(
      nondeterministicCalls(path).map(({ callee }) => callee),
      ['Date.now', 'randomUUID', 'new Date()'],
    );
  });

  it('the same seed gives the same ids; another seed other ids', () => {
    const ids = (seed: number): string[] => {
      useEntropy(seededEntropy(seed));
      return [newId('Customer', 1_700_000_000_000), newId('Customer', 1_700_000_000_000), newId('Transaction', 1_700_000_000_001)];
    };
    const first = ids(7);
    assert.deepEqual(ids(7), first);
    assert.notDeepEqual(ids(8), first);
    assert.ok(first[0]! < first[1]!, 'ids made in one millisecond still increase');
    // The UUID's last 12 hex digits are random bytes drawn for that id alone.
    assert.notEqual(first[0]!.slice(-12), first[1]!.slice(-12), 'each id draws random bytes of its own');
    assert.notEqual(first[1]!.slice(-12), first[2]!.slice(-12), 'each id draws random bytes of its own');
  });

  it('a seeded source gives the same bytes for a seed, and spreads them', () => {
    const bytes = (seed: number): Uint8Array => {
      const out = new Uint8Array(4096);
      seededEntropy(seed).fill(out);
      return out;
    };
    assert.deepEqual(bytes(1), bytes(1));
    assert.notDeepEqual(bytes(1), bytes(2));
    const counts = new Array<number>(256).fill(0);
    for (const b of bytes(3)) counts[b]!++;
    assert.ok(Math.max(...counts) < 40, `no byte value dominates (${Math.max(...counts)} of 4096)`);
  });
});
