// Strict configuration (issue 17): every setting is checked before anything is opened or
// written; a bad one stops the start with one line naming the variable, the value and what
// is accepted, exit status 2 and no stack trace. And the settings are read in one place
// (issue 37): below the hosts nothing reads the environment; the scan uses the TypeScript
// compiler's parser, so comments and strings do not count.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { configFromEnv, ConfigError } from '../src/config.js';
import { killAll, spawnRefusedService } from './support/service-process.js';
import { sourcesUnder } from './support/imports.js';

// Compiled tests run from dist/test/, sources are two levels up.
const repoDir = fileURLToPath(new URL('../../', import.meta.url));

/** The files that may read the environment: the settings' parser, and main.ts, which hands it the process's. scripts/ are hosts too. */
const READS_ENVIRONMENT = ['src/config.ts', 'src/main.ts'];

/** `line: what` for every read of the process's environment in a source: `process.env` in any form, an `env` taken from node:process, a `NodeJS.ProcessEnv`. */
function environmentReads(path: string): string[] {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const at = (node: ts.Node, what: string): number => found.push(`${file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1}: ${what}`);
  const isProcess = (node: ts.Node): boolean => (ts.isIdentifier(node) && node.text === 'process') || (ts.isPropertyAccessExpression(node) && node.name.text === 'process');
  const visit = (node: ts.Node): void => {
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'env' && isProcess(node.expression)) at(node, 'process.env');
    if (ts.isElementAccessExpression(node) && isProcess(node.expression) && ts.isStringLiteralLike(node.argumentExpression) && node.argumentExpression.text === 'env') at(node, 'process.env');
    if (ts.isVariableDeclaration(node) && node.initializer !== undefined && isProcess(node.initializer) && ts.isObjectBindingPattern(node.name)) {
      if (node.name.elements.some((element) => (element.propertyName ?? element.name).getText(file) === 'env')) at(node, 'process.env');
    }
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && ['process', 'node:process'].includes(node.moduleSpecifier.text)) {
      const bindings = node.importClause?.namedBindings;
      if (bindings !== undefined && ts.isNamedImports(bindings) && bindings.elements.some((element) => (element.propertyName ?? element.name).text === 'env')) at(node, 'process.env');
    }
    if (ts.isTypeReferenceNode(node) && node.typeName.getText(file) === 'NodeJS.ProcessEnv') at(node, 'NodeJS.ProcessEnv');
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

