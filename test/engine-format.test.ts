// The stored form: every log entry and snapshot value is versioned and checksummed and
// verified on replay; gaps are refused; a snapshot abandoned by a crash is cleaned up.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { open, type Key, type RootDatabase } from 'lmdb';
import { Packr } from 'msgpackr';
import { ManualClock } from '../src/engine/clock.js';
import { decodeStored, encodeStored } from '../src/engine/format.js';
import { SNAPSHOT_DIR } from '../src/engine/store.js';
import { add, openCounterEngine, tempDir } from './support/counter-machine.js';

/** Writes `entries` single-counter entries (and optionally a snapshot after `snapshotAfter`). */
async function storeWith(dir: string, clock: ManualClock, entries: number, snapshotAfter?: number): Promise<void> {
  const { engine } = await openCounterEngine(dir, clock);
  for (let i = 1; i <= entries; i++) {
    await engine.exec(['name'], () => ({ events: [add('name', 1)], reply: () => undefined }));
    if (i === snapshotAfter) await engine.snapshot();
  }
  await engine.close();
}

/** Opens the store directly, as an operator's tool (or a bad disk) would. */
async function withStore(dir: string, change: (root: RootDatabase) => void): Promise<void> {
  const root = open({ path: dir });
  change(root);
  await root.close();
}

/** As withStore, on the snapshots' own environment (store.ts SNAPSHOT_DIR). */
function withSnapshotStore(dir: string, change: (root: RootDatabase) => void): Promise<void> {
  return withStore(join(dir, SNAPSHOT_DIR), change);
}

/** A log value as format version 1 wrote it: one `{seq, at, events}` entry in plain msgpack. */
function versionOneEntry(seq: number, at: number, events: unknown[]): Buffer {
  const payload = new Packr({ useRecords: false }).pack({ seq, at, events });
  const header = Buffer.alloc(5);
  header[0] = 1;
  header.writeUInt32LE(crc32(payload), 1);
  return Buffer.concat([header, payload]);
}

