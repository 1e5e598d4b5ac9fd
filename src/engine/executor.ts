// Executing commands on held actors: the engine's hot path.
//
// A message is handled by `exec`: the executor holds the mailboxes of the actors the message
// names (in id order, so two messages that need the same actors cannot deadlock), reads the
// clock once, asks the handler to decide (synchronously: what is slow a command prepares
// before it holds anything), applies the resulting events to memory, appends them as ONE
// log entry, lets the next message in, and answers once the entry is durable. A handler that
// throws changes nothing; a throw after the first event is applied stops the process.
import type { Clock } from './clock.js';
import type { EffectTable } from './effects.js';
import { EngineClosedError, asError, type Lifecycle } from './lifecycle.js';
import { LogFullError, type LogEntry, type WriteAheadLog } from './log.js';
import { Mailbox } from './mailbox.js';
import { FactsOutdatedError, type Command, type Decide, type Decision, type DomainEvent, type EngineEvent, type StateMachine } from './state-machine.js';

/** What the log holds: the domain's events and the engine's own. */
export type LoggedEvent<E> = E | EngineEvent<unknown>;
export type LoggedEntry<E> = LogEntry<LoggedEvent<E>>;
/** Engine events a decision's entry adds, computed from its reply (the idempotency record). */
export type ExtraEvents<R> = (reply: R, at: number) => EngineEvent<unknown>[];

/** Tries a command gets (actors held or facts prepared again) before it is refused as contended. */
export const COMMAND_TRIES = 4;

