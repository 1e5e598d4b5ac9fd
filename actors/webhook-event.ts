// Webhook events (CONTRACT.md "Webhooks"): a transactional outbox. An event is written in
// the same log entry as the change it reports, so a change is never without its event nor
// an event without its change. Delivery (src/webhooks/delivery.ts) logs every attempt and
// its outcome as `webhook.attempted`, so the outbox's delivery state is part of the
// recovered state: after a restart each event resumes where its log says it stopped.
//
// The body carries the transaction (or account) as it was when the event was made: a later
// change is a later event, and an old event keeps saying what it said. The event holds the
// record of that moment (records are immutable, so that is a reference, not a copy) and is
// rendered when it is delivered or read. The log names the record only: the event is
// applied after the transactions and postings of its own entry, which recreate it.
import type { Appliers, RecordKind } from './registry.js';
import { bucket, RecordMap, type SortedIds } from './registry.js';
import { lowerBound } from '../src/engine/ids.js';
import { newId } from '../src/engine/ids.js';
import { renderInternalAccount, type InternalAccount, type InternalAccountView, type InternalAccounts } from './internal-account.js';
import { renderTransaction, type PaymentRecorded, type Transaction, type Transactions, type TransactionView } from './transaction.js';
import { isoTime } from './iso-time.js';

export type WebhookEventType = 'INCOMING_PAYMENT' | 'OUTGOING_PAYMENT' | 'ACCOUNT_STATUS';
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['INCOMING_PAYMENT', 'OUTGOING_PAYMENT', 'ACCOUNT_STATUS'];
export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'DELIVERED', 'FAILED'];

/** Tries of one queueing (the first and nine retries) before the event is FAILED. */
export const MAX_DELIVERY_TRIES = 10;
/** The wait after the n-th failed try of a queueing: 1 s, 2 s, 4 s ... (CONTRACT.md). */
export function deliveryRetryDelayMs(failedTries: number): number {
  return 1000 * 2 ** (failedTries - 1);
}
/** Attempts kept per event (the newest); a redelivered event keeps its history up to this. */
export const MAX_KEPT_ATTEMPTS = 50;

export interface DeliveryAttempt {
  readonly at: number;
  /** The endpoint's status; 0 when no answer came (refused, reset, timed out). */
  readonly statusCode: number;
  readonly ms: number;
}

export interface WebhookEvent {
  /** `Webhook:<uuid>` */
  readonly id: string;
  readonly envId: string;
  readonly type: WebhookEventType;
  readonly timestamp: number;
  /** INCOMING_PAYMENT and OUTGOING_PAYMENT: the transaction as it was. */
  readonly transaction?: Transaction;
  /** ACCOUNT_STATUS: the internal account as it was after the change. */
  readonly account?: InternalAccount;
  /** Events recorded before records were referenced: their resource as it was rendered then. */
  readonly rendered?: { transaction?: TransactionView; account?: InternalAccountView };
  readonly deliveryStatus: DeliveryStatus;
  readonly attempts: readonly DeliveryAttempt[];
  /** Failed tries since the event was (re)queued; absent: none. */
  readonly tries?: number;
  /** When a PENDING event may be tried next; absent: at once. */
  readonly nextAttemptAt?: number;
  /**
   * The pending INCOMING_PAYMENT of an incoming UMA payment: its answer is the approval,
   * so it is tried once (CONTRACT.md: not retried) and the answer decides the payment.
   */
  readonly approval?: true;
}

/** What the platform's endpoint receives. */
export interface WebhookBody {
  id: string;
  type: WebhookEventType;
  timestamp: string;
  transaction?: TransactionView;
  account?: InternalAccountView;
}

