// Webhook delivery: sends the outbox (actors/webhook-event.ts) to each environment's
// `webhookEndpoint`, signed, at least once, in creation order, one in flight per endpoint.
//
// Why not engine effects: an effect runs independently of its siblings (16 at a time, any
// order) with the engine's own schedule (8 attempts, capped backoff). Webhooks need strict
// order per endpoint, where a retrying event holds back the later ones of its endpoint and
// only those, and CONTRACT.md's schedule (10 tries, 1 s doubling, then FAILED). So the
// queue is the outbox itself: each environment's PENDING events in id (creation) order,
// with `tries` and `nextAttemptAt` on the record. Every try is logged as
// `webhook.attempted` (attempt, outcome, next due time) in one entry held on the event, so
// a restart, kill -9 included, rebuilds exactly the same queue and due times from the log:
// a try whose outcome was not logged is made again (at least once, same event id).
//
// A dead receiver never holds up money: an endpoint that stops answering is marked down
// and probed on its own backoff (actors/webhook-event.ts decides both), and the queue is
// bounded by dropping its oldest events, in entries of the worker's own, never by
// refusing the writes that record events. Settled events are pruned after their retention
// by the outbox's retention sweep (retention.ts), which this worker starts and stops.
//
// Limits: at most `maxConnections` requests in flight across all endpoints (one per
// endpoint), each cut off after `timeoutMs`; an endpoint waiting for a free connection
// is queued once, so the waiting list never exceeds the number of environments. Memory
// is one lane per environment with PENDING events; the events themselves are records.
// Each environment holds at most `maxPending` PENDING events (and approvals) once its drop
// entry is durable; a drop entry FAILS at most DROP_BATCH events. The queue's depth is
// `stats().pending` (served in /healthz).
import type { Clock } from '../engine/clock.js';
import type { Report } from '../engine/report.js';
import type { Engine } from '../engine/engine.js';
import { newId } from '../engine/ids.js';
import {
  decideAttempt,
  decideDrop,
  dropCandidates,
  endpointIdOf,
  healthOf,
  isEnvelope,
  reportedTransactionId,
  webhookBody,
  type DeliveryAttempt,
  type WebhookEvent,
} from '../../actors/webhook-event.js';
import type { DomainEvent, TimerMessage, World } from '../../actors/world.js';
import { decideApprovalAnswer } from '../../actors/incoming.js';
import type { EngineEvent } from '../engine/state-machine.js';
import type { MasterKey } from '../crypto/master-key.js';
import type { CryptoPool } from '../crypto/pool.js';
import { ENVELOPE_SIGNATURE_HEADER, WEBHOOK_SIGNATURE_HEADER } from '../crypto/webhook-signature.js';
import { webhookFormatOf } from '../../actors/platform.js';
import { isoTime } from '../../actors/iso-time.js';
import type { Egress, EgressOutcome } from '../outbound/egress.js';
import { WebhookRetention } from './retention.js';

/** CONTRACT.md: a 2xx within 5 s is success. */
export const DELIVERY_TIMEOUT_MS = 5_000;
/** Requests in flight at once, all endpoints together. */
export const MAX_WEBHOOK_CONNECTIONS = 32;
/** After the log refused an outcome (overload), the try is made again after this long. */
const OVERLOAD_RETRY_MS = 1_000;
/**
 * PENDING events an environment holds by default before its oldest are dropped
 * (MAX_PENDING_WEBHOOKS). An event costs about 360 bytes of heap (bench/webhook-backlog.ts;
 * the record it reports is the ledger's own, shared): a full backlog is about 360 MB.
 */
export const DEFAULT_MAX_PENDING_WEBHOOKS = 1_000_000;
/** Events one drop entry FAILS: bounds the actors one decision holds and the entry's size. */
export const DROP_BATCH = 1_000;
/** Down endpoints /healthz names (the count covers them all). */
const LISTED_DOWN_ENDPOINTS = 20;

export interface DeliveryOptions {
  timeoutMs?: number;
  maxConnections?: number;
  /** PENDING events an environment may hold before its oldest are FAILED as dropped. */
  maxPending?: number;
  report?: Report;
  /** Told the outcome of every recorded delivery try, and of every drop (the service's metrics). */
  observer?: DeliveryObserver;
}

/** How a try ended: a 2xx, another status, no answer in time, or a target the policy refused. */
export type DeliveryOutcome = 'delivered' | 'rejected' | 'unanswered' | 'refused';

