// The engine on a toy domain: ordering, atomicity, durability, group commit, snapshots,
// recovery and durable timers, with time moved by a manual clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { LogFullError } from '../src/engine/engine.js';
import { ManualClock } from '../src/engine/clock.js';
import { add, openCounterEngine, tempDir, waitFor, type CounterEvent, type Counters, type OpenedCounters } from './support/counter-machine.js';
import { quiesce } from './support/quiesce.js';
import { setTimer, type Command } from '../src/engine/state-machine.js';
import { storeWithLogPuts, type Written } from './support/log-store.js';

async function openEngine(dataDir: string, clock: ManualClock, snapshotEveryEntries = 1_000_000): Promise<OpenedCounters> {
  return openCounterEngine(dataDir, clock, { snapshotEveryEntries });
}

describe('engine', () => {
  it('answers after the entry is durable and recovers it after reopening', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    const reply = await a.engine.exec(['c1'], () => ({ events: [add('c1', 5)], reply: () => a.counters.values.get('c1') }));
    assert.equal(reply, 5);
    assert.ok(a.engine.durableSeq >= a.engine.lastSeq);
    await a.engine.close();
    const b = await openEngine(dir, clock);
    assert.equal(b.counters.values.get('c1'), 5);
    assert.equal(b.engine.lastSeq, 1);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a query only once the entries before it are durable, and with their state', async () => {
    const dir = tempDir();
    let holding = true;
    const held: Array<() => void> = [];
    // While `holding`, a log put's commit and fsync wait for the test to let them go.
    const openStorage = storeWithLogPuts((written) => {
      if (!holding) return written;
      const gate = new Promise<void>((resolve) => held.push(resolve));
      const gated: Written = gate.then(() => written);
      gated.flushed = gate.then(() => written.flushed ?? written);
      return gated;
    });
    const { engine, counters } = await openCounterEngine(dir, new ManualClock(), { openStorage });
    const written = engine.exec(['c1'], () => ({ events: [add('c1', 5)], reply: () => undefined }));
    let answer: number | undefined;
    const read = engine.read((id: string) => counters.values.get(id), 'c1').then((value) => (answer = value));
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.ok(held.length > 0, 'the entry is written and its commit held');
    assert.equal(answer, undefined, 'no answer while the entry before the query is not durable');
    holding = false;
    for (const release of held.splice(0)) release();
    await Promise.all([written, read]);
    assert.equal(answer, 5);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('changes nothing and logs nothing when the handler refuses', async () => {
    const dir = tempDir();
    const { engine, counters } = await openEngine(dir, new ManualClock());
    await assert.rejects(
      engine.exec(['c1'], () => {
        throw new Error('refused');
      }),
      /refused/,
    );
    assert.equal(engine.lastSeq, 0);
    assert.equal(counters.values.size, 0);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes an operation on two actors as one entry', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    await a.engine.exec(['a'], () => ({ events: [add('a', 10)], reply: () => undefined }));
    await a.engine.exec(['a', 'b'], () => ({ events: [add('a', -4), add('b', 4)], reply: () => undefined }));
    assert.equal(a.engine.lastSeq, 2);
    await a.engine.close();
    const b = await openEngine(dir, clock);
    assert.deepEqual([b.counters.values.get('a'), b.counters.values.get('b')], [6, 4]);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('handles one message at a time per actor, in arrival order, while a slow prepare holds none of them', async () => {
    const dir = tempDir();
    const { engine, counters } = await openEngine(dir, new ManualClock());
    const seen: number[] = [];
    let releaseFirst!: () => void;
    const firstMayFinish = new Promise<void>((resolve) => (releaseFirst = resolve));
    // The slow part of a command is its prepare, which the engine awaits before it holds anything.
    const slow: Command<Counters, undefined, number | undefined, CounterEvent, number> = {
      name: 'slow',
      prepare: async () => {
        await firstMayFinish;
        return 10;
      },
      actors: () => ['hot'],
      decide: (_input, _state, _at, n) => {
        seen.push(3);
        return { events: [add('hot', n)], reply: () => counters.values.get('hot') };
      },
    };
    const prepared = engine.run(slow, undefined, (hot) => hot);
    // Naming two actors, it takes both in this run and decides in the next microtask: the
    // messages for hot that come meanwhile wait for it, in the order they came.
    const first = engine.exec(['hot', 'warm'], () => {
      seen.push(1);
      return { events: [add('hot', 1)], reply: () => counters.values.get('hot') };
    });
    const second = engine.exec(['hot'], () => {
      seen.push(2);
      return { events: [add('hot', 1)], reply: () => counters.values.get('hot') };
    });
    // Another actor is not held up by the hot one.
    const other = await engine.exec(['cold'], () => ({ events: [add('cold', 7)], reply: () => counters.values.get('cold') }));
    assert.equal(other, 7);
    assert.deepEqual(await Promise.all([first, second]), [1, 2]);
    assert.deepEqual(seen, [1, 2]);
    releaseFirst();
    assert.equal(await prepared, 12);
    assert.deepEqual(seen, [1, 2, 3]);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shares commits among concurrent messages (group commit)', async () => {
    const dir = tempDir();
    const { engine, counters } = await openEngine(dir, new ManualClock());
    const n = 2000;
    await Promise.all(
      Array.from({ length: n }, (_, i) => engine.exec([`c${i % 50}`], () => ({ events: [add(`c${i % 50}`, 1)], reply: () => undefined }))),
    );
    const stats = engine.logStats;
    assert.equal(stats.entries, n);
    assert.ok(stats.flushes < n / 10, `expected far fewer flushes than entries, got ${stats.flushes} for ${n}`);
    assert.equal([...counters.values.values()].reduce((s, v) => s + v, 0), n);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses at once, changing nothing, when the log holds as many unflushed entries as it may', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock(), { maxPendingEntries: 2 });
    const bump = (id: string, n: number) => engine.exec([id], () => ({ events: [add(id, n)], reply: () => counters.values.get(id) }));
    // Both are appended in this run; their flush comes in a later turn.
    const pending = [bump('a', 1), bump('b', 1)];
    await assert.rejects(bump('a', 10), LogFullError);
    assert.equal(counters.values.get('a'), 1);
    assert.deepEqual(await Promise.all(pending), [1, 1]);
    // Flushed, there is room again.
    assert.equal(await bump('a', 10), 11);
    assert.equal(engine.lastSeq, 3);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a read only once what it saw is durable, also a change applied after the read was asked', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    await engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    // Asked with everything durable; a change is applied in the same run, and is not durable
    // before its group's flush a turn later.
    const read = engine.read(() => counters.values.get('x'), undefined).then((value) => ({ value, durable: engine.durableSeq }));
    const write = engine.exec(['x'], () => ({ events: [add('x', 10)], reply: () => undefined }));
    const { value, durable } = await read;
    await write;
    // Whatever the read saw, a crash at the moment it was answered could not take it back.
    assert.ok(value === 1 || durable >= 2, `answered ${value} with the log durable through ${durable}`);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('recovers from a snapshot plus the log tail, and trims the log the snapshot covers', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    for (let i = 0; i < 30; i++) await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await a.engine.snapshot();
    assert.equal(a.engine.snapshotSeq, 30);
    for (let i = 0; i < 5; i++) await a.engine.exec(['y'], () => ({ events: [add('y', 2)], reply: () => undefined }));
    await a.engine.close();

    const b = await openEngine(dir, clock);
    assert.deepEqual([b.counters.values.get('x'), b.counters.values.get('y')], [30, 10]);
    // Only the tail after the snapshot was replayed.
    assert.equal(b.counters.applied, 5);
    assert.equal(b.engine.lastSeq, 35);
    await b.engine.exec(['y'], () => ({ events: [add('y', 1)], reply: () => undefined }));
    assert.equal(b.engine.lastSeq, 36);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps numbering after a snapshot that covered the whole log', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    for (let i = 0; i < 3; i++) await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await a.engine.snapshot();
    await a.engine.close();
    const b = await openEngine(dir, clock);
    assert.equal(b.engine.lastSeq, 3);
    await b.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await b.engine.close();
    const c = await openEngine(dir, clock);
    assert.equal(c.counters.values.get('x'), 4);
    await c.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('snapshots by itself every N entries', async () => {
    const dir = tempDir();
    const { engine } = await openEngine(dir, new ManualClock(), 10);
    for (let i = 0; i < 25; i++) await engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    // No explicit snapshot: the automatic one (every 10 entries) runs in the background.
    await waitFor(() => engine.snapshotSeq >= 20, 'an automatic snapshot at 20 or later');
    assert.ok(engine.snapshotSeq >= 20, `snapshot at ${engine.snapshotSeq}`);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fires durable timers when the clock reaches them, also after a restart', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    const due = clock.now() + 5 * 60_000;
    await a.engine.exec(['t'], (at) => ({
      events: [add('t', 1), setTimer(due, ['t'], { type: 'bonus', id: 't', n: 100 }, at)],
      reply: () => undefined,
    }));
    // A minute short of due: a timer that fired anyway would have been applied by the time the engine is idle.
    clock.advance(4 * 60_000);
    await quiesce(a.engine);
    assert.equal(a.counters.values.get('t'), 1);
    assert.equal(a.engine.pendingTimers, 1);
    await a.engine.close();

    // Restart: the timer is part of the recovered state and fires when due.
    const b = await openEngine(dir, clock);
    assert.equal(b.engine.pendingTimers, 1);
    clock.advance(60_000);
    await waitFor(() => b.counters.values.get('t') === 101);
    await b.engine.settled();
    assert.equal(b.engine.pendingTimers, 0);
    await b.engine.close();

    // Fired once: another restart does not fire it again.
    const c = await openEngine(dir, clock);
    assert.equal(c.engine.pendingTimers, 0);
    clock.advance(60 * 60_000);
    await quiesce(c.engine);
    assert.equal(c.counters.values.get('t'), 101);
    await c.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('fires a timer that fell due while the service was down right after recovery', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    await a.engine.exec(['t'], (at) => ({
      events: [setTimer(at + 1000, ['t'], { type: 'bonus', id: 't', n: 3 }, at)],
      reply: () => undefined,
    }));
    await a.engine.snapshot();
    await a.engine.close();
    clock.advance(10_000);
    const b = await openEngine(dir, clock);
    clock.advance(0);
    await waitFor(() => b.counters.values.get('t') === 3);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('remembers idempotency records for 24 hours of entry time', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openEngine(dir, clock);
    const record = (key: string, at: number) => ({
      type: '$idempotency' as const,
      record: { key, bodyHash: 'h', status: 201, body: '{"ok":true}', at },
    });
    await a.engine.exec(['x'], (at) => ({ events: [add('x', 1)], reply: () => undefined }), (_r, at) => [record('k1', at)]);
    assert.equal(a.engine.idempotencyRecord('k1')?.body, '{"ok":true}');
    clock.advance(24 * 60 * 60_000);
    assert.equal(a.engine.idempotencyRecord('k1'), undefined);
    await a.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps at most the configured number of idempotency records, forgetting the oldest, also on replay', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const record = (key: string, at: number) => ({
      type: '$idempotency' as const,
      record: { key, bodyHash: 'h', status: 201, body: key, at },
    });
    const remember = async (engine: OpenedCounters['engine'], key: string): Promise<void> => {
      await engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }), (_r, at) => [record(key, at)]);
    };
    const kept = (engine: OpenedCounters['engine']): string[] =>
      ['k1', 'k2', 'k3', 'k4', 'k5'].filter((key) => engine.idempotencyRecord(key) !== undefined);
    const a = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    await remember(a.engine, 'k1');
    await remember(a.engine, 'k2');
    await a.engine.snapshot();
    for (const key of ['k3', 'k4', 'k5']) await remember(a.engine, key);
    assert.deepEqual(kept(a.engine), ['k3', 'k4', 'k5']);
    assert.equal(a.engine.idempotencyRecords, 3);
    assert.ok(a.reports.some((line) => line.startsWith('idempotency records at their limit of 3')), a.reports.join('\n'));
    await a.engine.close();
    const b = await openCounterEngine(dir, clock, { maxIdempotencyRecords: 3 });
    assert.deepEqual(kept(b.engine), ['k3', 'k4', 'k5']);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
