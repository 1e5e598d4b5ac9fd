// Before a test asserts that something has NOT happened yet (a timer short of its due time,
// a cancelled timer), the work a premature firing would have started must have had its
// chance to show. A timer fires inside clock.advance, but its decision is applied turns
// later, and engine.settled() only waits for what was applied already: asserting right after
// advance (or right after settled()) would pass however early the timer fired.

/** What quiesce reads of an engine (the test engines and the service's have both). */
export interface Quiescent {
  readonly lastSeq: number;
  settled(): Promise<void>;
}

/** Consecutive event-loop turns that must append nothing before the engine counts as idle. */
const QUIET_TURNS = 5;
/** Turns after which an engine still appending is a test failure, not a wait. */
const MAX_TURNS = 10_000;

/**
 * Yields event-loop turns, waiting for the log to be durable after each, until QUIET_TURNS
 * turns in a row append no entry: a decision started by a timer or effect has then been
 * applied and logged, or was never started. (A decision waiting on I/O outside the engine,
 * such as a crypto worker or a socket, may take longer; such tests wait for that I/O
 * themselves.)
 */
export async function quiesce(engine: Quiescent): Promise<void> {
  let quiet = 0;
  for (let turn = 0; turn < MAX_TURNS; turn++) {
    const seq = engine.lastSeq;
    await new Promise((resolve) => setImmediate(resolve));
    await engine.settled();
    quiet = engine.lastSeq === seq ? quiet + 1 : 0;
    if (quiet === QUIET_TURNS) return;
  }
  throw new Error(`the engine was still appending after ${MAX_TURNS} turns`);
}