/** Within one try: the actors the command needs changed while it waited for them. */
class ActorsChangedError extends Error {
  constructor(command: string) {
    super(`${command}: the actors it needs changed while it waited for them`);
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

/**
 * `ids` sorted (the order every message takes its actors in, against deadlock), each once:
 * an insertion sort of the two or three a payment names, where a Set and `sort` allocated
 * about a kilobyte a payment.
 */
function sortedOnce(ids: readonly string[]): string[] {
  const out: string[] = [];
  for (const id of ids) {
    if (out.includes(id)) continue;
    let at = out.length;
    out.push(id);
    for (; at > 0 && out[at - 1]! > id; at--) out[at] = out[at - 1]!;
    out[at] = id;
  }
  return out;
}

function idsOf(held: readonly Mailbox[]): Set<string> {
  const ids = new Set<string>();
  for (const mailbox of held) ids.add(mailbox.actorId);
  return ids;
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
  readonly #mailboxes = new Map<string, Mailbox>();

  constructor(parts: ExecutorParts<E, S>) {
    this.#parts = parts;
    this.clock = parts.clock;
    this.#machine = parts.machine;
    this.#log = parts.log;
    this.#lifecycle = parts.lifecycle;
  }

  /**
   * Handles one message for `actors`. The decision is applied and logged as one entry;
   * the promise resolves with the reply once that entry is durable. `extra` may add
   * engine events computed from the reply (the idempotency record) to the same entry.
   */
  exec<R>(actors: readonly string[], decide: Decide<E, R>, extra?: ExtraEvents<R>): Promise<R> {
    if (this.#lifecycle.closed) return Promise.reject(new EngineClosedError());
    if (!this.#log.hasRoom()) return Promise.reject(new LogFullError());
    // The usual case, idle actors, takes them without a promise.
    const held = this.#tryEnter(actors);
    if (held !== undefined) return this.#decide(held, decide, extra);
    return this.#enter(actors).then((waited) => this.#decide(waited, decide, extra));
  }

  /**
   * Runs a command: prepares its facts (before anything is held), names and holds its actors
   * and, if it had to wait for them, asks it again once they are held. One loop of at most
   * COMMAND_TRIES tries covers both ways a try can find the world moved: the command now
   * needs other actors too (a record changed while it waited: the next try holds both), or
   * its decision finds the facts outdated (the next try prepares them again). Past the last
   * try it is refused with ContendedError, having changed nothing. Then decides as `exec`
   * does, the reply being `render` of the command's result.
   */
  run<I, R, V, F>(command: Command<S, I, R, E, F>, input: I, render: (result: R) => V, extra?: ExtraEvents<V>): Promise<V> {
    return this.#try({ command, input, render, extra }, 1, undefined, undefined);
  }

  /** Reads see only durable state: wait until everything applied so far is on disk. */
  settled(): Promise<void> {
    return this.#log.whenDurable(this.#log.lastSeq);
  }

  /**
   * One try: `facts` as prepared for an earlier try (undefined: prepare them now); `holding`
   * the actors an earlier try found it needs (undefined: name them now).
   */
  #try<I, R, V, F>(run: CommandRun<S, I, R, E, F, V>, tries: number, facts: { value: F } | undefined, holding: readonly string[] | undefined): Promise<V> {
    const { command, input } = run;
    if (facts === undefined && command.prepare !== undefined) {
      let prepared: Promise<F>;
      try {
        prepared = command.prepare(input, this.#machine, this.clock.now());
      } catch (err) {
        return Promise.reject(err);
      }
      return prepared.then((value) => this.#try(run, tries, { value }, holding));
    }
    // Command's facts default to undefined: a command without a prepare step decides on none.
    const value = facts?.value as F;
    let needed: readonly string[];
    try {
      needed = holding ?? command.actors(input, this.#machine);
    } catch (err) {
      return Promise.reject(err);
    }
    const held = new Set(needed);
    // Actors named in this run: if they are all free the decision runs in this run too
    // (exec's fast path), where nothing can have changed what it names.
    let namedInThisRun = holding === undefined;
    const decide: Decide<E, V> = (at) => {
      if (!namedInThisRun) {
        // Naming the actors reads records the held ones may not own: unchecked, it decides nothing.
        this.#machine.hold?.(undefined);
        needed = command.actors(input, this.#machine);
        if (needed.some((id) => !held.has(id))) throw new ActorsChangedError(command.name);
        this.#machine.hold?.(held);
      }
      return rendered(command.decide(input, this.#machine, at, value), run.render);
    };
    const replied = this.exec([...held], decide, run.extra);
    namedInThisRun = false;
    return replied.catch((err: unknown) => {
      const moved = err instanceof ActorsChangedError || err instanceof FactsOutdatedError;
      if (!moved) throw err;
      if (tries >= COMMAND_TRIES) throw new ContendedError(command.name, tries, err);
      // Outdated facts are prepared again; actors found needed are held as well.
      return err instanceof FactsOutdatedError ? this.#try(run, tries + 1, undefined, undefined) : this.#try(run, tries + 1, facts, [...held, ...needed]);
    });
  }

  /**
   * Decides with `held` taken and applies the decision in the same run, so checks against
   * shared indexes (unique addresses, references, an environment's totals) cannot be
   * overtaken in between; lets the actors go once the entry is appended (or nothing was decided).
   */
  #decide<R>(
    held: Mailbox[],
    decide: Decide<E, R>,
    extra: ((reply: R, at: number) => EngineEvent<unknown>[]) | undefined,
  ): Promise<R> {
    let decided: Decision<E, R>;
    let at: number;
    // The held actors' ids, for the holding check while it decides and while it applies.
    const actors = idsOf(held);
    try {
      // The engine may have closed (or failed) while this message waited for its actors.
      if (this.#lifecycle.closed) throw new EngineClosedError();
      // Read only once every mailbox is held: the decision sees time after its wait.
      at = this.clock.now();
      this.#machine.hold?.(actors);
      decided = decide(at);
    } catch (err) {
      this.#leaveAll(held);
      return Promise.reject(err);
    } finally {
      this.#machine.hold?.(undefined);
    }
    return this.#commit(held, actors, decided, at, extra);
  }

  /** Applies and appends the decision as one entry, releases the actors, answers once durable. */
  #commit<R>(held: Mailbox[], actors: ReadonlySet<string>, decision: Decision<E, R>, at: number, extra: ExtraEvents<R> | undefined): Promise<R> {
    let seq = 0;
    let reply: R;
    try {
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
      this.#leaveAll(held);
    }
    if (seq === 0) return this.settled().then(() => reply);
    return this.#log.whenDurable(seq).then(() => {
      this.#parts.committed();
      return reply;
    });
  }

  /**
   * The common case without a promise: no actor, or one that is idle, is taken at once.
   * Undefined when the message must wait (or names several actors): nothing is taken then.
   */
  #tryEnter(actors: readonly string[]): Mailbox[] | undefined {
    if (actors.length === 0) return [];
    if (actors.length > 1) return undefined;
    const mailbox = this.#mailboxOf(actors[0]!);
    return mailbox.tryEnter() ? [mailbox] : undefined;
  }

  #mailboxOf(id: string): Mailbox {
    let mailbox = this.#mailboxes.get(id);
    if (mailbox === undefined) {
      mailbox = new Mailbox(id);
      this.#mailboxes.set(id, mailbox);
    }
    return mailbox;
  }

  async #enter(actors: readonly string[]): Promise<Mailbox[]> {
    const ids = actors.length <= 1 ? actors : sortedOnce(actors);
    const held: Mailbox[] = [];
    try {
      for (const id of ids) {
        const mailbox = this.#mailboxOf(id);
        if (!mailbox.tryEnter()) await mailbox.enter();
        held.push(mailbox);
      }
    } catch (err) {
      this.#leaveAll(held);
      throw err;
    }
    return held;
  }

  #leaveAll(held: readonly Mailbox[]): void {
    for (const mailbox of held) this.#leave(mailbox);
  }

  #leave(mailbox: Mailbox): void {
    mailbox.leave();
    // Idle mailboxes are dropped, so memory follows the actors in flight, not all actors.
    if (mailbox.depth === 0) this.#mailboxes.delete(mailbox.actorId);
  }
}
