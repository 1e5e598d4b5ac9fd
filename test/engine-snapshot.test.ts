// Incremental snapshots: a generation of chunk values holding only what changed since the
// previous snapshot; removals stay removed; a snapshot that dies half-written changes
// nothing; increments that outgrow their base make the next snapshot full; idempotency
// records keep their eviction order; stores whose snapshot is in an older layout (per-item
// values, or whole images in chunks) still recover and are rewritten in the current one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { open, type Key } from 'lmdb';
import { ManualClock } from '../src/engine/clock.js';
import type { Engine } from '../src/engine/engine.js';
import type { SnapshotImage } from '../src/engine/snapshot.js';
import { encodeStored } from '../src/engine/format.js';
import { CHUNK_ITEMS, COMPACT_AFTER } from '../src/engine/snapshot.js';
import { LmdbStorage, openLmdbStorage, type Storage } from '../src/engine/storage.js';
import { openStore, SNAPSHOT_DIR } from '../src/engine/store.js';
import { storeWithPuts } from './support/log-store.js';
import type { EngineEvent, IdempotencyRecord } from '../src/engine/state-machine.js';
import { add, drop, openCounterEngine, tempDir, type CounterEvent, type CounterTimer, type OpenedCounters } from './support/counter-machine.js';

type CounterEngine = Engine<CounterEvent, CounterTimer>;

/** One entry adding `n` to each of `ids`. */
async function addAll(engine: CounterEngine, ids: readonly string[], n = 1): Promise<void> {
  await engine.exec([], () => ({ events: ids.map((id) => add(id, n)), reply: () => undefined }));
}

function names(count: number, prefix = 'c'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
}

/** The stored chunks per generation (every key but the manifest), e.g. {1: 12, 2: 1}. */
function storedChunks(dir: string): Promise<Record<number, number>> {
  return chunksPerGeneration(join(dir, SNAPSHOT_DIR));
}

/** The chunks per generation that a version before the snapshots' own environment left in the log's. */
function chunksInLogEnvironment(dir: string): Promise<Record<number, number>> {
  return chunksPerGeneration(dir);
}

async function chunksPerGeneration(environment: string): Promise<Record<number, number>> {
  const root = open({ path: environment });
  const db = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
  const chunks: Record<number, number> = {};
  for (const key of db.getKeys()) if (Array.isArray(key)) chunks[key[0] as number] = (chunks[key[0] as number] ?? 0) + 1;
  await root.close();
  return chunks;
}

const chunksOf = (items: number): number => Math.ceil(items / CHUNK_ITEMS);
/**
 * A work meter that stands still: the writer cuts chunks by CHUNK_ITEMS alone, never early
 * for its time slice, so the counts above hold on a machine however loaded (a slice cut
 * short under load once made 21 chunks of 5,099 items).
 */
const BY_ITEMS = { workMeter: (): number => 0 };

/** An idempotency record in its own entry (as the HTTP front adds it to a decision's entry). */
async function remember(engine: CounterEngine, key: string): Promise<void> {
  await engine.exec(
    [],
    () => ({ events: [], reply: () => undefined }),
    (_reply, at): EngineEvent<unknown>[] => [{ type: '$idempotency', record: { key, bodyHash: 'h', status: 201, body: key, at } }],
  );
}