export interface DeliveryObserver {
  attempted(outcome: DeliveryOutcome): void;
  /** A full backlog's drop entry is durable: it FAILED `events` events. */
  dropped(events: number): void;
}

function outcomeOf(egress: EgressOutcome): DeliveryOutcome {
  if (egress.refused !== undefined) return 'refused';
  if (egress.statusCode === 0) return 'unanswered';
  return egress.statusCode >= 200 && egress.statusCode < 300 ? 'delivered' : 'rejected';
}

/** An environment's endpoint as /healthz and the events list show it. */
export interface EndpointState {
  state: 'UP' | 'DOWN';
  /** While down: since when (ISO 8601). */
  downSince?: string;
  /** When its queue's head is tried next, if it waits (ISO 8601). */
  nextAttemptAt?: string;
  /** Tries in a row it has not answered. */
  unansweredTries: number;
}

export interface DeliveryStats {
  /** PENDING events, all environments. */
  pending: number;
  inFlight: number;
  /** Endpoints waiting for a free connection. */
  waiting: number;
  maxConnections: number;
  maxPendingPerEnvironment: number;
  /** Endpoints that are down, and the first of them. */
  endpointsDown: number;
  down: Array<{ environmentId: string } & EndpointState>;
  /**
   * Since this process started: events a full backlog FAILED as dropped, and the log entries
   * that did it (each holds at most DROP_BATCH; besides the entries of the requests themselves).
   */
  dropped: { events: number; entries: number };
}

interface Lane {
  busy: boolean;
  cancelTimer: (() => void) | undefined;
  timerDue: number;
}

export interface DeliveryDeps {
  engine: Engine<DomainEvent, TimerMessage, World>;
  world: World;
  masterKey: MasterKey;
  crypto: CryptoPool;
  /** Sends only where the outbound policy allows (the service's OutboundEgress). */
  egress: Egress;
}

export class WebhookDelivery {
  readonly #deps: DeliveryDeps;
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  readonly #maxConnections: number;
  readonly #maxPending: number;
  readonly #report: Report;
  readonly #observer: DeliveryObserver | undefined;
  /** What the trimmer dropped since this process started (stats().dropped). */
  readonly #dropped = { events: 0, entries: 0 };
  readonly #lanes = new Map<string, Lane>();
  /** Environments told of new events during the current run (at most one per environment). */
  readonly #queued = new Set<string>();
  /** Environments whose head is due, waiting for a connection; a Set, so each at most once. */
  readonly #waiting = new Set<string>();
  readonly #inFlight = new Set<AbortController>();
  readonly #keys = new Map<string, Uint8Array>();
  /** Told when an event's try is logged (POST /sandbox/webhooks/test waits for its TEST event's try). */
  readonly #tryWaiters = new Map<string, Array<() => void>>();
  /** Environments whose queue may be past its cap, looked at once per turn. */
  readonly #toTrim = new Set<string>();
  #trimming = false;
  #running = false;
  readonly #retention: WebhookRetention;

  constructor(deps: DeliveryDeps, options: DeliveryOptions = {}) {
    this.#deps = deps;
    this.#clock = deps.engine.clock;
    this.#timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
    this.#maxConnections = options.maxConnections ?? MAX_WEBHOOK_CONNECTIONS;
    this.#maxPending = options.maxPending ?? DEFAULT_MAX_PENDING_WEBHOOKS;
    this.#report = options.report ?? (() => undefined);
    this.#observer = options.observer;
    this.#retention = new WebhookRetention(deps.engine, deps.world, this.#report);
  }

  /** Starts delivering: what recovery left PENDING, and from then on what is recorded. */
  start(): void {
    this.#running = true;
    // Told while an entry applies: it looks at the queue once the entry's decision is over
    // (it reads the environment's configuration, which that decision need not hold).
    this.#deps.world.webhookEvents.onQueued = (envId, made) => {
      // New events where no endpoint is configured and nothing is sent: the kick would find
      // nowhere to send them, so only the backlog's bound is looked at (a microtask a
      // payment was about a twenty-fifth of its CPU). Configuring an endpoint kicks its queue.
      if (made && this.#endpointOf(envId) === '' && !this.#lanes.has(envId) && !this.#waiting.has(envId)) {
        this.#trimLater(envId);
        return;
      }
      if (this.#queued.size === 0) queueMicrotask(() => this.#kickQueued());
      this.#queued.add(envId);
    };
    for (const envId of this.#deps.world.webhookEvents.queuedEnvs()) this.#lookAt(envId);
    this.#retention.start();
  }

  #kickQueued(): void {
    for (const envId of this.#queued) this.#lookAt(envId);
    this.#queued.clear();
    // An event may have settled: the first one to settle arms the retention sweep.
    this.#retention.watch();
  }

  /** An environment's queue has new events: trims it if it is over its bound, and sends its head. */
  #lookAt(envId: string): void {
    this.#trimLater(envId);
    this.kick(envId);
  }

