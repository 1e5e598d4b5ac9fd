// Scheduling: durable timers, and effects after commit. Both are pending items of the
// recovered state (their tables apply the `$timer.*` and `$effect.*` events of the log); here
// they are fired and run, their outcomes logged (a timer's handler events, an effect's
// settle events, each held on its actors), and their failures retried with backoff or, after
// MAX_ATTEMPTS, parked as dead. What happens beyond memory (arming the clock, starting a run,
// reporting) happens only while the engine is live: a replay repeats none of it.
import type { Clock } from './clock.js';
import { EffectsFullError, EffectTable, type EffectRunner } from './effects.js';
import { asError, type Lifecycle } from './lifecycle.js';
import { LogFullError } from './log.js';
import type { Report } from './report.js';
import type { Decide, DomainEvent, Effect, EngineEvent, StateMachine, Timer } from './state-machine.js';
import { TimerTable } from './timers.js';
import type { LoggedEvent } from './executor.js';

/** Effects recorded and not yet done (or dead); past it, decisions adding effects get EffectsFullError. */
export const MAX_PENDING_EFFECTS = 10_000;
/** Failed runs of an effect, or deliveries of a timer, before it is parked as dead. */
export const MAX_ATTEMPTS = 8;
/** Backoff after the n-th failure: 1 s, 2 s, 4 s ... capped at 5 minutes. */
export function retryDelayMs(failures: number): number {
  return Math.min(1000 * 2 ** (failures - 1), 5 * 60_000);
}

type Ev<K extends EngineEvent<unknown>['type']> = Extract<EngineEvent<unknown>, { type: K }>;

/** What scheduling needs of the rest of the engine. */
export interface SchedulingParts<E extends DomainEvent, T> {
  clock: Clock;
  machine: StateMachine<E, T>;
  lifecycle: Lifecycle;
  report: Report;
  /** Pending effects past which decisions adding effects are refused. */
  maxPendingEffects: number;
  /** Decides and logs an entry held on `actors` (the executor's `exec`). */
  exec: (actors: readonly string[], decide: Decide<E, undefined>) => Promise<undefined>;
  /** Resolves once the entry being appended now is durable. */
  appendedDurable: () => Promise<void>;
}

/** A failure of a timer's or an effect's work, with what retrying or parking it needs. */
interface Failure<T> {
  what: string;
  err: Error;
  attempts: number;
  current: () => boolean;
  again: () => void;
  dead: (error: string) => EngineEvent<T>;
  retry: (attempt: number, due: number, error: string) => EngineEvent<T>;
}

export class Scheduler<E extends DomainEvent, T> {
  readonly timers: TimerTable<T>;
  readonly effects: EffectTable<E>;
  readonly #parts: SchedulingParts<E, T>;
  readonly #lifecycle: Lifecycle;

  constructor(parts: SchedulingParts<E, T>) {
    this.#parts = parts;
    this.#lifecycle = parts.lifecycle;
    this.effects = new EffectTable<E>(parts.clock, parts.maxPendingEffects, {
      closed: () => this.#lifecycle.closed,
      settle: (effect, runner, outcome) => this.#settleEffect(effect, runner, outcome),
      failed: (effect, err) => this.#effectFailed(effect, asError(err)),
      report: (message, fields) => parts.report(message, fields),
    });
    this.timers = new TimerTable<T>(parts.clock, (due) => {
      for (const timer of due) this.#fireTimer(timer);
    });
  }

  /** After recovery: arms the earliest timer and schedules every pending effect. */
  start(): void {
    this.timers.arm();
    for (const effect of this.effects.values()) this.effects.schedule(effect);
  }

  /** No more timers fire (effects stop at the lifecycle's `closed`). */
  stop(): void {
    this.timers.stop();
  }