describe('settings from the environment', () => {
  const parent = mkdtempSync(join(tmpdir(), 'config-env-'));
  after(async () => {
    await killAll();
    rmSync(parent, { recursive: true, force: true });
  });

  it('a bad value is a ConfigError naming the variable and the value', () => {
    const cases: Array<[string, string]> = [
      ['PORT', '70000'],
      ['PORT', '-1'],
      ['PORT', '80.5'],
      ['PORT', '8080abc'],
      ['PORT', '1e3'],
      ['SNAPSHOT_EVERY_SECONDS', '0'],
      ['SNAPSHOT_EVERY_ENTRIES', '0'],
      ['MAX_PENDING_WEBHOOKS', '0'],
      ['DRAIN_TIMEOUT_SECONDS', 'ten'],
      ['HOST', 'not a host!'],
      ['HOST', 'exa_mple.com'],
      // All digits and dots, so an IPv4 address or nothing: no host name ends in a number.
      ['HOST', '999.1.1.1'],
      ['HOST', '10.0.0.256'],
      ['LOG_LEVEL', 'verbose'],
      ['METRICS', 'false'],
    ];
    for (const [name, value] of cases) {
      assert.throws(
        () => configFromEnv({ [name]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.startsWith(`${name}=${value} is not accepted: it must be `),
        `${name}=${value}`,
      );
    }
    // Cluster settings are read only with NATS_URL.
    for (const value of ['0', '1025', 'sixteen', '-4']) {
      assert.throws(
        () => configFromEnv({ NATS_URL: 'nats://127.0.0.1:4222', CLUSTER_SHARDS: value }),
        (err: unknown) => err instanceof ConfigError && err.message === `CLUSTER_SHARDS=${value} is not accepted: it must be an integer from 1 to 1024`,
        `CLUSTER_SHARDS=${value}`,
      );
    }
  });

  it('the edges of each range, and host names and addresses, are accepted', () => {
    assert.equal(configFromEnv({ PORT: '0' }).port, 0);
    assert.equal(configFromEnv({ PORT: '65535' }).port, 65_535);
    assert.equal(configFromEnv({ SNAPSHOT_EVERY_SECONDS: '1' }).snapshotEveryMs, 1_000);
    assert.equal(configFromEnv({ DRAIN_TIMEOUT_SECONDS: '0' }).drainTimeoutMs, 0);
    for (const host of ['localhost', '0.0.0.0', '::1', 'api.example.com', '1st.example.com', '10.0.0.255']) assert.equal(configFromEnv({ HOST: host }).host, host);
    assert.equal(configFromEnv({}).port, 8080);
    assert.equal(configFromEnv({}).logLevel, 'info');
    assert.equal(configFromEnv({ LOG_LEVEL: 'debug' }).logLevel, 'debug');
    assert.equal(configFromEnv({}).metrics, true);
    assert.equal(configFromEnv({ METRICS: 'off' }).metrics, false);
    const nats = { NATS_URL: 'nats://127.0.0.1:4222' };
    assert.equal(configFromEnv({ ...nats, CLUSTER_SHARDS: '1' }).cluster?.shards, 1);
    assert.equal(configFromEnv({ ...nats, CLUSTER_SHARDS: '1024' }).cluster?.shards, 1_024);
    assert.equal(configFromEnv(nats).cluster?.shards, undefined, "unset: the directory's recorded count, or the default for the first node");
  });

  it('a MASTER_KEY of the wrong form is refused before anything is written, without echoing the secret', async () => {
    const secret = 'not-hex-but-secret-material-0123456789';
    assert.throws(() => configFromEnv({ MASTER_KEY: secret }), (err: unknown) => err instanceof ConfigError && !err.message.includes(secret) && err.message.startsWith('MASTER_KEY ('));
    const dataDir = join(parent, 'never-MASTER_KEY');
    const refused = await spawnRefusedService(dataDir, { MASTER_KEY: secret });
    assert.equal(refused.code, 2, refused.stderr);
    const lines = refused.stderr.trim().split('\n');
    assert.deepEqual(lines, [`cannot start: MASTER_KEY (${secret.length} characters, not shown) is not accepted: it must be 64 hex characters (32 bytes)`]);
    assert.equal(existsSync(dataDir), false, 'the data directory was created');
  });

  it('the service refuses to start with one line, exit status 2, and writes nothing', async () => {
    for (const [name, value] of [
      ['PORT', '70000'],
      ['HOST', 'not a host!'],
      ['HOST', '999.1.1.1'],
      ['SNAPSHOT_EVERY_SECONDS', '0'],
      ['LOG_LEVEL', 'loud'],
    ] as const) {
      const dataDir = join(parent, `never-${name}`);
      const refused = await spawnRefusedService(dataDir, { [name]: value });
      assert.equal(refused.code, 2, refused.stderr);
      const lines = refused.stderr.trim().split('\n');
      assert.equal(lines.length, 1, refused.stderr);
      assert.match(lines[0]!, new RegExp(`^cannot start: ${name}=${value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not accepted: it must be `));
      assert.equal(existsSync(dataDir), false, `${name}: the data directory was created`);
    }
  });

  it('outside src/config.ts, src/main.ts and scripts/, nothing in src/ or actors/ reads the environment or takes a NodeJS.ProcessEnv', () => {
    const reads = ['src', 'actors'].flatMap((dir) =>
      sourcesUnder(join(repoDir, dir))
        .map((file) => `${dir}/${file}`)
        .filter((path) => !READS_ENVIRONMENT.includes(path))
        .flatMap((path) => environmentReads(join(repoDir, path)).map((read) => `${path}:${read}`)),
    );
    assert.deepEqual(reads, []);
    assert.deepEqual(
      READS_ENVIRONMENT.map((path) => environmentReads(join(repoDir, path)).length > 0),
      [true, true],
      'the scan finds the reads that are there',
    );
  });

  it('the scan finds every form of reading the environment, and not the words in comments or strings', () => {
    const path = join(parent, 'planted.ts');
    writeFileSync(
      path,
      [
        "import { env as given } from 'node:process';",
        '// process.env.PORT in a comment',
        "const text = 'process.env.PORT';",
        'export const port = process.env.PORT;',
        "export const host = process['env'].HOST;",
        'const { env } = process;',
        'export const dir = globalThis.process.env.DATA_DIR;',
        'export function settings(variables: NodeJS.ProcessEnv): string | undefined { return variables.HOST; }',
        'export const environment = { env: { PORT: text } }.env;',
      ].join('\n'),
    );
    assert.deepEqual(environmentReads(path), ['1: process.env', '4: process.env', '5: process.env', '6: process.env', '7: process.env', '8: NodeJS.ProcessEnv']);
  });

  it('an address the service cannot listen on is refused with one line naming it, before the store is opened', async () => {
    // 192.0.2.1 (TEST-NET-1, RFC 5737) is a well-formed address no interface here has.
    const dataDir = join(parent, 'never-listened');
    const refused = await spawnRefusedService(dataDir, { HOST: '192.0.2.1' });
    assert.equal(refused.code, 1, refused.stderr);
    assert.deepEqual(refused.stderr.trim().split('\n'), ['cannot start: cannot listen on 192.0.2.1:0: no interface of this machine has that address, or the port is taken']);
    assert.equal(existsSync(join(dataDir, 'data.mdb')), false, 'the store was opened');
  });
});
