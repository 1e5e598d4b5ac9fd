// Where an engine is in its life, which every part of it consults: applying stored entries
// (recovery, or a rebuild), open, closed to new work, or failed (memory may be ahead of the
// log). One object, shared by the parts, so that a close or a failure stops them all at once.

export class EngineClosedError extends Error {
  constructor() {
    super('the engine is closed');
  }
}

export class Lifecycle {
  /** Applying stored entries: nothing applied is armed, run or reported. */
  recovering = false;
  /** No new work is accepted (closing, or failed). */
  closed = false;
  /** Memory may be ahead of the log; set once, with `closed`. */
  failed = false;
  /** The store is closed (or being closed): `close` has nothing more to do. */
  storeClosed = false;

  /** An applied event takes effect beyond memory: timers are armed, effects scheduled, failures reported. */
  get live(): boolean {
    return !this.recovering && !this.closed;
  }
}

export function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