function logKeys(dir: string): Promise<number[]> {
  const keys: number[] = [];
  return withStore(dir, (root) => {
    for (const key of root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' }).getKeys()) keys.push(key);
  }).then(() => keys);
}

function flipByte(bytes: Buffer, index: number): Buffer {
  const copy = Buffer.from(bytes);
  copy[index] = copy[index]! ^ 0x01;
  return copy;
}

describe('engine store format', () => {
  it('writes the entries of one event-loop turn as one log value, and replays each of them', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock);
    await Promise.all(['a', 'b', 'c', 'a'].map((id) => a.engine.exec([id], () => ({ events: [add(id, 1)], reply: () => undefined }))));
    await a.engine.exec(['b'], () => ({ events: [add('b', 5)], reply: () => undefined }));
    await a.engine.close();
    assert.deepEqual(await logKeys(dir), [1, 5]);

    const b = await openCounterEngine(dir, clock);
    assert.deepEqual(Object.fromEntries(b.counters.values), { a: 2, b: 6, c: 1 });
    assert.equal(b.engine.lastSeq, 5);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replays a log written one entry per value in format version 1, then goes on in the current format', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await withStore(dir, (root) => {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      log.putSync(1, versionOneEntry(1, 1000, [add('x', 2)]));
      log.putSync(2, versionOneEntry(2, 1001, [add('y', 300), add('x', 100)]));
    });
    const a = await openCounterEngine(dir, clock);
    assert.deepEqual(Object.fromEntries(a.counters.values), { x: 102, y: 300 });
    await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    assert.equal(a.engine.lastSeq, 3);
    await a.engine.close();

    const b = await openCounterEngine(dir, clock);
    assert.deepEqual(Object.fromEntries(b.counters.values), { x: 103, y: 300 });
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('names the first entry of a damaged group', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock);
    await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await Promise.all([1, 2, 3].map(() => a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }))));
    await a.engine.close();
    await withStore(dir, (root) => {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      const stored = log.get(2)!;
      log.putSync(2, flipByte(stored, stored.length - 1));
    });
    await assert.rejects(openCounterEngine(dir, clock), /log entry 2: checksum mismatch/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses to start on a log entry with a flipped payload byte, naming its sequence', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await storeWith(dir, clock, 5);
    await withStore(dir, (root) => {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      const stored = log.get(3)!;
      log.putSync(3, flipByte(stored, stored.length - 2));
    });
    await assert.rejects(openCounterEngine(dir, clock), /log entry 3: checksum mismatch/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a log entry of an unknown format version, naming its sequence', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await storeWith(dir, clock, 3);
    await withStore(dir, (root) => {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      const stored = Buffer.from(log.get(2)!);
      stored[0] = 9;
      log.putSync(2, stored);
    });
    await assert.rejects(openCounterEngine(dir, clock), /log entry 2: unknown format version 9/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a log with a missing entry, naming the gap', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await storeWith(dir, clock, 5);
    await withStore(dir, (root) => {
      root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' }).removeSync(3);
    });
    await assert.rejects(openCounterEngine(dir, clock), /log entry 3: missing \(the log goes on at 4\)/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a snapshot chunk with a flipped byte, naming the snapshot and the chunk', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await storeWith(dir, clock, 4, 3);
    await withSnapshotStore(dir, (root) => {
      const chunks = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
      const key = [1, 0];
      const stored = chunks.get(key)!;
      chunks.putSync(key, flipByte(stored, stored.length - 1));
    });
    await assert.rejects(openCounterEngine(dir, clock), /snapshot at 3 \(generation 1\), chunk 0 of generation 1: checksum mismatch/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a snapshot manifest that is not one, and one whose counts disagree with the image', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    await storeWith(dir, clock, 4, 3);
    let manifest: { counts: { timers: number } } | undefined;
    await withSnapshotStore(dir, (root) => {
      const snapshots = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
      manifest = decodeStored(snapshots.get('manifest')!, 'manifest') as { counts: { timers: number } };
      // Checksummed and decodable, but what it holds is no manifest.
      snapshots.putSync('manifest', encodeStored({ seq: 3 }));
    });
    await assert.rejects(openCounterEngine(dir, clock), /snapshot manifest: not a manifest/);
    await withSnapshotStore(dir, (root) => {
      const snapshots = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
      snapshots.putSync('manifest', encodeStored({ ...manifest!, counts: { ...manifest!.counts, timers: manifest!.counts.timers + 1 } }));
    });
    await assert.rejects(openCounterEngine(dir, clock), /snapshot at 3 \(generation 1\): \d+ timers, manifest says \d+/);
    rmSync(dir, { recursive: true, force: true });
  });

  it('at start, ignores and removes chunks of an abandoned snapshot and generations a full one left behind', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock);
    await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await a.engine.snapshot(); // generation 1, full
    await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await a.engine.snapshot(); // generation 2: x only
    await a.engine.close();
    await withSnapshotStore(dir, (root) => {
      const chunks = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
      assert.deepEqual([...chunks.getKeys()].filter(Array.isArray), [[1, 0], [2, 0]]);
      // Generation 3 was being written when the process died; and a generation below the base
      // that a full snapshot had not removed yet.
      chunks.putSync([3, 0], encodeStored([['r', 'x', 50], ['r', 'ghost', 7]]));
      chunks.putSync([0, 0], encodeStored([['r', 'ghost', 8]]));
    });

    const b = await openCounterEngine(dir, clock);
    assert.equal(b.counters.values.get('x'), 2);
    assert.equal(b.counters.values.has('ghost'), false);
    assert.ok(b.reports.includes('recovery: removed 2 values of an abandoned snapshot'), b.reports.join('\n'));
    await b.engine.close();
    await withSnapshotStore(dir, (root) => {
      const chunks = root.openDB<Buffer, Key>({ name: 'snapshots', encoding: 'binary' });
      assert.deepEqual([...chunks.getKeys()].filter(Array.isArray), [[1, 0], [2, 0]]);
    });
    rmSync(dir, { recursive: true, force: true });
  });
});
