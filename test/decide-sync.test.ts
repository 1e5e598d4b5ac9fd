// Decisions never wait (issue 37), held by the type checker: a command's decision, a
// message's `Decide` and a timer handler return their events, never a promise. While a
// decision runs its actors are held; were it to await, every message for them would wait
// behind crypto or a key-set fetch, and a check it made before the await (a session still
// live, an environment's intake) could be overtaken by a decision applied in between. What
// is slow belongs in `prepare`, which runs before anything is held.
//
// Each `@ts-expect-error` below marks an awaiting decision the build must refuse: should the
// contract ever accept one again, the directive is unused and `npm run build` fails.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ManualClock } from '../src/engine/clock.js';
import type { Command, Decide, StateMachine } from '../src/engine/state-machine.js';
import { add, openCounterEngine, tempDir, type CounterEvent, type Counters, type CounterTimer } from './support/counter-machine.js';

const awaitingCommand: Command<Counters, undefined, number, CounterEvent> = {
  name: 'awaiting',
  actors: () => ['a'],
  // @ts-expect-error a decision that awaits is not a decision: its slow part is `prepare`.
  decide: async () => ({ events: [add('a', 1)], reply: () => 1 }),
};

// @ts-expect-error what `Engine.exec` decides is synchronous too.
const awaitingDecide: Decide<CounterEvent, number> = async () => ({ events: [add('a', 1)], reply: () => 1 });

// @ts-expect-error a timer handler decides with its actors held: it does not await either.
const awaitingTimer: StateMachine<CounterEvent, CounterTimer>['onTimer'] = async () => [add('a', 1)];

/** The same command with its slow part where it belongs. */
const preparedCommand: Command<Counters, undefined, number | undefined, CounterEvent, number> = {
  name: 'prepared',
  prepare: async () => 1,
  actors: () => ['a'],
  decide: (_input, counters, _at, n) => ({ events: [add('a', n)], reply: () => counters.values.get('a') }),
};

describe('decisions never wait', () => {
  it('compiles only a synchronous decide; a prepared command runs, its decision synchronous', async () => {
    // The refused shapes exist only for the type checker.
    assert.equal(typeof awaitingCommand.decide, 'function');
    assert.equal(typeof awaitingDecide, 'function');
    assert.equal(typeof awaitingTimer, 'function');
    const dir = tempDir();
    const { engine } = await openCounterEngine(dir, new ManualClock());
    assert.equal(await engine.run(preparedCommand, undefined, (a) => a), 1);
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });
});