describe('incremental snapshots', () => {
  it('writes only the records changed since the previous snapshot, and removals stay removed after recovery', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock, BY_ITEMS);
    const all = names(3000);
    await addAll(a.engine, all);
    await a.engine.snapshot();
    assert.equal(a.engine.lastSnapshot?.written, 3000, 'the first snapshot writes everything');

    await addAll(a.engine, all.slice(0, 10), 5);
    await a.engine.exec([], () => ({ events: [drop(all[10]!), drop(all[11]!)], reply: () => undefined }));
    // Changed again: written once, as it is after its last change.
    await addAll(a.engine, all.slice(0, 10), 5);
    await a.engine.snapshot();
    assert.deepEqual(a.engine.lastSnapshot, { written: 12, chunks: 1, bytes: a.engine.lastSnapshot?.bytes, removed: 0 }, '10 values and 2 removals in a generation of their own');
    await a.engine.close();
    assert.deepEqual(await storedChunks(dir), { 1: chunksOf(3000), 2: 1 });

    const b = await openCounterEngine(dir, clock);
    assert.equal(b.counters.values.size, 2998);
    assert.equal(b.counters.values.has(all[10]!), false);
    assert.equal(b.counters.values.get(all[0]!), 11);
    assert.equal(b.counters.values.get(all[12]!), 1);
    // Recovery is not a change: with nothing new, a snapshot after it writes nothing.
    await addAll(b.engine, ['late']);
    await b.engine.snapshot();
    assert.equal(b.engine.lastSnapshot?.written, 1);
    await b.engine.close();

    const c = await openCounterEngine(dir, clock);
    assert.deepEqual([...c.counters.values].sort(), [...b.counters.values].sort());
    await c.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a snapshot that dies half-written changes nothing: recovery is exact and removes what it wrote', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { a, failing } = await snapshottedOverFailingStore(dir, clock);
    const all = names(5000);
    await addAll(a.engine, all);
    await a.engine.exec([], () => ({ events: [drop('old00000')], reply: () => undefined }));
    // Two chunks are written when the third one fails.
    failing.failTransaction(3);
    await assert.rejects(a.engine.snapshot(), /the disk went away/);
    assert.equal(a.engine.snapshotSeq, 1);
    await addAll(a.engine, ['after']);
    const live = [...a.counters.values].sort();
    await a.engine.close();

    const b = await openCounterEngine(dir, clock);
    assert.deepEqual([...b.counters.values].sort(), live);
    const removed = b.reports.find((line) => line.startsWith('recovery: removed '));
    assert.ok(removed !== undefined && Number(removed.split(' ')[2]) > 0, b.reports.join('\n'));
    await b.engine.close();
    assert.deepEqual(await storedChunks(dir), { 1: chunksOf(100) }, 'only the first snapshot is stored');
    rmSync(dir, { recursive: true, force: true });
  });

  it('after a failed snapshot the next one writes everything, and what the failed one wrote stops counting', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { a, failing } = await snapshottedOverFailingStore(dir, clock);
    await addAll(a.engine, names(5000));
    failing.failTransaction(3);
    await assert.rejects(a.engine.snapshot(), /the disk went away/);
    await a.engine.exec([], () => ({ events: [drop('old00001')], reply: () => undefined }));
    await a.engine.snapshot();
    assert.equal(a.engine.lastSnapshot?.written, 5099);
    const live = [...a.counters.values].sort();
    await a.engine.close();
    assert.deepEqual(await storedChunks(dir), { 3: chunksOf(5099) }, 'the full snapshot removed the generations below it');

    const b = await openCounterEngine(dir, clock);
    assert.deepEqual([...b.counters.values].sort(), live);
    assert.equal(b.reports.some((line) => line.startsWith('recovery: removed ')), false, b.reports.join('\n'));
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps the idempotency records in their live order, so eviction after a restore is the same', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    for (const key of ['a', 'b', 'c']) await remember(a.engine, key);
    await a.engine.snapshot();
    clock.advance(1000);
    const again = clock.now();
    await remember(a.engine, 'a'); // set again: now the newest
    await a.engine.snapshot();
    assert.equal(a.engine.lastSnapshot?.written, 2, 'the new position of a and a tombstone for its old one');
    await a.engine.close();

    const b = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    const kept = (): string[] => ['a', 'b', 'c', 'd', 'e'].filter((key) => b.engine.idempotencyRecord(key) !== undefined);
    assert.deepEqual(kept(), ['a', 'b', 'c']);
    await remember(b.engine, 'd');
    assert.deepEqual(kept(), ['a', 'c', 'd'], 'b was the oldest');
    await remember(b.engine, 'e');
    assert.deepEqual(kept(), ['a', 'd', 'e']);
    assert.equal(b.engine.idempotencyRecord('a')?.at, again);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('recovers a store whose snapshot is in the old chunked layout, then rewrites it in the new one', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const all = names(3000);
    const a = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    await addAll(a.engine, all); // 1
    await remember(a.engine, 'k1'); // 2
    await remember(a.engine, 'k2'); // 3
    await addAll(a.engine, ['x']); // 4
    await addAll(a.engine, ['x']); // 5
    const idempotency = ['k1', 'k2'].map((key) => a.engine.idempotencyRecord(key)!);
    await a.engine.close();
    // What the previous version's snapshot at 3 looked like, with the log it covered trimmed.
    await writeLegacySnapshot(dir, 3, {
      records: all.map((id) => [id, 1]),
      timers: [],
      effects: [],
      idempotency,
    });

    const b = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    assert.equal(b.engine.snapshotSeq, 3);
    assert.equal(b.counters.values.size, 3001);
    assert.equal(b.counters.values.get('x'), 2);
    await remember(b.engine, 'k3');
    await remember(b.engine, 'k4');
    assert.deepEqual(['k1', 'k2', 'k3', 'k4'].map((key) => b.engine.idempotencyRecord(key) !== undefined), [false, true, true, true]);
    await b.engine.snapshot();
    assert.equal(b.engine.lastSnapshot?.written, 3001 + 3, 'the first snapshot in the new layout writes everything');
    const live = [...b.counters.values].sort();
    await b.engine.close();
    assert.deepEqual(await legacyKeys(dir), []);

    const c = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    assert.deepEqual([...c.counters.values].sort(), live);
    assert.deepEqual(['k2', 'k3', 'k4'].map((key) => c.engine.idempotencyRecord(key) !== undefined), [true, true, true]);
    await c.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('makes the next snapshot full once the increments since the last full one outgrow it, and removes the generations below it', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock, BY_ITEMS);
    const base = names(CHUNK_ITEMS);
    await addAll(a.engine, base);
    await a.engine.snapshot();
    // Each increment changes every counter: after COMPACT_AFTER + 1 of them they outgrow the base.
    for (let i = 0; i <= COMPACT_AFTER; i++) {
      await addAll(a.engine, base);
      await a.engine.snapshot();
      assert.match(a.reports.at(-1)!, /\(changes\)/);
    }
    await addAll(a.engine, base.slice(0, 1));
    await a.engine.snapshot();
    assert.match(a.reports.at(-1)!, /\(full\): 256 items/);
    const live = [...a.counters.values].sort();
    await a.engine.close();
    assert.deepEqual(await storedChunks(dir), { [COMPACT_AFTER + 3]: chunksOf(CHUNK_ITEMS) });
    const b = await openCounterEngine(dir, clock);
    assert.deepEqual([...b.counters.values].sort(), live);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('recovers a store whose snapshot is in the per-item layout, then rewrites it in chunks', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock, BY_ITEMS);
    await addAll(a.engine, ['a', 'b', 'c']); // 1
    await addAll(a.engine, ['a']); // 2
    await a.engine.close();
    // What the previous version's snapshot at 1 looked like: a value per item, and c removed
    // by a later generation; the log it covered trimmed.
    const root = open({ path: dir });
    const image = root.openDB<Buffer, Key>({ name: 'image', encoding: 'binary' });
    image.putSync(['r', 'a', 1], encodeStored(1));
    image.putSync(['r', 'b', 1], encodeStored(1));
    image.putSync(['r', 'c', 1], encodeStored(1));
    image.putSync(['r', 'c', 2], encodeStored(null));
    image.putSync(['r', 'z', 3], encodeStored(7)); // of an abandoned snapshot
    image.putSync('manifest', encodeStored({ generation: 2, base: 1, seq: 1, at: 0, counts: { timers: 0, effects: 0, idempotency: 0 } }));
    root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' }).removeSync(1);
    await root.close();

    const b = await openCounterEngine(dir, clock);
    assert.equal(b.engine.snapshotSeq, 1);
    assert.deepEqual([...b.counters.values].sort(), [['a', 2], ['b', 1]]);
    await addAll(b.engine, ['d']);
    await b.engine.snapshot();
    assert.equal(b.engine.lastSnapshot?.written, 3, 'the first snapshot in chunks writes everything');
    await b.engine.close();
    const again = open({ path: dir });
    assert.deepEqual([...again.openDB<Buffer, Key>({ name: 'image', encoding: 'binary' }).getKeys()], [], 'the per-item layout is gone');
    await again.close();

    const c = await openCounterEngine(dir, clock);
    assert.deepEqual([...c.counters.values].sort(), [['a', 2], ['b', 1], ['d', 1]]);
    await c.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
  it('recovers a store whose snapshot is in the log\'s environment (before snapshots had their own), then writes the next one in the snapshots\' environment', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    // The previous version: one environment, its snapshot chunks beside the log's values.
    const a = await openCounterEngine(dir, clock, { ...BY_ITEMS, openStorage: (path) => new LmdbStorage(openStore(path)) });
    const all = names(3000);
    await addAll(a.engine, all);
    await a.engine.snapshot();
    await addAll(a.engine, all.slice(0, 10), 5);
    await a.engine.exec([], () => ({ events: [drop(all[10]!)], reply: () => undefined }));
    await a.engine.snapshot();
    await addAll(a.engine, ['after']);
    const live = [...a.counters.values].sort();
    const snapshotSeq = a.engine.snapshotSeq;
    await a.engine.close();
    assert.deepEqual(await chunksInLogEnvironment(dir), { 1: chunksOf(3000), 2: 1 });
    assert.equal(existsSync(join(dir, SNAPSHOT_DIR)), false);

    const b = await openCounterEngine(dir, clock, BY_ITEMS);
    assert.equal(b.engine.snapshotSeq, snapshotSeq);
    assert.deepEqual([...b.counters.values].sort(), live);
    await b.engine.snapshot();
    assert.equal(b.engine.lastSnapshot?.written, live.length, 'the first snapshot in its own environment writes everything');
    await b.engine.close();
    assert.deepEqual(await storedChunks(dir), { 1: chunksOf(live.length) });
    assert.deepEqual(await chunksInLogEnvironment(dir), {}, 'the chunks in the log\'s environment are gone');

    const c = await openCounterEngine(dir, clock);
    assert.deepEqual([...c.counters.values].sort(), live);
    await c.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('recovers from an image its storage offers when it is newer than its own snapshot (another owner of the log wrote it), and its next snapshot is full', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock, BY_ITEMS);
    await addAll(a.engine, names(50));
    await a.engine.snapshot();
    await a.engine.close();
    // This copy stops here: its own snapshot is at entry 1.
    const behind = tempDir();
    cpSync(dir, behind, { recursive: true });

    const published: Array<SnapshotImage<CounterTimer>> = [];
    const b = await openCounterEngine(dir, clock, { ...BY_ITEMS, openStorage: lmdbStorageWith({ snapshotWritten: (_seq, image) => published.push(image() as SnapshotImage<CounterTimer>) }) });
    await addAll(b.engine, names(50).slice(0, 5), 2);
    await addAll(b.engine, ['new']);
    await b.engine.snapshot();
    assert.deepEqual(
      published.map((image) => image.seq),
      [3],
      'the storage is told of the snapshot, with its image',
    );
    const expected = [...b.counters.values].sort();
    await b.engine.close();

    const c = await openCounterEngine(behind, clock, { ...BY_ITEMS, openStorage: lmdbStorageWith({ offeredImage: published[0]! }) });
    assert.deepEqual([...c.counters.values].sort(), expected, 'the state of the base image, not of its own older snapshot');
    await addAll(c.engine, ['later']);
    assert.equal(c.engine.lastSeq, 4, 'the log goes on after the base image');
    await c.engine.snapshot();
    assert.equal(c.engine.lastSnapshot?.written, 52, 'its own snapshots never built on the base: the first after it is full');
    await c.engine.close();

    // A base older than its own snapshot is not used.
    const d = await openCounterEngine(behind, clock, { ...BY_ITEMS, openStorage: lmdbStorageWith({ offeredImage: published[0]! }) });
    assert.equal(d.counters.values.get('later'), 1);
    await d.engine.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(behind, { recursive: true, force: true });
  });
});

