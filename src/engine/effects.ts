// Durable effects, beside the timer table: an effect is recorded in the entry of the change
// that causes it, runs once that entry is durable (EFFECT_CONCURRENCY at a time, through the
// runner registered for its kind), and its outcome is logged. The pending set is part of the
// recovered state, so an effect whose outcome was not logged runs again after a restart.
// The engine applies the `$effect.*` events to this table; logging outcomes and failures is
// the engine's (it holds the effect's actors, and shares the retry policy with timers).
import type { Clock } from './clock.js';
import { ChangeLog, ChangeTrackingMap } from './change-log.js';
import type { Effect, EngineEvent } from './state-machine.js';
import type { Report } from './report.js';

/** Effects running at once. */
export const EFFECT_CONCURRENCY = 16;

/** Runs the effects of one kind. */
export interface EffectRunner<E, P, O> {
  /** Does the work; `attempt` counts from 1. A throw (or rejection) is retried with backoff. */
  run(payload: P, attempt: number): Promise<O>;
  /** Domain events logged with the outcome, in one entry held on the effect's actors. */
  settle?(effect: Effect, outcome: O, at: number): E[];
}

/** Too many effects wait to run: decisions that add more are refused (the HTTP front answers 429). */
export class EffectsFullError extends Error {
  constructor(readonly limit: number) {
    super(`${limit} effects are pending; refusing to add more`);
  }
}

/** What the table asks of the engine. */
export interface EffectHost<E> {
  /** No new work is accepted. */
  closed(): boolean;
  /** Logs a run's outcome (held on the effect's actors); rejects when it could not. */
  settle(effect: Effect, runner: EffectRunner<E, never, unknown>, outcome: unknown): Promise<void>;
  /** A run, or the logging of its outcome, failed: retry or park it. */
  failed(effect: Effect, err: unknown): Promise<void>;
  report: Report;
}

export class EffectTable<E> {
  readonly #pending = new ChangeTrackingMap<string, Effect>();
  /** Ids added or removed since the last snapshot capture (bounded by the entries between snapshots). */
  readonly #changed = new ChangeLog<string>();
  readonly #runners = new Map<string, EffectRunner<E, never, unknown>>();
  /** Ids of pending effects whose time has come, waiting for a free run slot (at most `limit`). */
  #due: string[] = [];
  #running = 0;

  constructor(
    private readonly clock: Clock,
    /** Pending effects past which decisions adding effects are refused. */
    readonly limit: number,
    private readonly host: EffectHost<E>,
  ) {
    this.#pending.track(this.#changed);
  }

  get size(): number {
    return this.#pending.size;
  }

  values(): IterableIterator<Effect> {
    return this.#pending.values();
  }

  get(id: string): Effect | undefined {
    return this.#pending.get(id);
  }

  set(effect: Effect): void {
    this.#pending.set(effect.id, effect);
  }

  delete(id: string): void {
    this.#pending.delete(id);
  }

  /** The effects added or removed since the last call (undefined: removed), for a snapshot. */
  takeChanges(): Array<[string, Effect | undefined]> {
    return this.#pending.takeChanges();
  }

  /** What is pending now is what the snapshot holds: no changes to write. */
  forgetChanges(): void {
    this.#changed.clear();
  }

  /** Registers the runner of one kind; before recovery, so resumed effects find it. */
  register(kind: string, runner: EffectRunner<E, never, unknown>): void {
    this.#runners.set(kind, runner);
  }

  /** Refuses a decision whose new effects would pass the limit. */
  checkRoom(events: ReadonlyArray<{ type: string } | EngineEvent<unknown>>): void {
    if (this.#pending.size + events.length <= this.limit) return;
    let adding = 0;
    for (const event of events) if (event.type === '$effect.add') adding++;
    if (adding > 0 && this.#pending.size + adding > this.limit) throw new EffectsFullError(this.limit);
  }

  /** Queues a pending effect to run at its due time. */
  schedule(effect: Effect): void {
    if (this.host.closed()) return;
    if (effect.due <= this.clock.now()) {
      this.#due.push(effect.id);
      this.#pump();
    } else {
      this.clock.schedule(effect.due, () => {
        if (this.#pending.get(effect.id) === effect) this.schedule(effect);
      });
    }
  }

  #pump(): void {
    while (this.#running < EFFECT_CONCURRENCY && this.#due.length > 0 && !this.host.closed()) {
      const effect = this.#pending.get(this.#due.shift()!);
      if (effect === undefined) continue;
      const runner = this.#runners.get(effect.kind);
      if (runner === undefined) {
        // Stays pending (and resumes after a restart that registers the runner).
        this.host.report(`effect ${effect.id}: no runner registered for kind ${effect.kind}`, { event: 'effect.unrunnable', level: 'error', effectId: effect.id, kind: effect.kind });
        continue;
      }
      this.#running++;
      this.#run(effect, runner).finally(() => {
        this.#running--;
        this.#pump();
      });
    }
  }

  async #run(effect: Effect, runner: EffectRunner<E, never, unknown>): Promise<void> {
    try {
      const outcome = await runner.run(effect.payload as never, effect.attempt + 1);
      await this.host.settle(effect, runner, outcome);
    } catch (err) {
      await this.host.failed(effect, err);
    }
  }
}
