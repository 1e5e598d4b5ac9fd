// Effects after commit: recorded in the entry of the change that causes them, run only once
// that entry is durable, outcome logged (with the runner's settle events), resumed after a
// restart, retried with backoff then parked dead, bounded in concurrency and in number.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { open } from 'lmdb';
import type { Storage } from '../src/engine/storage.js';
import { ManualClock } from '../src/engine/clock.js';
import { EffectsFullError, MAX_ATTEMPTS, retryDelayMs } from '../src/engine/engine.js';
import { EFFECT_CONCURRENCY } from '../src/engine/effects.js';
import { decodeGroup } from '../src/engine/log.js';
import { storeWithLogPuts } from './support/log-store.js';
import type { EngineEvent } from '../src/engine/state-machine.js';
import { add, openCounterEngine, tempDir, waitFor, type CounterEvent } from './support/counter-machine.js';

interface Mail {
  to: string;
}

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** A store whose log flushes (fsyncs) are held back until `release` is opened. */
function heldFlushes(release: Promise<void>): (dir: string) => Storage {
  return storeWithLogPuts((written) => {
    const flushed = written.flushed ?? written;
    written.flushed = release.then(() => flushed);
    return written;
  });
}

/** Every logged engine event of one type, read from the store directly. */
async function logged<K extends EngineEvent<unknown>['type']>(dir: string, type: K): Promise<Array<Extract<EngineEvent<unknown>, { type: K }>>> {
  const root = open({ path: dir });
  const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
  const found: Array<Extract<EngineEvent<unknown>, { type: K }>> = [];
  for (const { key, value } of log.getRange()) {
    for (const entry of decodeGroup<CounterEvent | EngineEvent<unknown>>(key, value)) {
      for (const event of entry.events) {
        if (event.type === type) found.push(event as Extract<EngineEvent<unknown>, { type: K }>);
      }
    }
  }
  await root.close();
  return found;
}

