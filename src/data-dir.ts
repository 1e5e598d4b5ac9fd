// Ownership of a data directory. One process writes a store: the service records its pid
// and address in `service.json`, and a second service, or an offline command, refuses to
// open a directory whose owner is alive. A file left by a killed process is taken over.
// The operator key lets commands reach a running service's operator endpoint.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const OWNER_FILE = 'service.json';
export const OPERATOR_KEY_FILE = 'operator.key';

export interface Owner {
  pid: number;
  /** The running service's origin, e.g. http://127.0.0.1:8080 */
  origin: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The live process that owns `dataDir`, if any. */
export function currentOwner(dataDir: string): Owner | undefined {
  const path = join(dataDir, OWNER_FILE);
  if (!existsSync(path)) return undefined;
  let owner: Owner;
  try {
    owner = JSON.parse(readFileSync(path, 'utf8')) as Owner;
  } catch {
    return undefined;
  }
  return owner.pid !== process.pid && alive(owner.pid) ? owner : undefined;
}

export function claimDataDir(dataDir: string): void {
  const owner = currentOwner(dataDir);
  if (owner !== undefined) throw new Error(`${dataDir} is in use by process ${owner.pid} (${owner.origin})`);
}

export function recordOwner(dataDir: string, origin: string): void {
  writeFileSync(join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, origin } satisfies Owner) + '\n', { mode: 0o600 });
}

export function releaseDataDir(dataDir: string): void {
  const path = join(dataDir, OWNER_FILE);
  if (!existsSync(path)) return;
  try {
    const owner = JSON.parse(readFileSync(path, 'utf8')) as Owner;
    if (owner.pid === process.pid) rmSync(path, { force: true });
  } catch {
    rmSync(path, { force: true });
  }
}

/** The operator key, created (0600) on first use. */
export function operatorKey(dataDir: string): string {
  const path = join(dataDir, OPERATOR_KEY_FILE);
  if (!existsSync(path)) writeFileSync(path, randomBytes(32).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
  return readFileSync(path, 'utf8').trim();
}
