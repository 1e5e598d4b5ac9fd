// `npm run platform -- create [--uma-domain DOMAIN] [--regulated]`: makes a platform with
// its sandbox and production environments and prints its credentials, in the shape of
// credentials.json. The command takes the data directory's lock and opens the store itself;
// when a running service holds the lock, it asks that service through its operator endpoint
// (origin from service.json) instead, and is refused only if the service cannot be reached.
// DATA_DIR picks the store.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openServices, configFromEnv } from '../src/app.js';
import { DataDirInUseError, recordedOwner, OPERATOR_KEY_FILE, OWNER_FILE } from '../src/data-dir.js';
import { createPlatform, type NewPlatform, type PlatformCredentials } from '../src/platforms.js';
import type { Services } from '../src/services.js';

const USAGE = 'usage: npm run platform -- create [--uma-domain DOMAIN] [--regulated]';

function parseArgs(argv: string[]): NewPlatform {
  const [command, ...rest] = argv;
  if (command !== 'create') throw new Error(USAGE);
  const options: NewPlatform = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--regulated') options.isRegulatedFinancialInstitution = true;
    else if (arg === '--uma-domain' && rest[i + 1] !== undefined) options.umaDomain = rest[++i]!;
    else throw new Error(`unknown argument ${arg}\n${USAGE}`);
  }
  return options;
}

/** How long the running service may take to answer before the command gives up. */
const OPERATOR_TIMEOUT_MS = 30_000;

/** Asks the service holding the data directory's lock, at the origin it recorded in service.json. */
async function createThroughService(dataDir: string, options: NewPlatform, inUse: DataDirInUseError): Promise<PlatformCredentials> {
  const owner = recordedOwner(dataDir);
  if (owner === undefined) throw new Error(`${inUse.message}; it has not recorded an operator endpoint yet (${join(dataDir, OWNER_FILE)}): is it still starting?`);
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
    throw new Error(`${inUse.message}; its operator endpoint ${owner.origin} did not answer (${cause})`);
  }
  const text = await res.text();
  if (res.status !== 201) throw new Error(`the running service refused (${res.status}): ${text}`);
  return JSON.parse(text) as PlatformCredentials;
}

async function main(): Promise<void> {
  let options: NewPlatform;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
  const { dataDir } = configFromEnv(process.env);
  let services: Services;
  try {
    services = await openServices({ report: (line) => process.stderr.write(`${line}\n`) });
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    const credentials = await createThroughService(dataDir, options, err);
    process.stdout.write(JSON.stringify(credentials, null, 2) + '\n');
    return;
  }
  try {
    const credentials = await createPlatform(services, options);
    process.stdout.write(JSON.stringify(credentials, null, 2) + '\n');
  } finally {
    await services.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