describe('engine effects', () => {
  it('does not run an effect before the entry that records it is durable', async () => {
    const dir = tempDir();
    const flushes = gate();
    const runs: number[] = [];
    const { engine } = await openCounterEngine(dir, new ManualClock(), { openStorage: heldFlushes(flushes.opened) }, (e) =>
      e.onEffect<Mail, string>('mail', {
        run: async (payload) => {
          runs.push(e.durableSeq);
          return `sent to ${payload.to}`;
        },
      }),
    );
    const reply = engine.exec(['x'], (at) => ({
      events: [add('x', 1), engine.effect<Mail>('mail', ['x'], { to: 'a@example.com' }, at)],
      reply: () => 'accepted',
    }));
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.deepEqual(runs, [], 'not run while its entry is not durable');
    assert.equal(engine.pendingEffects, 1);
    flushes.open();
    assert.equal(await reply, 'accepted');
    await waitFor(() => engine.pendingEffects === 0, 'the effect done');
    assert.deepEqual(runs, [1], 'ran once, with entry 1 durable');
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('logs the outcome with the settle events in one entry, and does not run it again after a restart', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    let runs = 0;
    const register = (e: Parameters<NonNullable<Parameters<typeof openCounterEngine>[3]>>[0]): void =>
      e.onEffect<Mail, { status: number }>('mail', {
        run: async () => {
          runs++;
          return { status: 250 };
        },
        settle: (effect, outcome) => [add(`sent:${effect.actors[0]}`, outcome.status)],
      });
    const a = await openCounterEngine(dir, clock, {}, register);
    await a.engine.exec(['x'], (at) => ({ events: [a.engine.effect<Mail>('mail', ['x'], { to: 'a@example.com' }, at)], reply: () => undefined }));
    await waitFor(() => a.engine.pendingEffects === 0, 'the effect done');
    await a.engine.settled();
    assert.equal(a.counters.values.get('sent:x'), 250);
    await a.engine.close();

    const done = await logged(dir, '$effect.done');
    assert.equal(done.length, 1);
    assert.deepEqual(done[0]!.outcome, { status: 250 });

    const b = await openCounterEngine(dir, clock, {}, register);
    assert.equal(b.engine.pendingEffects, 0);
    assert.equal(b.counters.values.get('sent:x'), 250);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(runs, 1);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resumes an unfinished effect after a restart (from the snapshot)', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const started: number[] = [];
    // The first process dies while the effect runs (its run never finishes).
    const a = await openCounterEngine(dir, clock, {}, (e) =>
      e.onEffect<Mail, string>('mail', {
        run: (_payload, attempt) => {
          started.push(attempt);
          return new Promise<string>(() => undefined);
        },
      }),
    );
    await a.engine.exec(['x'], (at) => ({ events: [a.engine.effect<Mail>('mail', ['x'], { to: 'b@example.com' }, at)], reply: () => undefined }));
    await waitFor(() => started.length === 1, 'the first run started');
    await a.engine.snapshot();
    await a.engine.close();

    const delivered: string[] = [];
    const b = await openCounterEngine(dir, clock, {}, (e) =>
      e.onEffect<Mail, string>('mail', {
        run: async (payload) => {
          delivered.push(payload.to);
          return 'ok';
        },
      }),
    );
    await waitFor(() => b.engine.pendingEffects === 0, 'the resumed effect done');
    assert.deepEqual(delivered, ['b@example.com']);
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('retries a failing run with logged backoff, then parks it dead after the limit', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const attempts: number[] = [];
    const { engine, reports } = await openCounterEngine(dir, clock, {}, (e) =>
      e.onEffect<Mail, string>('mail', {
        run: async (_payload, attempt) => {
          attempts.push(attempt);
          throw new Error('smtp 451');
        },
      }),
    );
    await engine.exec(['x'], (at) => ({ events: [engine.effect<Mail>('mail', ['x'], { to: 'c@example.com' }, at)], reply: () => undefined }));
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      await waitFor(() => reports.some((line) => line.includes(`failed (attempt ${attempt} of ${MAX_ATTEMPTS}): smtp 451`)), `failure ${attempt} logged`);
      clock.advance(retryDelayMs(attempt) - 1);
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
      assert.equal(attempts.length, attempt, 'not run again before the backoff is over');
      clock.advance(1);
    }
    await waitFor(() => engine.pendingEffects === 0, 'parked dead');
    assert.deepEqual(attempts, [1, 2, 3, 4, 5, 6, 7, 8]);
    assert.ok(reports.some((line) => /^effect Effect:\S+ \(mail\) parked dead after 8 failed attempts: smtp 451$/.test(line)), reports.join('\n'));
    await engine.close();
    assert.equal((await logged(dir, '$effect.retry')).length, MAX_ATTEMPTS - 1);
    assert.equal((await logged(dir, '$effect.dead')).length, 1);
    rmSync(dir, { recursive: true, force: true });
  });

  it(`runs at most ${EFFECT_CONCURRENCY} effects at once`, async () => {
    const dir = tempDir();
    const release = gate();
    let running = 0;
    let most = 0;
    const { engine } = await openCounterEngine(dir, new ManualClock(), {}, (e) =>
      e.onEffect<Mail, string>('mail', {
        run: async () => {
          running++;
          most = Math.max(most, running);
          await release.opened;
          running--;
          return 'ok';
        },
      }),
    );
    await engine.exec([], (at) => ({
      events: Array.from({ length: 40 }, (_, i) => engine.effect<Mail>('mail', [`m${i}`], { to: `${i}@example.com` }, at)),
      reply: () => undefined,
    }));
    await waitFor(() => running === EFFECT_CONCURRENCY, 'the run slots filled');
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.equal(running, EFFECT_CONCURRENCY);
    release.open();
    await waitFor(() => engine.pendingEffects === 0, 'all done');
    assert.equal(most, EFFECT_CONCURRENCY);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a decision that would add effects past the pending limit, changing nothing', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock(), { maxPendingEffects: 2 }, (e) =>
      e.onEffect<Mail, string>('mail', { run: () => new Promise<string>(() => undefined) }),
    );
    await engine.exec(['x'], (at) => ({
      events: [add('x', 1), engine.effect<Mail>('mail', ['x'], { to: '1' }, at), engine.effect<Mail>('mail', ['x'], { to: '2' }, at)],
      reply: () => undefined,
    }));
    await assert.rejects(
      engine.exec(['x'], (at) => ({ events: [add('x', 1), engine.effect<Mail>('mail', ['x'], { to: '3' }, at)], reply: () => undefined })),
      EffectsFullError,
    );
    assert.equal(counters.values.get('x'), 1);
    assert.equal(engine.lastSeq, 1);
    assert.equal(engine.pendingEffects, 2);
    // Decisions without effects still go through.
    await engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
