// Actor exclusion and ordering with async decisions, and what happens when a decision
// fails after its events were applied.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ManualClock } from '../src/engine/clock.js';
import { EngineClosedError } from '../src/engine/engine.js';
import { add, openCounterEngine, tempDir } from './support/counter-machine.js';

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('engine actors', () => {
  it('keeps an actor held while its slow async decision awaits; later messages run after it, in order', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    const started: string[] = [];
    const slow = gate();
    const first = engine.exec(['a'], async () => {
      started.push('a1');
      await slow.opened;
      return { events: [add('a', 1)], reply: () => counters.values.get('a') };
    });
    const second = engine.exec(['a'], () => {
      started.push('a2');
      return { events: [add('a', 10)], reply: () => counters.values.get('a') };
    });
    const third = engine.exec(['b', 'a'], () => {
      started.push('ab3');
      return { events: [add('a', 100), add('b', 1)], reply: () => counters.values.get('a') };
    });
    // Many turns pass (disk writes complete meanwhile): nobody else enters actor a.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.deepEqual(started, ['a1']);
    assert.equal(counters.values.get('a'), undefined);
    slow.open();
    assert.deepEqual(await Promise.all([first, second, third]), [1, 11, 111]);
    assert.deepEqual(started, ['a1', 'a2', 'ab3']);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not delay a message on actor B while an async decision on actor A awaits', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    const slow = gate();
    const onA = engine.exec(['A'], async () => {
      await slow.opened;
      return { events: [add('A', 1)], reply: () => counters.values.get('A') };
    });
    // B's message is decided, applied, made durable and answered while A still awaits.
    const onB = await engine.exec(['B'], () => ({ events: [add('B', 2)], reply: () => counters.values.get('B') }));
    assert.equal(onB, 2);
    assert.equal(engine.durableSeq, 1);
    assert.equal(counters.values.get('A'), undefined);
    slow.open();
    assert.equal(await onA, 1);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('applies an awaiting decision\'s last step in the run that makes it, so a check against state other actors change is not overtaken', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    // At most one unit in `total`, which decisions on actors A and B both add to (as an
    // environment's intake is added to by decisions on different accounts).
    const bounded = (total: string, actor: string) => () => {
      const room = (counters.values.get(total) ?? 0) < 1;
      return { events: room ? [add(total, 1), add(actor, 1)] : [], reply: () => room };
    };
    // A decision returned after an await reaches the engine one promise hop later: the
    // other decision checks in that hop, before the first is applied, and both pass.
    const hop = gate();
    const returned = ['A', 'B'].map((actor) =>
      engine.exec([actor], async () => {
        await hop.opened;
        return bounded('returned', actor)();
      }),
    );
    hop.open();
    assert.deepEqual(await Promise.all(returned), [true, true]);
    assert.equal(counters.values.get('returned'), 2, 'the hazard LastStep exists for');
    // Returned as the last step, each check runs in the same run as its apply.
    const last = gate();
    const stepped = ['A', 'B'].map((actor) =>
      engine.exec([actor], async () => {
        await last.opened;
        return bounded('stepped', actor);
      }),
    );
    last.open();
    assert.deepEqual(await Promise.all(stepped), [true, false]);
    assert.equal(counters.values.get('stepped'), 1);
    // A last step that throws refuses the message like any decision and lets its actors go.
    const refused = engine.exec(['A'], async () => () => {
      throw new Error('refused');
    });
    await assert.rejects(refused, /refused/);
    assert.equal(await engine.exec(['A'], () => ({ events: [add('A', 1)], reply: () => counters.values.get('A') })), 3);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the clock only once every mailbox the message names is held', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine } = await openCounterEngine(dir, clock);
    const slow = gate();
    const holder = engine.exec(['b'], async () => {
      await slow.opened;
      return { events: [add('b', 1)], reply: () => undefined };
    });
    const readings: number[] = [];
    const waiting = engine.exec(['a', 'b'], (at) => {
      readings.push(at);
      return { events: [add('a', 1)], reply: () => undefined };
    });
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(5_000);
    const expected = clock.now();
    slow.open();
    await Promise.all([holder, waiting]);
    assert.deepEqual(readings, [expected]);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops (fatal) when a reply throws after its events were applied, so no snapshot makes them durable', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const a = await openCounterEngine(dir, clock);
    await a.engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await assert.rejects(
      a.engine.exec(['x'], () => ({
        events: [add('x', 5)],
        reply: () => {
          throw new Error('reply rendering failed');
        },
      })),
    );
    assert.deepEqual(a.fatal, ['a decision failed after it was applied']);
    assert.ok(a.reports.some((line) => line.startsWith('fatal: a decision failed after it was applied: Error: reply rendering failed')));
    // From now on nothing is accepted and nothing is snapshotted.
    await assert.rejects(a.engine.exec(['y'], () => ({ events: [add('y', 1)], reply: () => undefined })), EngineClosedError);
    await assert.rejects(a.engine.snapshot(), EngineClosedError);
    await a.engine.close();
    const b = await openCounterEngine(dir, clock);
    assert.equal(b.counters.values.get('x'), 1, 'only the acknowledged change survives');
    await b.engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stops (fatal) when extra events throw after the decision was applied', async () => {
    const dir = tempDir();
    const { engine, fatal } = await openCounterEngine(dir, new ManualClock());
    await assert.rejects(
      engine.exec(
        ['x'],
        () => ({ events: [add('x', 5)], reply: () => 'ok' }),
        () => {
          throw new Error('extra failed');
        },
      ),
    );
    assert.deepEqual(fatal, ['a decision failed after it was applied']);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('treats a reply that throws with no events as a plain refusal', async () => {
    const dir = tempDir();
    const { engine, fatal } = await openCounterEngine(dir, new ManualClock());
    await assert.rejects(
      engine.exec(['x'], () => ({
        events: [],
        reply: () => {
          throw new Error('not found');
        },
      })),
      /not found/,
    );
    assert.deepEqual(fatal, []);
    await engine.exec(['x'], () => ({ events: [add('x', 1)], reply: () => undefined }));
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the messages that were waiting for their actor when a fatal failure happened', async () => {
    const dir = tempDir();
    const { engine, counters, fatal } = await openCounterEngine(dir, new ManualClock());
    const failing = engine.exec(['x'], async () => ({
      events: [add('x', 1)],
      reply: () => {
        throw new Error('reply rendering failed');
      },
    }));
    const waiting = engine.exec(['x'], () => ({ events: [add('x', 10)], reply: () => counters.values.get('x') }));
    await assert.rejects(failing);
    await assert.rejects(waiting, EngineClosedError);
    assert.deepEqual(fatal, ['a decision failed after it was applied']);
    assert.equal(engine.lastSeq, 0);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
