// What the snapshot layouts share (snapshot.ts, and the older ones of snapshot-legacy.ts):
// the key spaces of items, the manifest each layout is read by, the check of an image
// against its manifest's counts, and removal in batches of one lmdb transaction each.
import { decodeStored, StoreCorruptError } from './format.js';
import type { SnapshotImage, SnapshotWrite } from './snapshot-image.js';
import type { Key, StorageTable } from './storage.js';

/** Key spaces: domain records, pending timers, pending effects, idempotency records by insertion number. */
export type Space = 'r' | 't' | 'e' | 'i';
export const SPACE_NAMES: Record<Space, string> = { r: 'record', t: 'timer', e: 'effect', i: 'idempotency record' };
export const MANIFEST_KEY = 'manifest';

/** Keys removed per lmdb batch. */
export const REMOVE_CHUNK = 1_000;

export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A layout's manifest, or undefined when it has none; one `valid` refuses is a damaged store. */
export function readManifest<M>(db: StorageTable<Key>, valid: (manifest: M) => boolean): M | undefined {
  const bytes = db.get(MANIFEST_KEY);
  if (bytes === undefined) return undefined;
  const manifest = decodeStored(bytes, 'snapshot manifest') as M;
  if (manifest === null || typeof manifest !== 'object' || !valid(manifest)) throw new StoreCorruptError('snapshot manifest', 'not a manifest');
  return manifest;
}

/** The manifest of a layout of generations from a base (chunks, and the per-item layout). */
export function isGenerationsManifest(m: { generation?: unknown; base?: unknown; seq?: unknown; counts?: unknown }): boolean {
  return typeof m.generation === 'number' && typeof m.base === 'number' && typeof m.seq === 'number' && m.counts !== undefined;
}

/** Refuses an image whose pending timers, effects or idempotency records are not the manifest's counts. */
export function checkCounts(where: string, image: Pick<SnapshotImage<unknown>, 'timers' | 'effects' | 'idempotency'>, counts: SnapshotWrite<unknown>['counts']): void {
  const check = (what: string, found: number, expected: number): void => {
    if (found !== expected) throw new StoreCorruptError(where, `${found} ${what}, manifest says ${expected}`);
  };
  check('timers', image.timers.length, counts.timers);
  check('effects', image.effects.length, counts.effects);
  check('idempotency records', image.idempotency.length, counts.idempotency);
}

/** Removes `keys` in batches of `perBatch`, in order, a batch per event-loop turn. */
export async function removeInBatches<K extends Key>(db: StorageTable<K>, keys: readonly K[], perBatch: number): Promise<number> {
  for (let i = 0; i < keys.length; i += perBatch) {
    const slice = keys.slice(i, i + perBatch);
    await db.batch(() => {
      for (const key of slice) db.remove(key);
    });
    await nextTurn();
  }
  return keys.length;
}

/** Removes a whole older layout, its manifest first (without it nothing there counts). */
export function removeLayout<K extends Key>(db: StorageTable<K | typeof MANIFEST_KEY>, perBatch: number): Promise<number> {
  const keys: Array<K | typeof MANIFEST_KEY> = [];
  if (db.get(MANIFEST_KEY) !== undefined) keys.push(MANIFEST_KEY);
  for (const key of db.getKeys()) if (Array.isArray(key)) keys.push(key);
  return removeInBatches(db, keys, perBatch);
}
