#!/usr/bin/env node
// `payments-platform create [--uma-domain DOMAIN] [--regulated] [--data DIR]`: makes a platform
// with its sandbox and production environments and prints its credentials, in the shape of
// credentials.json, as the one JSON document on stdout. The command takes the data
// directory's lock and opens the store itself; when a running service holds the lock, it asks
// that service through its operator endpoint (origin from service.json) instead, and is
// refused only if the service cannot be reached.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseCommandLine, UsageError } from './cli.js';
import { openServices } from '../src/app.js';
import { configFromEnv } from '../src/config.js';
import { DataDirInUseError, recordedOwner, OPERATOR_KEY_FILE, OWNER_FILE } from '../src/data-dir.js';
import { createPlatform, type NewPlatform, type PlatformCredentials } from '../src/platforms.js';
import type { Services } from '../src/services.js';

const USAGE = `Usage: payments-platform create [--uma-domain DOMAIN] [--regulated] [--data DIR]

Makes a platform with its sandbox and production environments and prints its credentials
as JSON on stdout, in the shape of credentials.json: {platformId, baseUrl, sandbox:
{tokenId, clientSecret}, production: {tokenId, clientSecret}}. If a service owns the data
directory the command asks it (its operator endpoint); otherwise it opens the store itself.

Options:
  --uma-domain DOMAIN   the platform's UMA domain
  --regulated           the platform is a regulated financial institution
  --data DIR            the data directory (default: $DATA_DIR, else ./data/db)
  -h, --help            this text

Exit status: 0 created, 1 failed (the store or the running service refused), 2 usage error.`;

interface Invocation {
  options: NewPlatform;
  /** --data, else DATA_DIR (configFromEnv) decides. */
  dataDir: string | undefined;
}

function parse(argv: string[]): Invocation | 'help' {
  const { values, positionals } = parseCommandLine({
    args: argv,
    allowPositionals: true,
    options: {
      'uma-domain': { type: 'string' },
      regulated: { type: 'boolean' },
      data: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return 'help';
  const [command, ...extra] = positionals;
  if (command === undefined) throw new UsageError('no command given');
  if (command !== 'create') throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  if (extra.length > 0) throw new UsageError(`create takes no arguments, got ${JSON.stringify(extra.join(' '))}`);
  const options: NewPlatform = {};
  if (values['uma-domain'] !== undefined) options.umaDomain = values['uma-domain'];
  if (values.regulated === true) options.isRegulatedFinancialInstitution = true;
  return { options, dataDir: values.data === undefined ? undefined : resolve(values.data) };
}

/** How long the running service may take to answer before the command gives up. */
const OPERATOR_TIMEOUT_MS = 30_000;

/** Asks the service holding the data directory's lock, at the origin it recorded in service.json. */
async function createThroughService(dataDir: string, options: NewPlatform, why: string): Promise<PlatformCredentials> {
  const owner = recordedOwner(dataDir);
  if (owner === undefined) throw new Error(`${why}; it has not recorded an operator endpoint yet (${join(dataDir, OWNER_FILE)}): is it still starting?`);
  const key = readFileSync(join(dataDir, OPERATOR_KEY_FILE), 'utf8').trim();
  let res: Response;
  try {
    res = await fetch(`${owner.origin}/_operator/platforms`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(options),
      signal: AbortSignal.timeout(OPERATOR_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new Error(`${why}; its operator endpoint ${owner.origin} did not answer (${cause})`);
  }
  const text = await res.text();
  if (res.status !== 201) throw new Error(`the running service refused (${res.status}): ${text}`);
  return JSON.parse(text) as PlatformCredentials;
}

async function main(): Promise<number> {
  let invocation: Invocation | 'help';
  try {
    invocation = parse(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`payments-platform: ${err.message}\nRun "payments-platform --help" for usage.\n`);
    return 2;
  }
  if (invocation === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  const { options } = invocation;
  const config = configFromEnv(process.env, { dataDir: invocation.dataDir });
  const { dataDir, cluster } = config;
  if (cluster !== undefined) {
    // A cluster's platforms are in its replicated directory: only a running node can add one.
    const owner = recordedOwner(dataDir);
    if (owner === undefined) throw new Error(`NATS_URL is set: ask a running cluster node (--data names its DATA_DIR); ${dataDir} has none running`);
    const credentials = await createThroughService(dataDir, options, `${dataDir} belongs to a cluster node`);
    process.stdout.write(JSON.stringify(credentials, null, 2) + '\n');
    return 0;
  }
  let services: Services;
  try {
    services = await openServices({ config, report: (line) => process.stderr.write(`${line}\n`) });
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    const credentials = await createThroughService(dataDir, options, err.message);
    process.stdout.write(JSON.stringify(credentials, null, 2) + '\n');
    return 0;
  }
  try {
    const credentials = await createPlatform(services, options);
    process.stdout.write(JSON.stringify(credentials, null, 2) + '\n');
    return 0;
  } finally {
    await services.close();
  }
}

main().then(
  (status) => {
    process.exitCode = status;
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    // As before: a failure ends the command even if something it opened is still winding down.
    process.exit(1);
  },
);