  /** Applies a `$timer.*` or `$effect.*` event to the pending tables. */
  apply(event: EngineEvent<unknown>): void {
    switch (event.type) {
      case '$timer.set': {
        this.timers.add((event as Ev<'$timer.set'>).timer as Timer<T>);
        this.#armTimers();
        return;
      }
      case '$timer.done':
      case '$timer.cancel':
        this.timers.remove((event as Ev<'$timer.done'>).id);
        return;
      case '$timer.retry': {
        const { id, attempt, due, error } = event as Ev<'$timer.retry'>;
        const timer = this.timers.get(id);
        if (timer === undefined) return;
        this.timers.add({ ...timer, attempt, due });
        this.#armTimers();
        if (this.#lifecycle.live) this.#reportRetry('timer', id, undefined, attempt, due, error);
        return;
      }
      case '$timer.dead': {
        const { timer, error } = event as Ev<'$timer.dead'>;
        this.timers.remove(timer.id);
        if (this.#lifecycle.live) this.#reportDead('timer', timer.id, undefined, error);
        return;
      }
      default:
        this.#applyEffectEvent(event);
    }
  }

  #applyEffectEvent(event: EngineEvent<unknown>): void {
    switch (event.type) {
      case '$effect.add': {
        const { effect } = event as Ev<'$effect.add'>;
        this.effects.set(effect);
        // Applied just before its entry is appended: it runs once that entry is durable.
        if (this.#lifecycle.live) {
          this.#parts.appendedDurable().then(
            () => this.effects.schedule(effect),
            () => undefined, // the log failed: the process stops
          );
        }
        return;
      }
      case '$effect.done':
        this.effects.delete((event as Ev<'$effect.done'>).id);
        return;
      case '$effect.retry': {
        const { id, attempt, due, error } = event as Ev<'$effect.retry'>;
        const effect = this.effects.get(id);
        if (effect === undefined) return;
        const next: Effect = { ...effect, attempt, due };
        this.effects.set(next);
        if (this.#lifecycle.live) {
          this.#reportRetry('effect', id, effect.kind, attempt, due, error);
          this.effects.schedule(next);
        }
        return;
      }
      case '$effect.dead': {
        const { effect, error } = event as Ev<'$effect.dead'>;
        this.effects.delete(effect.id);
        if (this.#lifecycle.live) this.#reportDead('effect', effect.id, effect.kind, error);
        return;
      }
      default:
        throw new Error(`not an event of timers or effects: ${event.type}`);
    }
  }

  /** A timer or an effect failed and waits for its next attempt (reported live only: a replay repeats no report). */
  #reportRetry(what: 'timer' | 'effect', id: string, kind: string | undefined, attempt: number, due: number, error: string): void {
    const retryAt = new Date(due).toISOString();
    const name = kind === undefined ? `${what} ${id}` : `${what} ${id} (${kind})`;
    this.#parts.report(`${name} failed (attempt ${attempt} of ${MAX_ATTEMPTS}): ${error}; retry at ${retryAt}`, {
      event: `${what}.retry`,
      level: 'warn',
      id,
      kind,
      attempt,
      error,
      retryAt,
    });
  }

  /** A timer or an effect failed its last attempt and is parked dead. */
  #reportDead(what: 'timer' | 'effect', id: string, kind: string | undefined, error: string): void {
    const name = kind === undefined ? `${what} ${id}` : `${what} ${id} (${kind})`;
    this.#parts.report(`${name} parked dead after ${MAX_ATTEMPTS} failed attempts: ${error}`, { event: `${what}.dead`, level: 'error', id, kind, error });
  }

  #armTimers(): void {
    if (this.#lifecycle.live) this.timers.arm();
  }

  #fireTimer(timer: Timer<T>): void {
    if (this.#lifecycle.closed) return;
    this.#parts
      .exec(timer.actors, (at) => {
        // Cancelled, replaced or done by another path in the meantime: nothing to do.
        if (this.timers.get(timer.id) !== timer) return { events: [], reply: () => undefined };
        const produced = this.#parts.machine.onTimer(timer.message, at, timer.id);
        const events: Array<LoggedEvent<E>> = [{ type: '$timer.done', id: timer.id }];
        for (const event of produced) events.push(event);
        return { events, reply: () => undefined };
      })
      .catch((err: unknown) => this.#timerFailed(timer, asError(err)));
  }

  /** A timer whose handler failed: retried or parked (#retryOrPark); it stays pending in the log meanwhile. */
  #timerFailed(timer: Timer<T>, err: Error): void {
    void this.#retryOrPark({
      what: `timer ${timer.id}`,
      err,
      attempts: timer.attempt ?? 0,
      current: () => this.timers.get(timer.id) === timer,
      again: () => this.#fireTimer(timer),
      dead: (error) => ({ type: '$timer.dead', timer, error }),
      retry: (attempt, due, error) => ({ type: '$timer.retry', id: timer.id, attempt, due, error }),
    });
  }

  /** Logs an effect's outcome, held on its actors, with the events its runner's `settle` adds. */
  async #settleEffect(effect: Effect, runner: EffectRunner<E, never, unknown>, outcome: unknown): Promise<void> {
    await this.#parts.exec(effect.actors, (at) => {
      if (this.effects.get(effect.id) !== effect) return { events: [], reply: () => undefined };
      const events: Array<LoggedEvent<E>> = [{ type: '$effect.done', id: effect.id, outcome }];
      if (runner.settle !== undefined) for (const event of runner.settle(effect, outcome, at)) events.push(event);
      return { events, reply: () => undefined };
    });
  }

  /** An effect whose run failed: retried or parked (#retryOrPark); effects are at least once. */
  async #effectFailed(effect: Effect, err: Error): Promise<void> {
    await this.#retryOrPark({
      what: `effect ${effect.id}`,
      err,
      attempts: effect.attempt,
      current: () => this.effects.get(effect.id) === effect,
      again: () => this.effects.schedule(effect),
      dead: (error) => ({ type: '$effect.dead', effect, error }),
      retry: (attempt, due, error) => ({ type: '$effect.retry', id: effect.id, attempt, due, error }),
    });
  }

  /**
   * The one retry-or-park policy of timers and effects: a failure is logged as a retry
   * after retryDelayMs(attempt) or, at MAX_ATTEMPTS, as dead. Overload, and a log that
   * refuses the outcome, are not failures of the work: it is tried again after the first
   * backoff step without counting an attempt. Nothing is logged for a timer or effect that
   * is no longer the current one (it finished or was replaced meanwhile).
   */
  async #retryOrPark(failure: Failure<T>): Promise<void> {
    if (this.#lifecycle.closed) return;
    const clock = this.#parts.clock;
    const retryLater = (why: Error): void => {
      if (this.#lifecycle.closed) return;
      this.#parts.report(`${failure.what} deferred: ${why.message}`, { event: 'work.deferred', level: 'warn', what: failure.what, error: why.message });
      clock.schedule(clock.now() + retryDelayMs(1), () => {
        if (failure.current()) failure.again();
      });
    };
    if (isOverload(failure.err)) {
      retryLater(failure.err);
      return;
    }
    const attempt = failure.attempts + 1;
    const error = failure.err.message;
    try {
      await this.#parts.exec([], (at) => {
        if (!failure.current()) return { events: [], reply: () => undefined };
        return { events: [attempt >= MAX_ATTEMPTS ? failure.dead(error) : failure.retry(attempt, at + retryDelayMs(attempt), error)], reply: () => undefined };
      });
    } catch (logErr) {
      retryLater(asError(logErr));
    }
  }
}

/** Refusals of the moment, not failures of the work itself. */
function isOverload(err: Error): boolean {
  return err instanceof LogFullError || err instanceof EffectsFullError;
}