  /** Stops sending: timers cancelled, requests in flight aborted (their tries are made again after a restart). */
  stop(): void {
    this.#running = false;
    this.#deps.world.webhookEvents.onQueued = undefined;
    this.#retention.stop();
    for (const lane of this.#lanes.values()) lane.cancelTimer?.();
    this.#lanes.clear();
    this.#waiting.clear();
    for (const controller of this.#inFlight) controller.abort();
  }

  stats(): DeliveryStats {
    const down = this.#deps.world.webhookEndpoints.down().filter((e) => this.#endpointOf(e.envId) === e.url);
    return {
      pending: this.#deps.world.webhookEvents.pendingCount,
      inFlight: this.#inFlight.size,
      waiting: this.#waiting.size,
      maxConnections: this.#maxConnections,
      maxPendingPerEnvironment: this.#maxPending,
      endpointsDown: down.length,
      down: down.slice(0, LISTED_DOWN_ENDPOINTS).map((e) => ({ environmentId: e.envId, ...this.endpointState(e.envId) })),
      dropped: { ...this.#dropped },
    };
  }

  /** The configured endpoint's health and when its queue's head goes next. */
  endpointState(envId: string): EndpointState {
    const health = healthOf(this.#deps.world.webhookEndpoints.get(envId), this.#endpointOf(envId));
    const due = this.#dueAt(envId);
    const state: EndpointState = { state: health?.downSince === undefined ? 'UP' : 'DOWN', unansweredTries: health?.unanswered ?? 0 };
    if (health?.downSince !== undefined) state.downSince = isoTime(health.downSince);
    if (due !== undefined && due > this.#clock.now()) state.nextAttemptAt = isoTime(due);
    return state;
  }

  #endpointOf(envId: string): string {
    return this.#deps.world.envs.get(envId)?.config.webhookEndpoint ?? '';
  }

  /** When the queue's head may be tried: its own retry time, and while the endpoint is down, not before its probe. */
  #dueAt(envId: string): number | undefined {
    const headDue = this.#deps.world.webhookEvents.queueHeadDueAt(envId);
    if (headDue === undefined) return undefined;
    const health = healthOf(this.#deps.world.webhookEndpoints.get(envId), this.#endpointOf(envId));
    return Math.max(headDue, health?.nextProbeAt ?? 0);
  }

  /** Looks at the environment's queue again (a new event, an outcome, a new endpoint). */
  kick(envId: string): void {
    if (!this.#running) return;
    let lane = this.#lanes.get(envId);
    if (lane?.busy === true) return; // it looks again when its try ends
    const due = this.#dueAt(envId);
    const endpoint = this.#endpointOf(envId);
    if (due === undefined || endpoint === '') {
      // Nothing to send, or nowhere to send it: events wait until an endpoint is configured.
      if (lane !== undefined) {
        lane.cancelTimer?.();
        this.#lanes.delete(envId);
      }
      this.#waiting.delete(envId);
      return;
    }
    if (lane === undefined) {
      lane = { busy: false, cancelTimer: undefined, timerDue: 0 };
      this.#lanes.set(envId, lane);
    }
    if (due > this.#clock.now()) {
      if (lane.cancelTimer !== undefined && lane.timerDue === due) return;
      lane.cancelTimer?.();
      lane.timerDue = due;
      lane.cancelTimer = this.#clock.schedule(due, () => {
        const current = this.#lanes.get(envId);
        if (current !== undefined) current.cancelTimer = undefined;
        this.kick(envId);
      });
      return;
    }
    lane.cancelTimer?.();
    lane.cancelTimer = undefined;
    this.#waiting.add(envId);
    this.#pump();
  }

  /** Starts tries for waiting endpoints while connections are free, in the order they started waiting. */
  #pump(): void {
    for (const envId of this.#waiting) {
      if (this.#inFlight.size >= this.#maxConnections) return;
      this.#waiting.delete(envId);
      const lane = this.#lanes.get(envId);
      const head = this.#deps.world.webhookEvents.queueHead(envId);
      if (lane === undefined || lane.busy || head === undefined) continue;
      lane.busy = true;
      const controller = new AbortController();
      this.#inFlight.add(controller);
      this.#tryOnce(envId, head, controller)
        .catch((err: unknown) => {
          const error = err instanceof Error ? err.message : String(err);
          this.#report(`webhook ${head.id}: ${error}`, { event: 'webhook.error', level: 'error', eventId: head.id, environmentId: envId, error });
        })
        .finally(() => {
          this.#inFlight.delete(controller);
          lane.busy = false;
          if (!this.#running) return;
          this.kick(envId);
          this.#pump();
        });
    }
  }

  async #tryOnce(envId: string, head: WebhookEvent, controller: AbortController): Promise<void> {
    const { engine, world } = this.#deps;
    // The event is sent only once the entry that recorded it is durable.
    await engine.settled();
    const endpoint = this.#endpointOf(envId);
    if (!this.#running || endpoint === '') return;
    const at = this.#clock.now();
    const outcome = await this.post(envId, endpoint, JSON.stringify(webhookBody(head)), controller.signal, isEnvelope(head));
    if (!this.#running) return;
    const delivery = outcomeOf(outcome);
    this.#observer?.attempted(delivery);
    // A refused target was reported by post().
    if (delivery === 'rejected' || delivery === 'unanswered') {
      this.#report(`webhook ${head.id} to ${envId}: ${delivery} (status ${outcome.statusCode}, ${Math.round(outcome.ms)} ms)`, {
        event: 'webhook.attempt.failed',
        level: 'warn',
        eventId: head.id,
        environmentId: envId,
        outcome: delivery,
        statusCode: outcome.statusCode,
        ms: Math.round(outcome.ms),
      });
    }
    const attempt: DeliveryAttempt = { at, statusCode: outcome.statusCode, ms: outcome.ms };
    // An approval webhook's answer decides its payment, in the entry that logs the answer,
    // held on the account that owns the transaction.
    const approvalOf = head.approval === true ? reportedTransactionId(head) : undefined;
    const payment = approvalOf === undefined ? undefined : world.transactions.get(approvalOf);
    const actors = [head.id, endpointIdOf(envId)];
    if (payment !== undefined) actors.push(payment.accountId);
    try {
      await engine.exec(actors, (decidedAt) => {
        const recorded = decideAttempt(world.webhookEvents.get(head.id), world.webhookEndpoints.get(envId), endpoint, attempt);
        const events: Array<DomainEvent | EngineEvent<unknown>> = recorded === undefined ? [] : [recorded];
        if (recorded !== undefined && approvalOf !== undefined) {
          const tx = world.transactions.get(approvalOf);
          events.push(...decideApprovalAnswer(tx, tx === undefined ? undefined : world.internalAccounts.get(tx.accountId), attempt.statusCode, decidedAt));
        }
        return { events, reply: () => undefined };
      });
      this.#told(head.id);
    } catch (err) {
      // The outcome could not be logged (overload, closing): the try counts as not made.
      const error = err instanceof Error ? err.message : String(err);
      this.#report(`webhook ${head.id}: outcome not logged (${error}); trying again`, { event: 'webhook.outcome.deferred', level: 'warn', eventId: head.id, error });
      await new Promise<void>((resolve) => this.#clock.schedule(this.#clock.now() + OVERLOAD_RETRY_MS, resolve));
    }
  }

  /** Looks at the environment's queue length once this turn's entries are in (a burst is one look). */
  #trimLater(envId: string): void {
    if (this.#deps.world.webhookEvents.pendingIn(envId) <= this.#maxPending) return;
    this.#toTrim.add(envId);
    if (this.#trimming) return;
    this.#trimming = true;
    setImmediate(() => {
      this.#trim().then(
        () => undefined,
        (err: unknown) => {
          const error = err instanceof Error ? err.message : String(err);
          this.#report(`webhook backlog: ${error}`, { event: 'webhook.backlog.error', level: 'error', error });
        },
      );
    });
  }

  /**
   * FAILS the oldest events of each environment past its cap, DROP_BATCH per entry, held
   * on the events it drops. A drop the log refused (overload, closing) is tried again on
   * the environment's next event.
   */
  async #trim(): Promise<void> {
    const { engine, world } = this.#deps;
    try {
      while (this.#running && this.#toTrim.size > 0) {
        const envId = this.#toTrim.values().next().value as string;
        const candidates = dropCandidates(world.webhookEvents, envId, this.#maxPending, DROP_BATCH);
        if (candidates.length === 0) {
          this.#toTrim.delete(envId);
          continue;
        }
        // Counted once the entry is durable: the events of the decision that committed.
        let decided: ReturnType<typeof decideDrop> = [];
        await engine.exec(candidates, () => {
          decided = decideDrop(world.webhookEvents, envId, candidates, this.#maxPending);
          return { events: decided, reply: () => undefined };
        });
        for (const event of decided) {
          if (event.type !== 'webhooks.dropped') continue;
          this.#dropped.events += event.ids.length;
          this.#dropped.entries++;
          this.#observer?.dropped(event.ids.length);
        }
      }
    } finally {
      this.#trimming = false;
      this.#toTrim.clear();
    }
  }

  /**
   * Signs `body` with the environment's webhook key and POSTs it under the environment's
   * target policy; never throws. A refused target is reported and comes to statusCode 0.
   */
  async post(envId: string, url: string, body: string, signal?: AbortSignal, envelope = false): Promise<EgressOutcome> {
    const signature = await this.#deps.crypto.signWebhook(body, this.#key(envId));
    const signatureHeader = envelope ? ENVELOPE_SIGNATURE_HEADER : WEBHOOK_SIGNATURE_HEADER;
    const environment = this.#deps.world.envs.get(envId)?.environment;
    if (environment === undefined) throw new Error(`no environment ${envId}`);
    const outcome = await this.#deps.egress.post({
      environment,
      url,
      body,
      headers: { 'content-type': 'application/json', [signatureHeader]: signature },
      timeoutMs: this.#timeoutMs,
      ...(signal !== undefined ? { signal } : {}),
    });
    if (outcome.refused !== undefined) {
      this.#report(`webhook for ${envId} refused: ${outcome.refused}`, { event: 'webhook.refused', level: 'warn', environmentId: envId, reason: outcome.refused });
    }
    return outcome;
  }

  /** POST /webhooks/test: a signed TEST event in the environment's format, not recorded. */
  async sendTest(envId: string, url: string): Promise<{ url: string; delivered: boolean; statusCode: number }> {
    const at = this.#clock.now();
    const env = this.#deps.world.envs.get(envId);
    const envelope = env !== undefined && webhookFormatOf(env.config) === 'ENVELOPE';
    const test = { id: newId('Webhook', at), type: 'TEST', timestamp: isoTime(at) };
    const { statusCode } = await this.post(envId, url, JSON.stringify(envelope ? { ...test, data: {} } : test), undefined, envelope);
    return { url, delivered: statusCode >= 200 && statusCode < 300, statusCode };
  }

  /**
   * The recorded event `id` once a try of it is logged (a TEST event is tried once, so
   * settled), or undefined when none is within `waitMs` (older events of its endpoint are
   * ahead of it, or the endpoint is down): it stays queued.
   */
  async triedWithin(id: string, waitMs: number): Promise<WebhookEvent | undefined> {
    const deadline = this.#clock.now() + waitMs;
    const tried = (): WebhookEvent | undefined => {
      const event = this.#deps.world.webhookEvents.get(id);
      return event !== undefined && event.attempts.length > 0 ? event : undefined;
    };
    if (tried() !== undefined) return tried();
    await new Promise<void>((resolve) => {
      let cancel: (() => void) | undefined;
      const done = (): void => {
        cancel?.();
        resolve();
      };
      const waiters = this.#tryWaiters.get(id) ?? [];
      this.#tryWaiters.set(id, waiters);
      waiters.push(done);
      cancel = this.#clock.schedule(deadline, done);
    });
    this.#tryWaiters.delete(id);
    return tried();
  }

  #told(id: string): void {
    const waiters = this.#tryWaiters.get(id);
    if (waiters === undefined) return;
    this.#tryWaiters.delete(id);
    for (const done of waiters) done();
  }

  #key(envId: string): Uint8Array {
    let key = this.#keys.get(envId);
    if (key === undefined) {
      const env = this.#deps.world.envs.get(envId);
      if (env === undefined) throw new Error(`no environment ${envId}`);
      key = this.#deps.masterKey.open(env.webhookPrivateKeySealed, `webhook-key ${envId}`);
      this.#keys.set(envId, key);
    }
    return key;
  }
}
