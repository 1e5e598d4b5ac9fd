// Actor exclusion and ordering, commands that prepare before they hold anything, and what
// happens when a decision fails after its events were applied.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ManualClock } from '../src/engine/clock.js';
import { COMMAND_TRIES, ContendedError, EngineClosedError, ReentrantExecError } from '../src/engine/engine.js';
import { FactsOutdatedError, type Command } from '../src/engine/state-machine.js';
import { add, openCounterEngine, tempDir, type CounterEvent, type Counters } from './support/counter-machine.js';

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** A command on `actor` whose prepare awaits `gate` and yields `n`; its decision adds n to the actor. */
function slowAdd(counters: Counters, actor: string, gate: Promise<void>, n: number, started?: string[]): Command<Counters, undefined, number | undefined, CounterEvent, number> {
  return {
    name: `slow add to ${actor}`,
    prepare: async () => {
      await gate;
      return n;
    },
    actors: () => [actor],
    decide: (_input, _state, _at, prepared) => {
      started?.push(`${actor}${n}`);
      return { events: [add(actor, prepared)], reply: () => counters.values.get(actor) };
    },
  };
}

const asIs = <R>(result: R): R => result;

describe('engine actors', () => {
  it('holds no actor while a command prepares, and decides each message in the run that sends it, in the order sent', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    const started: string[] = [];
    const slow = gate();
    const prepared = engine.run(slowAdd(counters, 'a', slow.opened, 1000, started), undefined, asIs);
    // However many actors a message names, it holds them, decides and applies before exec
    // returns: no message ever waits for an actor, so none can be overtaken by a later one.
    const first = engine.exec(['a', 'c'], () => {
      started.push('a1');
      return { events: [add('a', 1)], reply: () => counters.values.get('a') };
    });
    assert.deepEqual(started, ['a1']);
    assert.equal(counters.values.get('a'), 1);
    const second = engine.exec(['a'], () => {
      started.push('a2');
      return { events: [add('a', 10)], reply: () => counters.values.get('a') };
    });
    const third = engine.exec(['b', 'a', 'b'], () => {
      started.push('ab3');
      return { events: [add('a', 100), add('b', 1)], reply: () => counters.values.get('a') };
    });
    assert.deepEqual(started, ['a1', 'a2', 'ab3']);
    assert.deepEqual(await Promise.all([first, second, third]), [1, 11, 111]);
    // Many turns pass (disk writes complete meanwhile): the prepare holds a up for nobody.
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    assert.deepEqual(started, ['a1', 'a2', 'ab3']);
    slow.open();
    assert.equal(await prepared, 1111);
    assert.deepEqual(started, ['a1', 'a2', 'ab3', 'a1000']);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('does not delay a message on actor B, nor on actor A, while a command on A prepares', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    const slow = gate();
    const onA = engine.run(slowAdd(counters, 'A', slow.opened, 1), undefined, asIs);
    // B's message is decided, applied, made durable and answered while A's command prepares; so is one on A.
    const onB = await engine.exec(['B'], () => ({ events: [add('B', 2)], reply: () => counters.values.get('B') }));
    assert.equal(onB, 2);
    assert.equal(engine.durableSeq, 1);
    assert.equal(counters.values.get('A'), undefined);
    assert.equal(await engine.exec(['A'], () => ({ events: [add('A', 5)], reply: () => counters.values.get('A') })), 5);
    slow.open();
    assert.equal(await onA, 6);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('decides a prepared command in the run that applies it, so its check against state other actors change is not overtaken', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    // At most one unit in `total`, which decisions on actors A and B both add to (as an
    // environment's intake is added to by decisions on different accounts). The prepare
    // checks the room on the state unheld, as a fact; the decision may trust it or check again.
    const room = (total: string) => (counters.values.get(total) ?? 0) < 1;
    const bounded = (total: string, actor: string, hop: Promise<void>, checksAgain: boolean): Command<Counters, undefined, boolean, CounterEvent, boolean> => ({
      name: `bounded ${actor}`,
      prepare: async () => {
        const roomThen = room(total);
        await hop;
        return roomThen;
      },
      actors: () => [actor],
      decide: (_input, _state, _at, roomThen) => {
        const fits = checksAgain ? room(total) : roomThen;
        return { events: fits ? [add(total, 1), add(actor, 1)] : [], reply: () => fits };
      },
    });
    // A fact about state other decisions change is stale by the time the decision holds its actor: both pass.
    const hop = gate();
    const trusted = ['A', 'B'].map((actor) => engine.run(bounded('trusted', actor, hop.opened, false), undefined, asIs));
    hop.open();
    assert.deepEqual(await Promise.all(trusted), [true, true]);
    assert.equal(counters.values.get('trusted'), 2, 'the hazard a decision checks its facts again for');
    // Checked again as it decides, each check runs in the same run as its apply.
    const last = gate();
    const checked = ['A', 'B'].map((actor) => engine.run(bounded('checked', actor, last.opened, true), undefined, asIs));
    last.open();
    assert.deepEqual(await Promise.all(checked), [true, false]);
    assert.equal(counters.values.get('checked'), 1);
    // A decision that throws after its prepare refuses the message like any decision and lets its actors go.
    const refusing: Command<Counters, undefined, never, CounterEvent, undefined> = {
      name: 'refusing',
      prepare: async () => undefined,
      actors: () => ['A'],
      decide: () => {
        throw new Error('refused');
      },
    };
    await assert.rejects(engine.run(refusing, undefined, asIs), /refused/);
    assert.equal(await engine.exec(['A'], () => ({ events: [add('A', 1)], reply: () => counters.values.get('A') })), 3);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prepares a command again when its decision finds the facts outdated, a few times at most', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    let prepared = 0;
    // The fact is the value of `v` when prepared; `v` moves once between the first prepare and its decision.
    const current: Command<Counters, undefined, number, CounterEvent, number> = {
      name: 'current',
      prepare: async () => {
        prepared++;
        const seen = counters.values.get('v') ?? 0;
        if (prepared === 1) await engine.exec(['v'], () => ({ events: [add('v', 1)], reply: () => undefined }));
        return seen;
      },
      actors: () => ['v'],
      decide: (_input, _state, _at, seen) => {
        if (seen !== (counters.values.get('v') ?? 0)) throw new FactsOutdatedError('current');
        return { events: [add('v', 10)], reply: () => seen };
      },
    };
    assert.equal(await engine.run(current, undefined, asIs), 1);
    assert.equal(prepared, 2);
    assert.equal(counters.values.get('v'), 11);
    const never: Command<Counters, undefined, number, CounterEvent, undefined> = {
      name: 'never current',
      prepare: async () => (prepared++, undefined),
      actors: () => ['v'],
      decide: () => {
        throw new FactsOutdatedError('never current');
      },
    };
    prepared = 0;
    await assert.rejects(engine.run(never, undefined, asIs), ContendedError);
    assert.equal(prepared, COMMAND_TRIES);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses a message sent while a decision holds its actors, and the decision goes on', async () => {
    const dir = tempDir();
    const { engine, counters } = await openCounterEngine(dir, new ManualClock());
    // Run inside the decision, the inner message would decide on actors another decision is
    // in the middle of changing; sent after it (as an effect), it is an ordinary message.
    let inner: Promise<unknown> | undefined;
    const outer = engine.exec(['a'], () => {
      inner = engine.exec(['a'], () => ({ events: [add('a', 100)], reply: () => undefined }));
      inner.catch(() => undefined);
      return { events: [add('a', 1)], reply: () => counters.values.get('a') };
    });
    await assert.rejects(inner!, ReentrantExecError);
    assert.equal(await outer, 1);
    assert.equal(await engine.exec(['a'], () => ({ events: [add('a', 10)], reply: () => counters.values.get('a') })), 11);
    assert.equal(engine.lastSeq, 2);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the clock as it decides: a prepared command sees the time after its prepare', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const { engine } = await openCounterEngine(dir, clock);
    const readings: number[] = [];
    const slow = gate();
    const command: Command<Counters, undefined, undefined, CounterEvent, undefined> = {
      name: 'timed',
      prepare: async (_input, _state, at) => {
        readings.push(at);
        await slow.opened;
        return undefined;
      },
      actors: () => ['a'],
      decide: (_input, _state, at) => {
        readings.push(at);
        return { events: [add('a', 1)], reply: () => undefined };
      },
    };
    const decided = engine.run(command, undefined, asIs);
    const before = clock.now();
    clock.advance(5_000);
    slow.open();
    await decided;
    assert.deepEqual(readings, [before, before + 5_000]);
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

  it('refuses the messages sent after a fatal failure, in the same run too', async () => {
    const dir = tempDir();
    const { engine, counters, fatal } = await openCounterEngine(dir, new ManualClock());
    const failing = engine.exec(['x', 'y'], () => ({
      events: [add('x', 1)],
      reply: () => {
        throw new Error('reply rendering failed');
      },
    }));
    const after = engine.exec(['x'], () => ({ events: [add('x', 10)], reply: () => counters.values.get('x') }));
    await assert.rejects(failing);
    await assert.rejects(after, EngineClosedError);
    assert.deepEqual(fatal, ['a decision failed after it was applied']);
    assert.equal(engine.lastSeq, 0);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
