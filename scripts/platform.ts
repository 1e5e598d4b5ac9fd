// `npm run platform -- create [--uma-domain DOMAIN] [--regulated]`: makes a platform with
// its sandbox and production environments and prints its credentials, in the shape of
// credentials.json. A running service (the data directory's owner) is asked through its
// operator endpoint; otherwise the store is opened directly. DATA_DIR picks the store.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openServices, configFromEnv } from '../src/app.js';
import { currentOwner, OPERATOR_KEY_FILE } from '../src/data-dir.js';
import { createPlatform, type NewPlatform } from '../src/platforms.js';

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

async function main(): Promise<void> {
  let options: NewPlatform;
  try {
    options = parseArgs(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(2);
  }
  const { dataDir } = configFromEnv(process.env);
  const owner = currentOwner(dataDir);
  if (owner !== undefined) {
    const key = readFileSync(join(dataDir, OPERATOR_KEY_FILE), 'utf8').trim();
    const res = await fetch(`${owner.origin}/_operator/platforms`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(options),
    });
    const text = await res.text();
    if (res.status !== 201) throw new Error(`the running service refused (${res.status}): ${text}`);
    process.stdout.write(JSON.stringify(JSON.parse(text), null, 2) + '\n');
    return;
  }
  const services = await openServices({ report: (line) => process.stderr.write(`${line}\n`) });
  try {
    const credentials = await createPlatform(services, options);
    process.stdout.write(JSON.stringify(credentials, null, 2) + '\n');
  } finally {
    await services.engine.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