export function webhookBody(event: WebhookEvent): WebhookBody {
  const body: WebhookBody = { id: event.id, type: event.type, timestamp: isoTime(event.timestamp) };
  const transaction = event.rendered?.transaction ?? (event.transaction === undefined ? undefined : renderTransaction(event.transaction));
  const account = event.rendered?.account ?? (event.account === undefined ? undefined : renderInternalAccount(event.account));
  if (transaction !== undefined) body.transaction = transaction;
  if (account !== undefined) body.account = account;
  return body;
}

/** The id of the transaction an event reports, however it was recorded. */
export function reportedTransactionId(event: WebhookEvent): string | undefined {
  return event.transaction?.id ?? event.rendered?.transaction?.id;
}

/**
 * A webhook event as a decision logs it: the record it reports is named, not rendered.
 * The record is the one its own event leaves: the transaction and the account as that
 * `payment.recorded` makes them (both kinds apply it before this one).
 */
export interface LoggedWebhook {
  readonly id: string;
  readonly envId: string;
  readonly type: WebhookEventType;
  readonly timestamp: number;
  readonly transactionId?: string;
  readonly accountId?: string;
  readonly approval?: true;
}

/** As entries logged them before records were referenced: the resource rendered in the entry. */
interface RenderedWebhook {
  readonly id: string;
  readonly envId: string;
  readonly type: WebhookEventType;
  readonly timestamp: number;
  readonly transaction?: TransactionView;
  readonly account?: InternalAccountView;
  readonly approval?: true;
  readonly deliveryStatus: DeliveryStatus;
  readonly attempts: readonly DeliveryAttempt[];
}

/** What a log entry may hold for a new webhook event. */
export type WebhookRecordedAs = LoggedWebhook | RenderedWebhook;

/** A new event reporting a transaction (one in the same `payment.recorded`). */
export function transactionWebhook(tx: Transaction, type: 'INCOMING_PAYMENT' | 'OUTGOING_PAYMENT', at: number, approval = false): LoggedWebhook {
  const event = { id: newId('Webhook', at), envId: tx.envId, type, timestamp: at, transactionId: tx.id };
  return approval ? { ...event, approval: true } : event;
}

/** ACCOUNT_STATUS for an account as its event's postings leave it. */
export function accountStatusWebhook(account: InternalAccount, at: number): LoggedWebhook {
  return { id: newId('Webhook', at), envId: account.envId, type: 'ACCOUNT_STATUS', timestamp: at, accountId: account.id };
}

/**
 * The payment events with an ACCOUNT_STATUS event added for every balance they change
 * (CONTRACT.md: every internal-account balance change) among `accounts`. Each event
 * reports the account as its own postings leave it (the record it names is read when the
 * event is applied, after those postings).
 */
export function withAccountStatus(events: PaymentRecorded[], accounts: ReadonlyArray<InternalAccount | undefined>, at: number): PaymentRecorded[] {
  const known = new Map<string, InternalAccount>();
  for (const account of accounts) if (account !== undefined) known.set(account.id, account);
  return events.map((event) => {
    const changed: InternalAccount[] = [];
    for (const p of event.postings) {
      const account = known.get(p.accountId);
      if (account === undefined || p.balance === 0 || changed.includes(account)) continue;
      changed.push(account);
    }
    if (changed.length === 0) return event;
    return { ...event, webhooks: [...event.webhooks, ...changed.map((account) => accountStatusWebhook(account, at))] };
  });
}

export type WebhookDeliveryEvent =
  /** One delivery try and what it left: DELIVERED on a 2xx, else a retry or FAILED. */
  | { type: 'webhook.attempted'; id: string; attempt: DeliveryAttempt; deliveryStatus: DeliveryStatus; tries: number; nextAttemptAt: number }
  /** POST /webhooks/events/{id}/redeliver: PENDING again with a fresh set of tries. */
  | { type: 'webhook.requeued'; id: string }
  /**
   * Events of a change that records no payment, in that change's entry: sandbox funding as
   * logged before it recorded a transaction; applied so that older logs still replay.
   */
  | { type: 'webhooks.recorded'; webhooks: WebhookRecordedAs[] };

