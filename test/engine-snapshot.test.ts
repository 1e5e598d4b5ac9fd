// Incremental snapshots: one stored value per item, written only for what changed since the
// previous snapshot; removals stay removed; a snapshot that dies half-written changes
// nothing; idempotency records keep their eviction order; a store whose snapshot is in the
// old chunked layout still recovers and is rewritten in the new one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { open, type Database, type Key, type RootDatabase } from 'lmdb';
import { ManualClock } from '../src/engine/clock.js';
import type { Engine } from '../src/engine/engine.js';
import { encodeStored } from '../src/engine/format.js';
import { openStore } from '../src/engine/store.js';
import type { EngineEvent, IdempotencyRecord } from '../src/engine/state-machine.js';
import { add, drop, openCounterEngine, tempDir, type CounterEvent, type CounterTimer } from './support/counter-machine.js';

type CounterEngine = Engine<CounterEvent, CounterTimer>;

/** One entry adding `n` to each of `ids`. */
async function addAll(engine: CounterEngine, ids: readonly string[], n = 1): Promise<void> {
  await engine.exec([], () => ({ events: ids.map((id) => add(id, n)), reply: () => undefined }));
}

function names(count: number, prefix = 'c'): string[] {
  return Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
}

/** The snapshot's stored values (every key but the manifest). */
async function storedKeys(dir: string): Promise<Key[]> {
  const root = open({ path: dir });
  const image = root.openDB<Buffer, Key>({ name: 'image', encoding: 'binary' });
  const keys = [...image.getKeys()].filter(Array.isArray);
  await root.close();
  return keys;
}

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
    const a = await openCounterEngine(dir, clock);
    const all = names(3000);
    await addAll(a.engine, all);
    await a.engine.snapshot();
    assert.equal(a.engine.lastSnapshot?.written, 3000, 'the first snapshot writes everything');

    await addAll(a.engine, all.slice(0, 10), 5);
    await a.engine.exec([], () => ({ events: [drop(all[10]!), drop(all[11]!)], reply: () => undefined }));
    await a.engine.snapshot();
    assert.deepEqual(a.engine.lastSnapshot, { written: 12, bytes: a.engine.lastSnapshot?.bytes, removed: 14 }, '10 values and 2 tombstones; 12 older versions and the 2 tombstones removed');
    await a.engine.close();
    assert.equal((await storedKeys(dir)).length, 2998);

    const b = await openCounterEngine(dir, clock);
    assert.equal(b.counters.values.size, 2998);
    assert.equal(b.counters.values.has(all[10]!), false);
    assert.equal(b.counters.values.get(all[0]!), 6);
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
    const failing = failingImageStore();
    const a = await openCounterEngine(dir, clock, { openStore: failing.open });
    await addAll(a.engine, names(100, 'old'));
    await a.engine.snapshot();
    const all = names(5000);
    await addAll(a.engine, all);
    await a.engine.exec([], () => ({ events: [drop('old00000')], reply: () => undefined }));
    // Two chunks are durable when the third one fails.
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
    assert.equal((await storedKeys(dir)).length, 100, 'only the first snapshot is stored');
    rmSync(dir, { recursive: true, force: true });
  });

  it('after a failed snapshot the next one writes everything, and what the failed one wrote stops counting', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const failing = failingImageStore();
    const a = await openCounterEngine(dir, clock, { openStore: failing.open });
    await addAll(a.engine, names(100, 'old'));
    await a.engine.snapshot();
    await addAll(a.engine, names(5000));
    failing.failTransaction(3);
    await assert.rejects(a.engine.snapshot(), /the disk went away/);
    await a.engine.exec([], () => ({ events: [drop('old00001')], reply: () => undefined }));
    await a.engine.snapshot();
    assert.equal(a.engine.lastSnapshot?.written, 5099);
    const live = [...a.counters.values].sort();
    await a.engine.close();
    assert.equal((await storedKeys(dir)).length, 5099);

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
});

/** A store whose snapshot batches can be made to fail (as a crash would end them there). */
function failingImageStore(): { open: (dataDir: string) => RootDatabase; failTransaction: (nth: number) => void } {
  let countdown = 0;
  return {
    failTransaction: (nth) => {
      countdown = nth;
    },
    open: (dataDir) => {
      const root = openStore(dataDir);
      const openDB = root.openDB.bind(root) as (options: { name: string; encoding: 'binary' }) => Database<Buffer, Key>;
      Object.assign(root, {
        openDB: (options: { name: string; encoding: 'binary' }) => {
          const db = openDB(options);
          if (options.name !== 'image') return db;
          const batch = db.batch.bind(db);
          return Object.assign(db, {
            batch: (work: () => unknown): Promise<boolean> => {
              if (countdown > 0 && --countdown === 0) return Promise.reject(new Error('the disk went away'));
              return batch(work);
            },
          });
        },
      });
      return root;
    },
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
