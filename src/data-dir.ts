// Ownership of a data directory. One process writes a store: the service and the offline
// platform command alike hold an OS lock on the directory for as long as they run, and a
// second writer is refused. `service.json` only tells commands where the running service
// listens (its origin), so they can ask it through its operator endpoint; it decides nothing.
// The operator key lets commands reach that endpoint.
//
// The lock is an abstract Unix socket (Linux) whose name is derived from the directory's
// real path: the kernel frees it when the process dies, kill -9 included, and a second
// bind fails with EADDRINUSE, so no stale state can block a restart and no pid is trusted
// (a pid may have been reused by an unrelated process). flock(2) would also do, but Node has
// no binding for it, and an addon means a compiler and Node's headers (fetched from
// nodejs.org unless preinstalled) at every `npm install`; this needs nothing. Limits: abstract
// sockets are Linux only (elsewhere the service refuses to start, saying so), and they belong
// to a network namespace, so two containers with separate network namespaces sharing one
// volume would not see each other's lock.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { DATA_FILE, inspectStore } from './engine/store.js';
import { MASTER_KEY_FILE } from './crypto/master-key.js';
import { CREDENTIALS_FILE } from './platforms.js';

export const OWNER_FILE = 'service.json';
export const OPERATOR_KEY_FILE = 'operator.key';

export interface Owner {
  pid: number;
  /** The running service's origin, e.g. http://127.0.0.1:8080 */
  origin: string;
}

export class DataDirInUseError extends Error {
  constructor(readonly dataDir: string) {
    super(`${dataDir} is in use by another process (one writer per data directory); stop it first`);
    this.name = 'DataDirInUseError';
  }
}

/** The directory held a store that is no longer there (see checkStoreBeforeOpen). */
export class StoreGoneError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreGoneError';
  }
}

/** Group or others may enter or read the data directory, which holds every customer's data, the keys and the credentials. */
export class DataDirExposedError extends Error {
  constructor(readonly dataDir: string, mode: number) {
    super(
      `${dataDir} is open to group or others (mode ${mode.toString(8).padStart(4, '0')}), but it holds the store, its keys and credentials: ` +
        `run chmod -R go-rwx ${shellWord(dataDir)}`,
    );
    this.name = 'DataDirExposedError';
  }
}

