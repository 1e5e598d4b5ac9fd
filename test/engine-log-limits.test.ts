// A log table may cap its values (a replicated log's message size, src/cluster/): a commit
// group over the cap is written as smaller groups, and an entry that alone is over it fails
// the engine rather than being acknowledged. It may also take few puts at once (a replicated
// log takes one): the next group then waits for a put and holds everything appended meanwhile.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ManualClock } from '../src/engine/clock.js';
import { LmdbStorage } from '../src/engine/storage.js';
import { openStore } from '../src/engine/store.js';
import { logTable } from '../src/engine/log.js';
import { add, openCounterEngine, tempDir, waitFor } from './support/counter-machine.js';
import { storeWithLogPutsInFlight, storeWithLogValueLimit, type Written } from './support/log-store.js';

const LIMIT = 10_000;
/** A counter id of about 2 KB, so a few entries fill a value. */
const longId = (n: number): string => `${String(n).padStart(4, '0')}${'x'.repeat(2_000)}`;

describe('a log whose values are capped', () => {
  it('splits a commit group over the cap, and replays every entry', async () => {
    const dir = tempDir();
    try {
      const { engine } = await openCounterEngine(dir, new ManualClock(), { openStorage: storeWithLogValueLimit(LIMIT) });
      // One event-loop turn: one commit group of 60 entries, about 120 KB.
      await Promise.all(Array.from({ length: 60 }, (_, n) => engine.exec([longId(n)], () => ({ events: [add(longId(n), n + 1)], reply: () => undefined }))));
      await engine.close();

      const storage = new LmdbStorage(openStore(dir));
      const values = [...logTable(storage).getRange()];
      await storage.close();
      assert.ok(values.length >= 12, `${values.length} values for about 120 KB`);
      for (const { key, value } of values) assert.ok(value.length <= LIMIT, `group ${key} is ${value.length} bytes`);

      const reopened = await openCounterEngine(dir, new ManualClock(), { openStorage: storeWithLogValueLimit(LIMIT) });
      assert.equal(reopened.counters.values.size, 60);
      assert.equal([...reopened.counters.values.values()].reduce((a, b) => a + b, 0), (60 * 61) / 2);
      await reopened.engine.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses an entry that alone is over the cap: no reply, the engine stops', async () => {
    const dir = tempDir();
    try {
      const { engine, fatal } = await openCounterEngine(dir, new ManualClock(), { openStorage: storeWithLogValueLimit(LIMIT) });
      const huge = 'y'.repeat(LIMIT);
      await assert.rejects(engine.exec([huge], () => ({ events: [add(huge, 1)], reply: () => undefined })), /over the 10000 bytes one log value may hold/);
      assert.deepEqual(fatal, ['log commit failed']);
      await engine.close().catch(() => undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a log whose table takes one put at a time', () => {
  /** Runs `n` messages, one an event-loop turn, while the first group's put is held; returns the log's group keys and what replay restores. */
  async function heldThenReleased(maxPutsInFlight: number, n: number): Promise<{ keys: number[]; replies: number; total: number }> {
    const dir = tempDir();
    try {
      const gates: Array<() => void> = [];
      const put = (table: { put(key: number, value: Buffer): Written }, key: number, value: Buffer): Written => {
        const written = table.put(key, value);
        return written.then((committed) => new Promise<boolean>((resolve) => gates.push(() => resolve(committed))));
      };
      const storage = storeWithLogPutsInFlight(maxPutsInFlight, put);
      const { engine } = await openCounterEngine(dir, new ManualClock(), { openStorage: storage });
      let replies = 0;
      const done: Array<Promise<unknown>> = [];
      for (let i = 1; i <= n; i++) {
        done.push(engine.exec(['c'], () => ({ events: [add('c', i)], reply: () => undefined })).then(() => replies++));
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setImmediate(resolve));
      }
      await waitFor(() => gates.length > 0, 'a put');
      const release = async (): Promise<void> => {
        while (replies < n) {
          await waitFor(() => gates.length > 0 || replies === n, 'a put or every reply');
          gates.splice(0).forEach((open) => open());
        }
      };
      await Promise.all([release(), ...done]);
      await engine.close();
      const reopened = new LmdbStorage(openStore(dir));
      const keys = [...logTable(reopened).getKeys()];
      await reopened.close();
      const again = await openCounterEngine(dir, new ManualClock(), { openStorage: storage });
      const total = again.counters.values.get('c') ?? 0;
      await again.engine.close();
      return { keys, replies, total };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('writes what was appended while a put was out as one group, and replays every entry', async () => {
    const held = await heldThenReleased(1, 5);
    assert.equal(held.replies, 5);
    assert.equal(held.total, 15);
    // The first message's group, then the four appended while its put was held, together.
    assert.deepEqual(held.keys, [1, 2]);
  });

  it('never writes a held group after a refused put: no gap in the log, the engine stops', async () => {
    const dir = tempDir();
    try {
      const puts: number[] = [];
      let refuse: (() => void) | undefined;
      const storage = storeWithLogPutsInFlight(1, (_table, key) => {
        puts.push(key);
        // The first group is refused once the next messages are held behind it.
        return new Promise<boolean>((resolve) => (refuse = () => resolve(false))) as Written;
      });
      const { engine, fatal } = await openCounterEngine(dir, new ManualClock(), { openStorage: storage });
      const first = engine.exec(['c'], () => ({ events: [add('c', 1)], reply: () => undefined }));
      await waitFor(() => refuse !== undefined, 'the first put');
      const held = [2, 3].map((n) => engine.exec(['c'], () => ({ events: [add('c', n)], reply: () => undefined })));
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      refuse!();
      const outcomes = await Promise.allSettled([first, ...held]);
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['rejected', 'rejected', 'rejected'],
      );
      assert.deepEqual(fatal, ['log commit failed']);
      assert.deepEqual(puts, [1], 'only the refused group was ever put');
      await engine.close().catch(() => undefined);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes a group every event-loop turn when the table takes many puts at once', async () => {
    const many = await heldThenReleased(Number.MAX_SAFE_INTEGER, 5);
    assert.equal(many.replies, 5);
    assert.equal(many.total, 15);
    assert.deepEqual(many.keys, [1, 2, 3, 4, 5]);
  });
});