/**
 * The outcome of one try, decided from the event as the log has it: `undefined` when the
 * event is no longer PENDING (a redelivery raced the try; its outcome is dropped).
 */
export function decideAttempt(event: WebhookEvent | undefined, attempt: DeliveryAttempt): WebhookDeliveryEvent | undefined {
  if (event === undefined || event.deliveryStatus !== 'PENDING') return undefined;
  const ok = attempt.statusCode >= 200 && attempt.statusCode < 300;
  const tries = (event.tries ?? 0) + 1;
  const limit = event.approval === true ? 1 : MAX_DELIVERY_TRIES;
  const deliveryStatus: DeliveryStatus = ok ? 'DELIVERED' : tries >= limit ? 'FAILED' : 'PENDING';
  const nextAttemptAt = deliveryStatus === 'PENDING' ? attempt.at + attempt.ms + deliveryRetryDelayMs(tries) : 0;
  return { type: 'webhook.attempted', id: event.id, attempt, deliveryStatus, tries, nextAttemptAt };
}

/** Requeues a settled event; a PENDING one is queued already (nothing to log). */
export function decideRequeue(event: WebhookEvent): WebhookDeliveryEvent[] {
  return event.deliveryStatus === 'PENDING' ? [] : [{ type: 'webhook.requeued', id: event.id }];
}

/**
 * The webhook events, listed per environment in creation order (their UUIDv7 ids), and the
 * PENDING ones per environment (the delivery queue, oldest first). No payment decision
 * reads this list; the delivery worker and redelivery do.
 */
export class WebhookEvents implements RecordKind<WebhookEvent, PaymentRecorded | WebhookDeliveryEvent> {
  readonly idPrefix = 'Webhook:';
  readonly #events = new RecordMap<WebhookEvent>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #pendingByEnv = new Map<string, SortedIds>();
  readonly records: ReadonlyMap<string, WebhookEvent> = this.#events;
  /** Told (in memory, before the entry is durable) when an environment's queue may have a new head. */
  onQueued: ((envId: string) => void) | undefined;

  /** The records the events report; both kinds apply an entry's events before this one. */
  constructor(
    private readonly accounts: InternalAccounts,
    private readonly transactions: Transactions,
  ) {}

