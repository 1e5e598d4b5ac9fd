// Executing commands on held actors: the engine's hot path.
//
// A message is handled by `exec`: in the run that sends it, the executor holds the actors the
// message names, reads the clock, asks the handler to decide (synchronously: what is slow a
// command prepares before it holds anything), applies the resulting events to memory, appends
// them as ONE log entry, lets the actors go, and answers once the entry is durable. Holding
// lasts one synchronous stretch, so no other message can run between a decision and its apply,
// and none ever waits for an actor: messages on an actor are decided in the order they are
// sent, and what bounds the work in flight is the log's backlog (LogFullError) and the pending
// effects (EffectsFullError). A handler that throws changes nothing; a throw after the first
// event is applied stops the process.
import type { Clock } from './clock.js';
import type { EffectTable } from './effects.js';
import { EngineClosedError, asError, type Lifecycle } from './lifecycle.js';
import { LogFullError, type LogEntry, type WriteAheadLog } from './log.js';
import { FactsOutdatedError, type Command, type Decide, type Decision, type DomainEvent, type EngineEvent, type StateMachine } from './state-machine.js';

/** What the log holds: the domain's events and the engine's own. */
export type LoggedEvent<E> = E | EngineEvent<unknown>;
export type LoggedEntry<E> = LogEntry<LoggedEvent<E>>;
/** Engine events a decision's entry adds, computed from its reply (the idempotency record). */
export type ExtraEvents<R> = (reply: R, at: number) => EngineEvent<unknown>[];

/** Tries a command gets (its facts prepared again) before it is refused as contended. */
export const COMMAND_TRIES = 4;

/** A decision (or its apply) sent a message itself: it would run inside the one that holds its actors. */
export class ReentrantExecError extends Error {
  constructor() {
    super('a message was sent while a decision held its actors: send it after the decision, as an effect');
  }
}

/**
 * What a command read moved under it on every try (COMMAND_TRIES): nothing was decided, and
 * the same request may simply be sent again (the HTTP front answers 409 with Retry-After).
 */
export class ContendedError extends Error {
  constructor(command: string, tries: number, last: Error) {
    super(`${command}: what it reads changed on each of its ${tries} tries (${last.message})`, { cause: last });
  }
}

/** A command with its input and what makes its reply, as each of its tries runs it. */
interface CommandRun<S, I, R, E extends DomainEvent, F, V> {
  command: Command<S, I, R, E, F>;
  input: I;
  render: (result: R) => V;
  extra: ExtraEvents<V> | undefined;
}

/** What the executor needs of the rest of the engine. */
export interface ExecutorParts<E extends DomainEvent, S> {
  machine: S;
  clock: Clock;
  log: WriteAheadLog<LoggedEvent<E>>;
  lifecycle: Lifecycle;
  /** Applies one event to memory (the machine's state, or the engine's own tables). */
  apply: (event: LoggedEvent<E>, at: number) => void;
  /** The pending effects, which refuse a decision whose new effects would pass their limit. */
  effects: Pick<EffectTable<E>, 'checkRoom'>;
  /** Memory may be ahead of the log: stops everything; returns the error to throw. */
  fatal: (what: string, err: Error) => Error;
  /** An entry of this process is durable (the snapshot policy counts them). */
  committed: () => void;
}

/** A command's decision with its reply rendered. */
function rendered<E, R, V>(decided: Decision<E, R>, render: (result: R) => V): Decision<E, V> {
  return { events: decided.events, reply: () => render(decided.reply()) };
}

export class Executor<E extends DomainEvent, T, S extends StateMachine<E, T>> {
  readonly clock: Clock;
  readonly #machine: S;
  readonly #log: WriteAheadLog<LoggedEvent<E>>;
  readonly #lifecycle: Lifecycle;
  readonly #parts: ExecutorParts<E, S>;
  /** A decision is running: from holding its actors until it lets them go. */
  #deciding = false;

  constructor(parts: ExecutorParts<E, S>) {
    this.#parts = parts;
    this.clock = parts.clock;
    this.#machine = parts.machine;
    this.#log = parts.log;
    this.#lifecycle = parts.lifecycle;
  }