/** A path as one shell word, quoted only when it needs to be (the refusal's fix is pasted into a shell). */
function shellWord(path: string): string {
  return /^[\w@%+=:,./-]+$/.test(path) ? path : `'${path.replace(/'/g, `'\\''`)}'`;
}

/**
 * Creates the data directory 0700 when it is missing, and refuses one that group or others
 * may enter (as PostgreSQL does): the files in it are 0600, but one written before they were,
 * or by another tool, would be readable through it. Runs before anything else is created.
 */
export function ensurePrivateDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const mode = statSync(dataDir).mode & 0o777;
  if ((mode & 0o077) !== 0) throw new DataDirExposedError(dataDir, mode);
}

export interface DataDirLock {
  readonly dataDir: string;
  /** Frees the lock; another process may then open the directory. */
  release(): Promise<void>;
}

/** The abstract socket name for a directory: same directory, same name, however it is spelled. */
function lockName(dataDir: string): string {
  const digest = createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 32);
  return `\0payments-wallet-data-dir-${digest}`;
}

/** This system cannot hold the data directory's lock (it is not Linux): nothing was created. */
export class LockUnsupportedError extends Error {
  constructor(platform: string) {
    super(`the data directory lock needs Linux (abstract Unix sockets); this is ${platform}: run the service on Linux, in a Linux container or under WSL 2`);
    this.name = 'LockUnsupportedError';
  }
}

/** Refuses, before anything is created, a system where the lock cannot be held. */
export function checkLockSupported(platform: NodeJS.Platform = process.platform): void {
  if (platform !== 'linux') throw new LockUnsupportedError(platform);
}

/** Takes the directory's lock (it must exist), or rejects with DataDirInUseError. */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  checkLockSupported();
  const server: Server = createServer();
  // Nobody talks to the lock: a connection is closed at once, and none wait.
  server.maxConnections = 0;
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      reject(err.code === 'EADDRINUSE' ? new DataDirInUseError(dataDir) : err);
    });
    server.listen({ path: lockName(dataDir), backlog: 1 }, () => {
      // Held for the life of the process, but it must not keep the process alive.
      server.unref();
      // Once bound, the only errors are failed accepts (EMFILE from a stray client): the
      // socket stays bound and the lock held, so they change nothing and must not crash.
      server.removeAllListeners('error');
      server.on('error', () => undefined);
      let released: Promise<void> | undefined;
      resolve({
        dataDir,
        release: () => {
          released ??= new Promise<void>((done, fail) => server.close((err) => (err === undefined ? done() : fail(err))));
          return released;
        },
      });
    });
  });
}

/**
 * Refuses, changing nothing, a directory that once held a store (credentials or a master
 * key file are there) whose `data.mdb` is now missing or zero bytes: opening it would
 * start a new platform and overwrite credentials.json. A valid store with no records is
 * refused only when credentials.json exists: a master key alone is also what a first start
 * leaves when it stops before the default platform is committed. Throws StoreDamagedError
 * (store.ts) for a truncated data.mdb.
 */
export function checkStoreBeforeOpen(dataDir: string): void {
  const contents = inspectStore(dataDir);
  const credentials = existsSync(join(dataDir, CREDENTIALS_FILE));
  const masterKey = existsSync(join(dataDir, MASTER_KEY_FILE));
  const dataPath = join(dataDir, DATA_FILE);
  const evidence = credentials ? join(dataDir, CREDENTIALS_FILE) : join(dataDir, MASTER_KEY_FILE);
  const refuse = (state: string): never => {
    throw new StoreGoneError(
      `${dataPath} ${state}, but ${evidence} exists: this directory held a store that is gone; ` +
        'refusing to start a new one over it (restore data.mdb from a backup, or move the directory aside for a fresh start)',
    );
  };
  if (contents.kind === 'missing' && (credentials || masterKey)) refuse('is missing');
  if (contents.kind === 'zero-length' && (credentials || masterKey)) refuse('is empty (0 bytes)');
  if (contents.kind === 'empty' && credentials) refuse('holds no records');
}

/**
 * After recovery: a store holding no platform beside credentials.json is not the store those
 * credentials belong to (data.mdb was replaced by a fresh one); starting would overwrite them.
 */
export function checkRecoveredStore(dataDir: string, platforms: number): void {
  const credentials = join(dataDir, CREDENTIALS_FILE);
  if (platforms === 0 && existsSync(credentials)) {
    throw new StoreGoneError(
      `${join(dataDir, DATA_FILE)} holds no platform, but ${credentials} exists: this directory held a store that is gone; ` +
        'refusing to start a new one over it (restore data.mdb from a backup, or move the directory aside for a fresh start)',
    );
  }
}

/** Where the service owning `dataDir` listens, as it recorded it; undefined if never recorded. */
export function recordedOwner(dataDir: string): Owner | undefined {
  const path = join(dataDir, OWNER_FILE);
  if (!existsSync(path)) return undefined;
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Owner;
  } catch {
    return undefined;
  }
}

export function recordOwner(dataDir: string, origin: string): void {
  writeFileSync(join(dataDir, OWNER_FILE), JSON.stringify({ pid: process.pid, origin } satisfies Owner) + '\n', { mode: 0o600 });
}

/**
 * Removes service.json. Only the lock holder calls it (on opening and on closing): whatever
 * the file says then is stale or its own, and a command must not be sent to a dead origin.
 */
export function forgetOwner(dataDir: string): void {
  rmSync(join(dataDir, OWNER_FILE), { force: true });
}

/** The operator key, created (0600) on first use. */
export function operatorKey(dataDir: string): string {
  const path = join(dataDir, OPERATOR_KEY_FILE);
  if (!existsSync(path)) writeFileSync(path, randomBytes(32).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
  return readFileSync(path, 'utf8').trim();
}