  readonly appliers: Appliers<PaymentRecorded | WebhookDeliveryEvent> = {
    'payment.recorded': (event) => this.#record(event.webhooks),
    'webhooks.recorded': (event) => this.#record(event.webhooks),
    'webhook.attempted': (event) => {
      const current = this.#events.get(event.id)!;
      const attempts = [...current.attempts, event.attempt].slice(-MAX_KEPT_ATTEMPTS);
      const next: WebhookEvent =
        event.deliveryStatus === 'PENDING'
          ? { ...current, attempts, tries: event.tries, nextAttemptAt: event.nextAttemptAt }
          : { ...withoutQueueState(current), attempts, deliveryStatus: event.deliveryStatus };
      this.#events.set(next.id, next);
      if (next.deliveryStatus !== 'PENDING') this.#unqueue(next);
      this.onQueued?.(next.envId);
    },
    'webhook.requeued': (event) => {
      const current = this.#events.get(event.id)!;
      const next: WebhookEvent = { ...withoutQueueState(current), deliveryStatus: 'PENDING' };
      this.#events.set(next.id, next);
      bucket(this.#pendingByEnv, next.envId).insert(next.id);
      this.onQueued?.(next.envId);
    },
  };

  restore(event: WebhookEvent): void {
    // Snapshots taken before records were referenced hold the rendered resource.
    const legacy = typeof event.transaction?.createdAt === 'string' || typeof event.account?.createdAt === 'string';
    this.#put(legacy ? renderedOf(event) : event);
  }

  #put(event: WebhookEvent): void {
    this.#events.set(event.id, event);
    bucket(this.#byEnv, event.envId).insert(event.id);
    if (event.deliveryStatus === 'PENDING') bucket(this.#pendingByEnv, event.envId).insert(event.id);
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    for (const [envId, pending] of this.#pendingByEnv) {
      for (const id of pending.ids) {
        if (this.#events.get(id)?.deliveryStatus !== 'PENDING') problems.push(`webhook event ${id} is queued in ${envId} but not PENDING`);
      }
    }
    return problems;
  }

  get(id: string): WebhookEvent | undefined {
    return this.#events.get(id);
  }

  idsIn(envId: string): readonly string[] {
    return this.#byEnv.get(envId)?.ids ?? [];
  }

  /** The oldest PENDING event of the environment: the next one its endpoint gets. */
  queueHead(envId: string): WebhookEvent | undefined {
    const id = this.#pendingByEnv.get(envId)?.ids[0];
    return id === undefined ? undefined : this.#events.get(id);
  }

  /** Environments with PENDING events. */
  queuedEnvs(): string[] {
    return [...this.#pendingByEnv.keys()];
  }

  /** PENDING events of one environment: its delivery queue's length. */
  pendingIn(envId: string): number {
    return this.#pendingByEnv.get(envId)?.ids.length ?? 0;
  }

  /** PENDING events, all environments. */
  get pendingCount(): number {
    let n = 0;
    for (const ids of this.#pendingByEnv.values()) n += ids.ids.length;
    return n;
  }

  #record(webhooks: readonly WebhookRecordedAs[]): void {
    for (const logged of webhooks) {
      if (this.#events.has(logged.id)) throw new Error(`webhook event ${logged.id} exists already`);
      this.#put('deliveryStatus' in logged ? renderedOf(logged) : this.#resolve(logged));
      this.onQueued?.(logged.envId);
    }
  }

  #resolve(logged: LoggedWebhook): WebhookEvent {
    const { transactionId, accountId } = logged;
    // Written out: object rest with excluded keys takes V8's slow path.
    const event: { -readonly [K in keyof WebhookEvent]: WebhookEvent[K] } = {
      id: logged.id,
      envId: logged.envId,
      type: logged.type,
      timestamp: logged.timestamp,
      deliveryStatus: 'PENDING',
      attempts: [],
    };
    if (logged.approval === true) event.approval = true;
    if (transactionId !== undefined) {
      const tx = this.transactions.get(transactionId);
      if (tx === undefined) throw new Error(`webhook event ${logged.id} reports transaction ${transactionId}, which does not exist`);
      event.transaction = tx;
    }
    if (accountId !== undefined) {
      const account = this.accounts.get(accountId);
      if (account === undefined) throw new Error(`webhook event ${logged.id} reports account ${accountId}, which does not exist`);
      event.account = account;
    }
    return event;
  }

  #unqueue(event: WebhookEvent): void {
    const pending = this.#pendingByEnv.get(event.envId);
    if (pending === undefined) return;
    const at = lowerBound(pending.ids, event.id);
    if (pending.ids[at] === event.id) pending.ids.splice(at, 1);
    if (pending.ids.length === 0) this.#pendingByEnv.delete(event.envId);
  }
}

/** An event whose resource was rendered when it was logged (or snapshotted) before. */
function renderedOf(old: RenderedWebhook | WebhookEvent): WebhookEvent {
  const { transaction, account, ...rest } = old as RenderedWebhook & Omit<WebhookEvent, 'transaction' | 'account'>;
  const rendered: { transaction?: TransactionView; account?: InternalAccountView } = {};
  if (transaction !== undefined) rendered.transaction = transaction;
  if (account !== undefined) rendered.account = account;
  return { ...rest, rendered };
}

function withoutQueueState(event: WebhookEvent): WebhookEvent {
  const { tries: _tries, nextAttemptAt: _next, ...rest } = event;
  return rest;
}
