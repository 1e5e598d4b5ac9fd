// A store bound to its data directory. At creation the store records an identity: a random
// store id, and that id sealed under the master key (the key check). credentials.json carries
// the id as `storeId`. So every file of a data directory that matters says which store it
// belongs to: data.mdb by its id, credentials.json by its storeId, the master key (file or
// MASTER_KEY) by opening the key check. A data.mdb, credentials.json or master key of another
// instance is refused at start with one line naming the files that disagree, before the store
// is opened (opening would replay the other store, run its timers and effects, and write).
//
// The identity lives in its own LMDB database (`identity`), beside the log and the snapshot:
// it is not domain state, and log truncation and snapshots must never touch it. It is read
// before opening from data.mdb's pages (store.ts readNamedValue), since opening LMDB writes.
//
// A store written before identities adopts one at its first start, after recovery: the master
// key must open the store's sealed webhook keys, and a credentials.json (which then has no
// storeId) must be for a platform of this store. The identity is written to the store
// (durably) before credentials.json gains storeId, so a crash in between leaves an
// identified store beside a credentials.json without storeId, which the next start settles
// the same way.
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { envIdOf } from '../actors/platform.js';
import type { World } from '../actors/world.js';
import { loadMasterKey, masterKeySource, readMasterKey, type MasterKey } from './crypto/master-key.js';
import { decodeStored, encodeStored, StoreCorruptError } from './engine/format.js';
import { DATA_FILE, readNamedValue } from './engine/store.js';
import type { Report } from './engine/report.js';
import { CREDENTIALS_FILE, writeCredentialsFile, type PlatformCredentials } from './platforms.js';

const IDENTITY_DB = 'identity';
const IDENTITY_KEY = Buffer.from('store', 'utf8');
/** The additional data of the key check: the sealed id opens as the key check and nothing else. */
const KEY_CHECK_AAD = 'store-identity';

/** Files of the data directory that do not belong to one store; the message names them. */
export class StoreIdentityError extends Error {
  constructor(disagreement: string) {
    super(`${disagreement}: refusing to start (put back the files of this instance, or move the directory aside for a fresh start)`);
    this.name = 'StoreIdentityError';
  }
}

interface StoredIdentity {
  storeId: string;
  /** The store id sealed under the master key. */
  keyCheck: Uint8Array;
}

/** credentials.json as found: a file written before identities has no storeId. */
interface CredentialsOnDisk {
  path: string;
  content: PlatformCredentials;
  storeId: string | undefined;
}

