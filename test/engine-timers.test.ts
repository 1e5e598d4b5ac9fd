// Durable timers: keys the domain chooses (replace, cancel), pacing after an outage, and
// backoff then dead-parking for a handler that keeps failing. Time is a manual clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ManualClock } from '../src/engine/clock.js';
import { MAX_ATTEMPTS, retryDelayMs } from '../src/engine/engine.js';
import { TIMERS_PER_TURN } from '../src/engine/timers.js';
import { add, openCounterEngine, tempDir, waitFor } from './support/counter-machine.js';
import { setTimer, cancelTimer } from '../src/engine/state-machine.js';

/** Lets the microtasks of the current turn run, and nothing else (no I/O, no timers, no immediates). */
async function sameTurn(): Promise<void> {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

describe('engine timers', () => {
  it('starts 10,000 timers that fell due during an outage a batch per turn, not all at once', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock);
    await a.engine.exec([], (at) => ({
      events: Array.from({ length: 10_000 }, (_, i) => setTimer(at + 1000, [`t${i % 100}`], { type: 'bonus', id: `t${i % 100}`, n: 1 }, at)),
      reply: () => undefined,
    }));
    await a.engine.close();
    clock.advance(60 * 60_000);

    const b = await openCounterEngine(dir, clock);
    assert.equal(b.engine.pendingTimers, 10_000);
    clock.advance(0);
    await sameTurn();
    assert.ok(b.counters.timerCalls > 0, 'the first batch starts');
    assert.ok(b.counters.timerCalls <= TIMERS_PER_TURN, `${b.counters.timerCalls} handlers started in one turn`);
    await waitFor(() => b.engine.pendingTimers === 0, 'every timer fired');
    await b.engine.settled();
    assert.equal([...b.counters.values.values()].reduce((sum, n) => sum + n, 0), 10_000);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('retries a failing handler with growing backoff, durably, and parks it dead after the limit', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    let opened = await openCounterEngine(dir, clock);
    await opened.engine.exec([], (at) => ({
      events: [setTimer(at + 1000, ['t'], { type: 'broken', id: 't' }, at, 'broken-one')],
      reply: () => undefined,
    }));
    clock.advance(1000);
    let calls = 0;
    for (let failure = 1; failure <= MAX_ATTEMPTS; failure++) {
      const { engine, counters, reports } = opened;
      await waitFor(() => counters.timerCalls === calls + 1, `attempt ${failure}`);
      calls = counters.timerCalls;
      if (failure === MAX_ATTEMPTS) {
        await waitFor(() => engine.pendingTimers === 0, 'parked dead');
        assert.ok(reports.some((line) => line.startsWith(`timer broken-one parked dead after ${MAX_ATTEMPTS} failed attempts: timer handler for t is broken`)), reports.join('\n'));
        break;
      }
      await waitFor(() => reports.some((line) => line.startsWith(`timer broken-one failed (attempt ${failure} of ${MAX_ATTEMPTS})`)), `retry ${failure} logged`);
      await engine.settled();
      // Not again before the backoff is over (no retry every 100 ms).
      clock.advance(retryDelayMs(failure) - 1);
      await sameTurn();
      await new Promise((resolve) => setImmediate(resolve));
      assert.equal(counters.timerCalls, calls);
      if (failure === 3) {
        // The attempt count is durable: a restart does not start the count over.
        await engine.close();
        opened = await openCounterEngine(dir, clock);
        calls = 0;
      }
      clock.advance(1);
    }
    // Dead stays dead, also after a restart.
    await opened.engine.close();
    const again = await openCounterEngine(dir, clock);
    assert.equal(again.engine.pendingTimers, 0);
    clock.advance(24 * 60 * 60_000);
    await sameTurn();
    assert.equal(again.counters.timerCalls, 0);
    await again.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets the domain cancel a timer by its key, and replace it by setting the key again', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock);
    await a.engine.exec([], (at) => ({
      events: [
        setTimer(at + 1000, ['c'], { type: 'bonus', id: 'c', n: 1 }, at, 'cancel-me'),
        setTimer(at + 1000, ['r'], { type: 'bonus', id: 'r', n: 1 }, at, 'replace-me'),
      ],
      reply: () => undefined,
    }));
    await a.engine.exec([], (at) => ({
      events: [cancelTimer('cancel-me'), setTimer(at + 2000, ['r'], { type: 'bonus', id: 'r', n: 50 }, at, 'replace-me')],
      reply: () => undefined,
    }));
    assert.equal(a.engine.pendingTimers, 1);
    await a.engine.close();

    const b = await openCounterEngine(dir, clock);
    assert.equal(b.engine.pendingTimers, 1);
    clock.advance(1000);
    await sameTurn();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(b.counters.timerCalls, 0, 'the cancelled timer and the replaced one do not fire');
    clock.advance(1000);
    await waitFor(() => b.engine.pendingTimers === 0, 'the replacement fired');
    await b.engine.settled();
    assert.deepEqual([b.counters.values.get('c'), b.counters.values.get('r')], [undefined, 50]);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('cancelling a timer that is not pending changes nothing', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    await engine.exec(['x'], () => ({ events: [cancelTimer('never-set'), add('x', 1)], reply: () => undefined }));
    assert.equal(counters.values.get('x'), 1);
    assert.equal(engine.pendingTimers, 0);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('defers a timer that falls due while the log is full without counting it as a failed attempt', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine, counters, reports } = await openCounterEngine(dir, clock, { maxPendingEntries: 1 });
    await engine.exec([], (at) => ({ events: [setTimer(at + 1000, ['hot'], { type: 'bonus', id: 'hot', n: 1 }, at, 'on-hot')], reply: () => undefined }));
    // Appended in this run and flushed in a later turn: the timer falls due in this run, with the log full.
    const unflushed = engine.exec(['warm'], () => ({ events: [add('warm', 1)], reply: () => undefined }));
    clock.advance(1000);
    await waitFor(() => reports.some((line) => line.startsWith('timer on-hot deferred: write-ahead log backlog is full')), 'deferred');
    await unflushed;
    assert.equal(engine.pendingTimers, 1);
    clock.advance(retryDelayMs(1));
    await waitFor(() => engine.pendingTimers === 0, 'fired once the log had room');
    assert.equal(counters.values.get('hot'), 1);
    assert.ok(!reports.some((line) => line.includes('failed (attempt')), reports.join('\n'));
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
