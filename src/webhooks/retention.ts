// The retention sweep of the webhook outbox (actors/webhook-event.ts): settled events are
// pruned WEBHOOK_RETENTION_MS after they settled, in `webhooks.pruned` entries of PRUNE_BATCH
// events at most, each held on the events it prunes (a redelivery racing it keeps its event).
//
// Why not a durable engine timer: when each event's retention ends is in the log already
// (the time of the entry that settled it), so after a restart the sweep arms itself from
// the recovered state, as the delivery worker does from its due times; what the log must
// hold is the pruning itself, and it does. One clock callback is armed at a time, for the
// oldest settled event, so the sweep costs what it prunes: no timer per event, no scan.
import type { Clock } from '../engine/clock.js';
import type { Engine } from '../engine/engine.js';
import type { Report } from '../engine/report.js';
import { decidePrune, pruneCandidates, PRUNE_BATCH } from '../../actors/webhook-event.js';
import type { DomainEvent, TimerMessage, World } from '../../actors/world.js';

/** After the log refused a prune (overload, closing), the sweep tries again after this long. */
const REFUSED_RETRY_MS = 1_000;

export class WebhookRetention {
  readonly #engine: Engine<DomainEvent, TimerMessage, World>;
  readonly #world: World;
  readonly #clock: Clock;
  readonly #report: Report;
  #cancelArmed: (() => void) | undefined;
  #armedAt = Infinity;
  #sweeping = false;
  #running = false;

  constructor(engine: Engine<DomainEvent, TimerMessage, World>, world: World, report: Report) {
    this.#engine = engine;
    this.#world = world;
    this.#clock = engine.clock;
    this.#report = report;
  }

  start(): void {
    this.#running = true;
    this.watch();
  }

  stop(): void {
    this.#running = false;
    this.#disarm();
  }

  /** An event may have settled (or been pruned): arms the sweep for the oldest settled event's end of retention. */
  watch(): void {
    if (!this.#running || this.#sweeping) return;
    const due = this.#world.webhookEvents.retentionEndsAt();
    if (due === undefined || (this.#cancelArmed !== undefined && this.#armedAt <= due)) return;
    this.#arm(due);
  }

  #arm(due: number): void {
    this.#disarm();
    this.#armedAt = due;
    this.#cancelArmed = this.#clock.schedule(due, () => {
      this.#cancelArmed = undefined;
      this.#armedAt = Infinity;
      void this.#sweep();
    });
  }

  #disarm(): void {
    this.#cancelArmed?.();
    this.#cancelArmed = undefined;
    this.#armedAt = Infinity;
  }

  /** Prunes every event past its retention now, a batch per entry, then arms for the next. */
  async #sweep(): Promise<void> {
    if (!this.#running || this.#sweeping) return;
    this.#sweeping = true;
    const events = this.#world.webhookEvents;
    try {
      for (;;) {
        const candidates = pruneCandidates(events, this.#clock.now(), PRUNE_BATCH);
        if (candidates.length === 0 || !this.#running) break;
        const pruned = await this.#engine.exec(candidates, (at) => {
          const decided = decidePrune(events, candidates, at);
          return { events: decided, reply: () => decided.length };
        });
        if (pruned === 0) break;
      }
    } catch (err) {
      const error = err instanceof Error ? err.message : String(err);
      this.#report(`webhook retention: prune not logged (${error}); trying again`, { event: 'webhook.prune.deferred', level: 'warn', error });
      this.#sweeping = false;
      if (this.#running) this.#arm(this.#clock.now() + REFUSED_RETRY_MS);
      return;
    }
    this.#sweeping = false;
    this.watch();
  }
}