/** The LMDB store of a data directory, offering an image from outside it or told of each snapshot written. */
function lmdbStorageWith(hooks: Pick<Storage, 'offeredImage' | 'snapshotWritten'>): (dataDir: string) => Storage {
  return (dataDir) => {
    const lmdb = openLmdbStorage(dataDir);
    return { table: (name) => lmdb.table(name), snapshotTables: lmdb.snapshotTables, close: () => lmdb.close(), ...hooks };
  };
}

/**
 * A counter engine over a store whose snapshot writes fail when told to, its first snapshot
 * (of 100 counters, old00000 on) stored whole: a later one is the one that dies half-written.
 */
async function snapshottedOverFailingStore(dir: string, clock: ManualClock): Promise<{ a: OpenedCounters; failing: ReturnType<typeof failingImageStore> }> {
  const failing = failingImageStore();
  const a = await openCounterEngine(dir, clock, { ...BY_ITEMS, openStorage: failing.open });
  await addAll(a.engine, names(100, 'old'));
  await a.engine.snapshot();
  return { a, failing };
}

/** A store whose snapshot chunk writes can be made to fail (as a crash would end them there). */
function failingImageStore(): { open: (dataDir: string) => Storage; failTransaction: (nth: number) => void } {
  let countdown = 0;
  return {
    failTransaction: (nth) => {
      countdown = nth;
    },
    open: storeWithPuts('snapshots', (table, key, value) => {
      if (Array.isArray(key) && countdown > 0 && --countdown === 0) return Promise.reject(new Error('the disk went away'));
      return table.put(key, value);
    }),
  };
}

