// A log table may cap its values (a replicated log's message size, src/cluster/): a commit
// group over the cap is written as smaller groups, and an entry that alone is over it fails
// the engine rather than being acknowledged.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ManualClock } from '../src/engine/clock.js';
import { LmdbStorage } from '../src/engine/storage.js';
import { openStore } from '../src/engine/store.js';
import { logTable } from '../src/engine/log.js';
import { add, openCounterEngine, tempDir } from './support/counter-machine.js';
import { storeWithLogValueLimit } from './support/log-store.js';

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