/** What the check before opening found, for `loadStoreMasterKey` and `recordStoreIdentity` after recovery. */
export interface IdentityBeforeOpen {
  /** The store's id; undefined for a store written before identities, or a new one. */
  storeId: string | undefined;
  credentials: CredentialsOnDisk | undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isToken(value: unknown): value is { tokenId: string; clientSecret: string } {
  return isRecord(value) && typeof value.tokenId === 'string' && typeof value.clientSecret === 'string';
}

function readStoredIdentity(dataDir: string): StoredIdentity | undefined {
  const stored = readNamedValue(dataDir, IDENTITY_DB, IDENTITY_KEY);
  if (stored === undefined) return undefined;
  const identity = decodeStored(stored, 'store identity');
  if (!isRecord(identity) || typeof identity.storeId !== 'string' || !(identity.keyCheck instanceof Uint8Array)) {
    throw new StoreCorruptError('store identity', 'not a store id with its key check');
  }
  return { storeId: identity.storeId, keyCheck: identity.keyCheck };
}

function readCredentials(dataDir: string): CredentialsOnDisk | undefined {
  const path = join(dataDir, CREDENTIALS_FILE);
  if (!existsSync(path)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new StoreIdentityError(`${path} is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (
    !isRecord(parsed) ||
    typeof parsed.platformId !== 'string' ||
    typeof parsed.baseUrl !== 'string' ||
    !isToken(parsed.sandbox) ||
    !isToken(parsed.production) ||
    (parsed.storeId !== undefined && typeof parsed.storeId !== 'string')
  ) {
    throw new StoreIdentityError(`${path} is not a credentials file of this service`);
  }
  const { platformId, baseUrl, sandbox, production, storeId } = parsed;
  return { path, content: { platformId, baseUrl, sandbox, production }, storeId };
}

/** The line's words for a master key that is neither in the environment nor in its file. */
function keyMissing(source: string): string {
  return `its master key is not here (${source} is missing and MASTER_KEY is unset)`;
}

function opensKeyCheck(key: MasterKey, identity: StoredIdentity): boolean {
  try {
    return Buffer.from(key.open(identity.keyCheck, KEY_CHECK_AAD)).toString('utf8') === identity.storeId;
  } catch {
    // AES-GCM refuses the tag: another key sealed it. That is the answer, not an error.
    return false;
  }
}

/**
 * Before the store is opened, reading only: refuses (StoreIdentityError) a data.mdb,
 * credentials.json or master key that belong to different stores, naming every one that
 * disagrees with data.mdb. A store without an identity beside a credentials.json that names
 * one is refused too: data.mdb was replaced by another (or older) store.
 */
export function checkStoreIdentity(dataDir: string, givenMasterKey: MasterKey | undefined): IdentityBeforeOpen {
  const dataPath = join(dataDir, DATA_FILE);
  const stored = readStoredIdentity(dataDir);
  const credentials = readCredentials(dataDir);
  if (stored === undefined) {
    if (credentials?.storeId !== undefined) {
      throw new StoreIdentityError(`${dataPath} has no store identity, but ${credentials.path} belongs to store ${credentials.storeId}`);
    }
    return { storeId: undefined, credentials };
  }
  const disagreements: string[] = [];
  if (credentials?.storeId !== undefined && credentials.storeId !== stored.storeId) {
    disagreements.push(`${credentials.path} belongs to store ${credentials.storeId}`);
  }
  const key = readMasterKey(dataDir, givenMasterKey);
  const source = masterKeySource(dataDir, givenMasterKey);
  if (key === undefined) disagreements.push(keyMissing(source));
  else if (!opensKeyCheck(key, stored)) disagreements.push(`${source} does not open it`);
  if (disagreements.length > 0) {
    throw new StoreIdentityError(`${dataPath} is store ${stored.storeId}, but ${disagreements.join(', and ')}`);
  }
  return { storeId: stored.storeId, credentials };
}

/**
 * After recovery: finishes the checks the one before opening could not make without the
 * store's records, then loads the master key (creating the key file only for a store with
 * no platform yet). Changes nothing when it refuses.
 */
export function loadStoreMasterKey(options: { dataDir: string; givenMasterKey: MasterKey | undefined; world: World; before: IdentityBeforeOpen }): MasterKey {
  const { dataDir, givenMasterKey, world, before } = options;
  const dataPath = join(dataDir, DATA_FILE);
  const source = masterKeySource(dataDir, givenMasterKey);
  const { credentials } = before;
  // A credentials.json written before identities names no store; its platform must be one of this store's.
  if (credentials !== undefined && credentials.storeId === undefined && world.envs.get(envIdOf(credentials.content.platformId, 'sandbox')) === undefined) {
    throw new StoreIdentityError(`${credentials.path} is for platform ${credentials.content.platformId}, which ${dataPath} does not hold`);
  }
  if (before.storeId === undefined) {
    // Adopting an identity: the key it binds must be the one the store's secrets are sealed under.
    const sealedByKey = world.envs.records.values().next().value;
    if (sealedByKey !== undefined) {
      const key = readMasterKey(dataDir, givenMasterKey);
      if (key === undefined) {
        throw new StoreIdentityError(`${dataPath} holds platforms, but ${keyMissing(source)}`);
      }
      try {
        key.open(sealedByKey.webhookPrivateKeySealed, `webhook-key ${sealedByKey.id}`);
      } catch {
        throw new StoreIdentityError(`${source} does not open ${dataPath} (the webhook key of ${sealedByKey.id})`);
      }
    }
  }
  return loadMasterKey(dataDir, givenMasterKey);
}

/**
 * After loadStoreMasterKey: a store without an identity (written before identities, or new)
 * records one, durably, and a credentials.json without storeId gains it. Returns the store id.
 */
export async function recordStoreIdentity(options: {
  dataDir: string;
  root: RootDatabase;
  masterKey: MasterKey;
  before: IdentityBeforeOpen;
  report: Report;
}): Promise<string> {
  const { dataDir, root, masterKey, before, report } = options;
  let storeId = before.storeId;
  if (storeId === undefined) {
    storeId = randomUUID();
    const identity = root.openDB<Buffer, Buffer>({ name: IDENTITY_DB, encoding: 'binary', keyEncoding: 'binary' });
    const keyCheck = masterKey.seal(Buffer.from(storeId, 'utf8'), KEY_CHECK_AAD);
    await identity.put(IDENTITY_KEY, encodeStored({ storeId, keyCheck } satisfies StoredIdentity));
    // Durable before credentials.json names it: a storeId that data.mdb lacks refuses every start.
    await root.flushed;
    report(`store identity: ${join(dataDir, DATA_FILE)} is store ${storeId}`, { event: 'store.identity.recorded', storeId });
  }
  const { credentials } = before;
  if (credentials !== undefined && credentials.storeId === undefined) {
    writeCredentialsFile(credentials.path, { ...credentials.content, storeId });
    report(`store identity: ${credentials.path} now names store ${storeId}`, { event: 'store.identity.credentials', storeId, path: credentials.path });
  }
  return storeId;
}