  /**
   * Handles one message for `actors`, decided in this run. The decision is applied and logged
   * as one entry; the promise resolves with the reply once that entry is durable. `extra` may
   * add engine events computed from the reply (the idempotency record) to the same entry.
   */
  exec<R>(actors: readonly string[], decide: Decide<E, R>, extra?: ExtraEvents<R>): Promise<R> {
    if (this.#lifecycle.closed) return Promise.reject(new EngineClosedError());
    if (!this.#log.hasRoom()) return Promise.reject(new LogFullError());
    if (this.#deciding) return Promise.reject(new ReentrantExecError());
    return this.#decide(new Set(actors), decide, extra);
  }

  /**
   * Runs a command: prepares its facts (before anything is held), names its actors and decides
   * as `exec` does, in the run that names them, the reply being `render` of the command's
   * result. A decision that finds the facts outdated (FactsOutdatedError) is prepared again,
   * at most COMMAND_TRIES tries in all; past the last it is refused with ContendedError,
   * having changed nothing.
   */
  run<I, R, V, F>(command: Command<S, I, R, E, F>, input: I, render: (result: R) => V, extra?: ExtraEvents<V>): Promise<V> {
    return this.#try({ command, input, render, extra }, 1, undefined);
  }

  /** Reads see only durable state: wait until everything applied so far is on disk. */
  settled(): Promise<void> {
    return this.#log.whenDurable(this.#log.lastSeq);
  }

  /** One try: `facts` as prepared for it (undefined: prepare them now). */
  #try<I, R, V, F>(run: CommandRun<S, I, R, E, F, V>, tries: number, facts: { value: F } | undefined): Promise<V> {
    const { command, input } = run;
    if (facts === undefined && command.prepare !== undefined) {
      let prepared: Promise<F>;
      try {
        prepared = command.prepare(input, this.#machine, this.clock.now());
      } catch (err) {
        return Promise.reject(err);
      }
      return prepared.then((value) => this.#try(run, tries, { value }));
    }
    // Command's facts default to undefined: a command without a prepare step decides on none.
    const value = facts?.value as F;
    let actors: readonly string[];
    try {
      actors = command.actors(input, this.#machine);
    } catch (err) {
      return Promise.reject(err);
    }
    const replied = this.exec(actors, (at) => rendered(command.decide(input, this.#machine, at, value), run.render), run.extra);
    return replied.catch((err: unknown) => {
      if (!(err instanceof FactsOutdatedError)) throw err;
      if (tries >= COMMAND_TRIES) throw new ContendedError(command.name, tries, err);
      return this.#try(run, tries + 1, undefined);
    });
  }

  /**
   * Holds `actors`, decides, applies the decision and appends it as one entry, all in this run,
   * so checks against shared indexes (unique addresses, references, an environment's totals)
   * cannot be overtaken in between; lets the actors go and answers once the entry is durable.
   */
  #decide<R>(actors: ReadonlySet<string>, decide: Decide<E, R>, extra: ExtraEvents<R> | undefined): Promise<R> {
    let seq = 0;
    let reply: R;
    this.#deciding = true;
    try {
      const at = this.clock.now();
      this.#machine.hold?.(actors);
      const decision = decide(at);
      const events = decision.events;
      this.#parts.effects.checkRoom(events);
      let applied = false;
      try {
        // From the first apply until the append, memory is ahead of the log: a throw in
        // between (an event, the reply, the extra events) would let a later snapshot make an
        // unlogged change durable, so it stops the process instead.
        this.#machine.hold?.(actors, 'writes');
        for (const event of events) {
          applied = true;
          this.#parts.apply(event, at);
        }
        reply = decision.reply();
        if (extra !== undefined) {
          for (const event of extra(reply, at)) {
            applied = true;
            this.#parts.apply(event, at);
            events.push(event);
          }
        }
        if (events.length > 0) seq = this.#log.append(at, events);
      } catch (err) {
        if (applied) throw this.#parts.fatal('a decision failed after it was applied', asError(err));
        throw err;
      }
    } catch (err) {
      return Promise.reject(err);
    } finally {
      this.#machine.hold?.(undefined);
      this.#deciding = false;
    }
    if (seq === 0) return this.settled().then(() => reply);
    return this.#log.whenDurable(seq).then(() => {
      this.#parts.committed();
      return reply;
    });
  }
}