/** The previous version's snapshot layout: 2,000 items a chunk, under [generation, section, chunk]. */
async function writeLegacySnapshot(
  dir: string,
  seq: number,
  sections: { records: Array<[string, number]>; timers: unknown[]; effects: unknown[]; idempotency: IdempotencyRecord[] },
): Promise<void> {
  const root = open({ path: dir });
  const db = root.openDB<Buffer, Key>({ name: 'snapshot', encoding: 'binary' });
  const counts: Record<string, { chunks: number; items: number }> = {};
  for (const [section, items] of Object.entries(sections)) {
    const chunks = Math.ceil(items.length / 2000);
    for (let i = 0; i < chunks; i++) db.putSync([1, section, i], encodeStored(items.slice(i * 2000, (i + 1) * 2000)));
    counts[section] = { chunks, items: items.length };
  }
  db.putSync('manifest', encodeStored({ generation: 1, seq, at: 0, sections: counts }));
  const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
  for (let key = 1; key <= seq; key++) log.removeSync(key);
  await root.close();
}

async function legacyKeys(dir: string): Promise<Key[]> {
  const root = open({ path: dir });
  const keys = [...root.openDB<Buffer, Key>({ name: 'snapshot', encoding: 'binary' }).getKeys()];
  await root.close();
  return keys;
}
