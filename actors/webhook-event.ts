// Webhook events (CONTRACT.md "Webhooks"): a transactional outbox. An event is written in
// the same log entry as the change it reports, so a change is never without its event nor
// an event without its change. Delivery (src/webhooks/delivery.ts) logs every attempt and
// its outcome as `webhook.attempted`, so the outbox's delivery state is part of the
// recovered state: after a restart each event resumes where its log says it stopped.
//
// A dead receiver must not cost the platform its events or its payments. Its endpoint's
// health (`WebhookEndpoint:<envId>`, a record of its own, logged with each try) tells a
// receiver that did not answer (no answer, 429, 502, 503, 504) apart from one that refused
// an event: after ENDPOINT_DOWN_AFTER unanswered tries in a row the endpoint is down, and
// from then on the queue's head is a probe on the endpoint's own backoff (5 s doubling, at
// most 5 min) that does not spend the event's tries; the first answer brings it up and the
// backlog goes out in creation order. The queue is bounded instead of refusing writes:
// past the environment's cap the oldest events are FAILED as dropped (the delivery worker
// decides that in entries of its own), still listed and redeliverable.
//
// Settled events (DELIVERED or FAILED) are kept WEBHOOK_RETENTION_MS after they settled,
// then pruned by a decision of their own (`webhooks.pruned`, naming the ids), so a replay
// prunes exactly what the running process pruned and a snapshot holds what is left. A
// PENDING event (queued, retrying, or an approval waiting for its answer) is never pruned.
//
// The body carries the transaction (or account) as it was when the event was made: a later
// change is a later event, and an old event keeps saying what it said. The event holds the
// record of that moment (records are immutable, so that is a reference, not a copy) and is
// rendered when it is delivered or read. The log names the record only: the event is
// applied after the transactions and postings of its own entry, which recreate it.
//
// Format (CONTRACT.md "Today's clients, second wave"): an event is made in its
// environment's `webhookFormat` as of its entry, and keeps it. The log need not repeat it:
// the configuration changes are entries of the same log, so an event's entry applies after
// every change made before it, on replay as on first apply, and the record holds the
// format from then on (snapshots keep it). A FLAT event's record is as it was before
// formats existed. ENVELOPE environments also get the kinds FLAT never had (CUSTOMER,
// VERIFICATION, EXTERNAL_ACCOUNT), each derived from its record's own entry.
import type { Appliers, RecordKind } from './registry.js';
import { bucket, insertSorted, RecordMap, type SortedIds } from './registry.js';
import { hexValue, idTimeOf, lowerBound } from '../src/engine/ids.js';
import { isPaymentStemOf, paymentStemOf, quoteIdAtStem, transactionIdAtStem } from './derived-ids.js';
import type { DerivedStepFacts, Quote } from './quote.js';
import {
  accountVersionAt,
  renderInternalAccount,
  storedAccountVersion,
  type InternalAccount,
  type Posting,
  type InternalAccountView,
  type InternalAccounts,
  type StoredAccountVersion,
} from './internal-account.js';
import { renderTransaction, type Transaction, type Transactions, type TransactionView } from './transaction.js';
import { isoTime } from './iso-time.js';
import { SettledQueue } from './settled-queue.js';
import { openedCustomerId, renderCustomer, type Customer, type Customers } from './customer.js';
import { renderExternalAccount, type ExternalAccount, type ExternalAccounts } from './external-account.js';
import { renderVerification, type Verification } from './verification.js';
import { isFinished, renderImportJob, type BulkImportJob, type BulkImports } from './bulk-import.js';
import type { PlatformEnvs } from './platform.js';
import {
  BALANCE_UPDATED,
  bulkUploadEnvelopeType,
  customerEnvelopeType,
  EXTERNAL_ACCOUNT_STATUS_UPDATED,
  paymentEnvelopeType,
  verificationEnvelopeType,
  webhookIdOfRecord,
  type EnvelopeBody,
} from './webhook-envelope.js';

/** The kinds of both formats, as FLAT names them (ACCOUNT_STATUS is ENVELOPE's INTERNAL_ACCOUNT.BALANCE_UPDATED). */
export type FlatWebhookType = 'INCOMING_PAYMENT' | 'OUTGOING_PAYMENT' | 'ACCOUNT_STATUS';
/** Every kind: FLAT's, those only ENVELOPE environments get, and TEST (POST /sandbox/webhooks/test, either format). */
export type WebhookEventType = FlatWebhookType | 'CUSTOMER' | 'VERIFICATION' | 'EXTERNAL_ACCOUNT' | 'BULK_UPLOAD' | 'TEST';
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['INCOMING_PAYMENT', 'OUTGOING_PAYMENT', 'ACCOUNT_STATUS', 'CUSTOMER', 'VERIFICATION', 'EXTERNAL_ACCOUNT', 'BULK_UPLOAD', 'TEST'];
export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'DELIVERED', 'FAILED'];

/** Tries of one queueing (the first and nine retries) before the event is FAILED. */
export const MAX_DELIVERY_TRIES = 10;
/** The wait after the n-th failed try of a queueing: 1 s, 2 s, 4 s ... (CONTRACT.md). */
export function deliveryRetryDelayMs(failedTries: number): number {
  return 1000 * 2 ** (failedTries - 1);
}
/** How long a settled (DELIVERED or FAILED) event is kept: 30 days, as Stripe keeps its events. */
export const WEBHOOK_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;
/** Events one prune entry removes: bounds the actors one decision holds and the entry's size. */
export const PRUNE_BATCH = 1_000;
/** Attempts kept per event (the newest); a redelivered event keeps its history up to this. */
export const MAX_KEPT_ATTEMPTS = 50;
/** Unanswered tries in a row after which an endpoint is down. */
export const ENDPOINT_DOWN_AFTER = 3;
/** The wait after the n-th failed probe of a down endpoint (from 0): 5 s doubling, at most 5 min. */
export function probeDelayMs(failedProbes: number): number {
  return Math.min(5_000 * 2 ** failedProbes, MAX_PROBE_DELAY_MS);
}
export const MAX_PROBE_DELAY_MS = 300_000;

/**
 * Whether a try's outcome says the receiver is not there (as opposed to refusing this
 * event): no answer at all, or a status that means "not now" (429, and a proxy's 502, 503,
 * 504 for an application behind it that is down).
 */
export function unanswered(statusCode: number): boolean {
  return statusCode === 0 || statusCode === 429 || statusCode === 502 || statusCode === 503 || statusCode === 504;
}

/** The attempts of every event not tried yet: one shared array instead of one each (a backlog may hold a million). */
const NO_ATTEMPTS: readonly DeliveryAttempt[] = Object.freeze([]);

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
  /** CUSTOMER, VERIFICATION, EXTERNAL_ACCOUNT (ENVELOPE only): the record as its change left it. */
  readonly customer?: Customer;
  readonly verification?: Verification;
  readonly externalAccount?: ExternalAccount;
  /** BULK_UPLOAD (ENVELOPE only): the import job as it ended. */
  readonly bulkImport?: BulkImportJob;
  /** Made in an ENVELOPE environment; absent: FLAT. */
  readonly format?: 'ENVELOPE';
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
  /** FAILED without its tries spent: why (dropped from a full backlog). */
  readonly failureReason?: string;
  /** DELIVERED or FAILED since (the time of the entry that settled it); absent while PENDING. */
  readonly settledAt?: number;
}

/**
 * A payment step's events as one record (issue 38), while none of them has a delivery state
 * of its own: a quote-and-execute makes four (the outgoing and incoming transactions, the
 * two accounts' ACCOUNT_STATUS), and four records with their map entries were a tenth of a
 * payment's CPU. The events' ids are derived (derived-ids.ts): one UUID, the last byte
 * counting up from `first` (past the bytes the step's transactions took, `gaps`); the step
 * is stored under their common stem, the id without its last two hex digits, which is never
 * an event's id. Each event is built when it is read, with the fields it had as a record of
 * its own (stepEvent). An event that is tried or requeued is taken out (its bit in
 * `taken`) and stored under its own id from then on; the step goes with its last event. One
 * a full backlog drops stays, FAILED (`droppedAt`), until it is requeued or pruned. Snapshots hold steps as they are (`step` is the form's
 * version), or, where a transaction a step reports as it still is goes by its id, as
 * form 2 (StoredStep); the state digest counts their events one by one (eachRecord), as before.
 *
 * The step of a quote executed as it was made is not stored at all while none of its events
 * changed: the quote derives it (Quote.webhookStep, #derivedStep), and only its events' ids
 * are listed and queued. Its first change (a try, a drop, a receipt that replaces a
 * transaction it reports) stores it, marked `derived`; when that stored step ends, its quote
 * stops deriving it (Quotes.endDerivedStep), or it would come back.
 */
export interface WebhookStep {
  /** `Webhook:` and the events' UUID without its last byte. */
  readonly id: string;
  readonly step: 1;
  readonly envId: string;
  readonly timestamp: number;
  readonly format?: 'ENVELOPE';
  /** The last byte of the first event's id. */
  readonly first: number;
  /** Bit j: the byte `first + j` is no event's (another record of the payment took it); the events take the others in order. */
  readonly gaps: number;
  /**
   * What each event reports, in order; its type follows from it (reportedType). A string is a
   * transaction's id: the event reports its current version. So a settled transaction leaves
   * memory while its events wait (registry.ts, RecordKind.settled); a new version of it puts
   * the version it replaced here (#reportReplaced).
   */
  readonly reports: ReadonlyArray<StepReport>;
  /** Bit i: event i is stored under its own id now (or was pruned since). */
  readonly taken: number;
  /**
   * Per event, when a full backlog dropped it (FAILED with `failureReason` since then); 0:
   * PENDING. Absent: none dropped. Taken out one by one, each a record of its own, a full
   * backlog's drops cost a payment load a third of its rate (docs/bench.md, session 45).
   */
  readonly droppedAt?: readonly number[];
  /** Why its dropped events FAILED (droppedReason); present with `droppedAt`. */
  readonly failureReason?: string;
  /**
   * Derived from its quote (Quote.webhookStep) until one of its events changed, and stored
   * since: when it ends, its quote stops deriving it (Quotes.endDerivedStep).
   */
  readonly derived?: true;
}

/**
 * A step as a snapshot stores it (`step` 2; form 1 is the step itself): a report that is its transaction's current version (the
 * one the snapshot holds too) stands as the transaction's id (its last byte), since writing it again cost a
 * snapshot more than the rest of a payment's records (docs/bench.md, session 44). Only a
 * transaction whose id derives the step's (paymentStemOf) goes by its id: when a new version
 * replaces it, `#reportReplaced` finds the step by that id and notes it changed, so the next
 * snapshot writes the step again, with the version it reports in full. An account's version
 * stands as what changed in it (StoredAccountVersion, session 45), the rest read from the
 * account when the snapshot is restored; no later change of the account touches that rest.
 */
type StoredStep = Omit<WebhookStep, 'step' | 'reports'> & { readonly step: 2; readonly reports: ReadonlyArray<StoredReport> };

/**
 * A report as a step holds it: a version whole, a transaction's id (its current version), or
 * an account's version its quote's facts give (Quote.webhookStep): a derived step's, read
 * only when an event is, so that storing the step (a drop from a full backlog, long after
 * the quote left memory) needs no quote read back.
 */
type StepReport = Transaction | InternalAccount | string | QuoteAccount;

/** The source's or the payee's account version, as the step's quote's facts give it. */
type QuoteAccount = typeof SOURCE_OF_QUOTE | typeof PAYEE_OF_QUOTE;
const SOURCE_OF_QUOTE = Object.freeze({ ofQuote: 'source' as const });
const PAYEE_OF_QUOTE = Object.freeze({ ofQuote: 'payee' as const });

function isQuoteAccount(report: StepReport | StoredReport): report is QuoteAccount {
  return report === SOURCE_OF_QUOTE || report === PAYEE_OF_QUOTE;
}

/** The record a report names by id, if it does: a transaction's id, or a version's own. */
function reportedIdOf(report: StepReport): string | undefined {
  return typeof report === 'string' ? report : isQuoteAccount(report) ? undefined : report.id;
}

/**
 * A report as a stored step holds it: as a step holds it, an account's version as it changed
 * (StoredAccountVersion), a transaction named by id as its id's last byte (the rest is the
 * step's UUID: transactionIdAtStem), 48 bytes fewer each, or -1 and -2 for the source's and
 * the payee's account versions its quote gives (SOURCE_OF_QUOTE, PAYEE_OF_QUOTE).
 */
type StoredReport = Exclude<StepReport, QuoteAccount> | StoredAccountVersion | number;

/** `step` (in either form) as form `form` with `reports`, written out as a literal: a spread of a step cost the writer more than the ids saved. */
function withReports(step: WebhookStep | StoredStep, form: 1, reports: ReadonlyArray<StepReport>): WebhookStep;
function withReports(step: WebhookStep | StoredStep, form: 2, reports: ReadonlyArray<StoredReport>): StoredStep;
function withReports(step: WebhookStep | StoredStep, form: 1 | 2, reports: ReadonlyArray<StepReport | StoredReport>): WebhookStep | StoredStep {
  const out: { -readonly [K in keyof StoredStep]: unknown } = { id: step.id, step: form, envId: step.envId, timestamp: step.timestamp, first: step.first, gaps: step.gaps, reports, taken: step.taken };
  if (step.format !== undefined) out.format = step.format;
  if (step.droppedAt !== undefined) {
    out.droppedAt = step.droppedAt;
    out.failureReason = step.failureReason;
  }
  if (step.derived !== undefined) out.derived = step.derived;
  return out as WebhookStep | StoredStep;
}

/**
 * A payment step's events as the payment's derivation names them (actors/payment.ts,
 * payInternally), never logged: the events the logged form would list (transactionWebhook
 * for each transaction, then accountStatusWebhook for each account, ids counting up from
 * `first` past `gaps`), without a record of each for the outbox to gather into a
 * WebhookStep again. The outbox stores it as #stepOf would store those events.
 */
export interface DerivedStep {
  /** `Webhook:` and the events' UUID without its last byte. */
  readonly stem: string;
  /** The last byte of the first event's id. */
  readonly first: number;
  /** Bit j: the byte `first + j` is no event's (WebhookStep.gaps). */
  readonly gaps: number;
  /** The transactions the first events report (INCOMING_PAYMENT or OUTGOING_PAYMENT by their type), as this step records them. */
  readonly transactions: readonly Transaction[];
  /** Then ACCOUNT_STATUS for each of these accounts, as the step's postings leave them. */
  readonly accountIds: readonly string[];
}

/** The events of `derived` in their logged form: what a step listed them as before DerivedStep. */
export function loggedOfStep(derived: DerivedStep): LoggedWebhook[] {
  const logged: LoggedWebhook[] = [];
  let offset = 0;
  const nextId = (): string => {
    while ((derived.gaps & (1 << offset)) !== 0) offset++;
    return derived.stem + HEX_BYTE[derived.first + offset++]!;
  };
  for (const tx of derived.transactions) logged.push(transactionWebhook(tx, tx.type === 'INCOMING' ? 'INCOMING_PAYMENT' : 'OUTGOING_PAYMENT', nextId()));
  for (const accountId of derived.accountIds) logged.push({ id: nextId(), type: 'ACCOUNT_STATUS', accountId });
  return logged;
}

function isStoredAccountVersion(report: StoredReport): report is StoredAccountVersion {
  return Array.isArray(report);
}

function isStep(record: WebhookEvent | WebhookStep): record is WebhookStep {
  return (record as WebhookStep).step === 1;
}

/** The widest step: its bytes from the first event's to the last's fit a small integer's bits. */
const MAX_STEP_SPAN = 30;

/** The bits set in a small integer. */
function popCount(bits: number): number {
  let n = 0;
  for (let rest = bits; rest !== 0; rest &= rest - 1) n++;
  return n;
}

/** Which of `step`'s events the id ending in `byte` is; -1: none. */
function stepIndexOf(step: WebhookStep, byte: number): number {
  const offset = byte - step.first;
  if (offset < 0 || offset > MAX_STEP_SPAN || (step.gaps & (1 << offset)) !== 0) return -1;
  const i = offset - popCount(step.gaps & ((1 << offset) - 1));
  return i < step.reports.length ? i : -1;
}

/** The event `id` as `step` holds it (not taken out), with its index; undefined if it does not. */
function heldIn(step: WebhookStep | undefined, id: string): { step: WebhookStep; i: number } | undefined {
  if (step === undefined) return undefined;
  const i = stepIndexOf(step, lastByteOf(id));
  return i < 0 || (step.taken & (1 << i)) !== 0 ? undefined : { step, i };
}

/** Visits the id of each event `step` holds (not taken out), with its index. */
function eachStepEvent(step: WebhookStep, visit: (id: string, i: number) => void): void {
  eachEventId(step.id, step.first, step.gaps, step.reports.length, (id, i) => {
    if ((step.taken & (1 << i)) === 0) visit(id, i);
  });
}

/** Visits the ids of a step's `count` events under `stem`, the first at the byte `first`, the bytes `gaps` marks skipped (WebhookStep), with each one's index. */
function eachEventId(stem: string, first: number, gaps: number, count: number, visit: (id: string, i: number) => void): void {
  let offset = 0;
  for (let i = 0; i < count; i++, offset++) {
    while ((gaps & (1 << offset)) !== 0) offset++;
    visit(stem + HEX_BYTE[first + offset]!, i);
  }
}

/** Whether `report` is the version of account `id` with these amounts at `at`, without a privacy setting (what accountVersionAt gives back). */
function isVersionAt(report: StepReport, id: string | undefined, balance: number, inflow: number, outflow: number, at: number): boolean {
  if (typeof report === 'string' || isQuoteAccount(report) || report.id !== id || 'quoteId' in report) return false;
  const account = report;
  return account.balance === balance && account.inflow === inflow && account.outflow === outflow && account.updatedAt === at && account.privateEnabled === undefined;
}

/**
 * The step a quote derives under `stem` (Quote.webhookStep), as #recordDerived would have
 * stored it, but for its accounts' versions, which its quote's facts give when an event is
 * read (SOURCE_OF_QUOTE, PAYEE_OF_QUOTE): its transactions by id, its time its quote's (the
 * quote's id says it), FLAT.
 */
function derivedStepOf(stem: string, envId: string, receiver: boolean): WebhookStep {
  const outgoing = transactionIdAtStem(stem, 0);
  const reports: StepReport[] = receiver ? [outgoing, transactionIdAtStem(stem, 2), SOURCE_OF_QUOTE, PAYEE_OF_QUOTE] : [outgoing, SOURCE_OF_QUOTE, PAYEE_OF_QUOTE];
  return { id: stem, step: 1, envId, timestamp: idTimeOf(quoteIdAtStem(stem))!, first: 1, gaps: receiver ? 2 : 0, reports, taken: 0, derived: true };
}

/** The ids of the events of the step its quote derives under `stem` (Quote.webhookStep), in order. */
function derivedEventIds(stem: string, facts: DerivedStepFacts): string[] {
  const ids: string[] = [];
  eachStepEvent(derivedStepOf(stem, '', facts[0] === 1), (id) => ids.push(id));
  return ids;
}

/** The stem of the webhook step a quote executed as it was made derives (its id with the kind `Webhook` and without the last byte). */
function derivedStemOf(quoteId: string): string {
  return paymentStemOf(quoteId, 'Webhook');
}

const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The last byte of an id that ends in two lowercase hex digits; -1 if it does not. */
function lastByteOf(id: string): number {
  const high = hexValue(id.charCodeAt(id.length - 2));
  const low = hexValue(id.charCodeAt(id.length - 1));
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

/** A payment event's type, as its report says: a transaction's direction, or an account's status. */
function reportedType(report: Transaction | InternalAccount): FlatWebhookType {
  if (!report.id.startsWith('Transaction:')) return 'ACCOUNT_STATUS';
  return report.type === 'INCOMING' ? 'INCOMING_PAYMENT' : 'OUTGOING_PAYMENT';
}

/** When a full backlog dropped event `i` of `step`; 0: it is PENDING. */
function droppedAtOf(step: WebhookStep, i: number): number {
  return step.droppedAt === undefined ? 0 : step.droppedAt[i]!;
}

/**
 * Event `i` of `step` (its id `id`), as the record #resolve made of it when events were
 * stored one by one, or, once dropped, as a drop left that record (key for key, as the
 * `webhooks.dropped` applier makes a FAILED event of its own).
 */
function stepEvent(step: WebhookStep, i: number, id: string, current: StepReads): WebhookEvent {
  const dropped = droppedAtOf(step, i);
  if (dropped !== 0) {
    const failed: { -readonly [K in keyof WebhookEvent]: WebhookEvent[K] } = { ...pendingStepEvent(step, i, id, current), deliveryStatus: 'FAILED' };
    failed.failureReason = step.failureReason;
    failed.settledAt = dropped;
    return failed;
  }
  return pendingStepEvent(step, i, id, current);
}

/** What a step's reports named by id or by its quote are now. */
interface StepReads {
  /** The current version of the transaction `id` (Transactions.current). */
  transaction(id: string): Transaction | undefined;
  /** The account version the quote of the step `stem` derives, its source's or its payee's. */
  accountOfQuote(stem: string, which: QuoteAccount): InternalAccount;
}

/** Report `i` of `step` as a version: a transaction named by id is its current one. */
function reportAt(step: WebhookStep, i: number, reads: StepReads): Transaction | InternalAccount {
  const report = step.reports[i]!;
  if (isQuoteAccount(report)) return reads.accountOfQuote(step.id, report);
  if (typeof report !== 'string') return report;
  const tx = reads.transaction(report);
  if (tx === undefined) throw new Error(`webhook step ${step.id} reports transaction ${report}, which does not exist`);
  return tx;
}

function pendingStepEvent(step: WebhookStep, i: number, id: string, current: StepReads): WebhookEvent {
  const report = reportAt(step, i, current);
  const { envId, timestamp } = step;
  const type = reportedType(report);
  if (type === 'ACCOUNT_STATUS') {
    const account = report as InternalAccount;
    if (step.format === undefined) return { id, envId, type, timestamp, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, account };
    return { id, envId, type, timestamp, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, account, format: step.format };
  }
  const transaction = report as Transaction;
  if (step.format === undefined) return { id, envId, type, timestamp, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, transaction };
  return { id, envId, type, timestamp, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, transaction, format: step.format };
}

/**
 * The health of an environment's endpoint as its tries left it. No record: up, nothing
 * unanswered. A record about another URL than the configured one says nothing (the
 * platform changed its endpoint): that endpoint is up until its own tries say otherwise.
 */
export interface WebhookEndpoint {
  /** `WebhookEndpoint:<envId>` */
  readonly id: string;
  readonly envId: string;
  readonly url: string;
  /** Unanswered tries in a row. */
  readonly unanswered: number;
  /** Down (ENDPOINT_DOWN_AFTER unanswered in a row) since this try. */
  readonly downSince?: number;
  /** Failed probes since it went down. */
  readonly failedProbes?: number;
  /** While down: when the next probe may go. */
  readonly nextProbeAt?: number;
}

/** What a try logs of its endpoint's health afterwards; `unanswered: 0` is up. */
export type EndpointHealth = Omit<WebhookEndpoint, 'id' | 'envId'>;

export function endpointIdOf(envId: string): string {
  return `WebhookEndpoint:${envId}`;
}

/** The endpoint's health if it is about `url` (the configured endpoint). */
export function healthOf(endpoint: WebhookEndpoint | undefined, url: string): WebhookEndpoint | undefined {
  return endpoint?.url === url ? endpoint : undefined;
}

/** What a FLAT endpoint receives. */
export interface WebhookBody {
  id: string;
  type: FlatWebhookType | 'TEST';
  timestamp: string;
  transaction?: TransactionView;
  account?: InternalAccountView;
}

/** What the platform's endpoint receives for `event`, in the format the event was made in. */
export function webhookBody(event: WebhookEvent): WebhookBody | EnvelopeBody {
  return event.format === 'ENVELOPE' ? envelopeBody(event) : flatBody(event);
}

/** The signature header an event's body is sent with: X-Grid-Signature for ENVELOPE. */
export function isEnvelope(event: WebhookEvent): boolean {
  return event.format === 'ENVELOPE';
}

function envelopeBody(event: WebhookEvent): EnvelopeBody {
  const [type, data] = envelopeContent(event);
  return { id: event.id, type, timestamp: isoTime(event.timestamp), data };
}

/** The vendor's type and the resource as its GET shows it. */
function envelopeContent(event: WebhookEvent): [type: string, data: object] {
  const { transaction, account, customer, verification, externalAccount, bulkImport } = event;
  if (transaction !== undefined && (event.type === 'INCOMING_PAYMENT' || event.type === 'OUTGOING_PAYMENT')) {
    return [paymentEnvelopeType(event.type, transaction.status), renderTransaction(transaction)];
  }
  if (account !== undefined) return [BALANCE_UPDATED, renderInternalAccount(account)];
  if (customer !== undefined) return [customerEnvelopeType(customer)!, renderCustomer(customer)];
  if (verification !== undefined) return [verificationEnvelopeType(verification)!, renderVerification(verification)];
  if (externalAccount !== undefined) return [EXTERNAL_ACCOUNT_STATUS_UPDATED, renderExternalAccount(externalAccount)];
  if (bulkImport !== undefined) return [bulkUploadEnvelopeType(bulkImport), renderImportJob(bulkImport)];
  return ['TEST', {}];
}

function flatBody(event: WebhookEvent): WebhookBody {
  const body: WebhookBody = { id: event.id, type: event.type as FlatWebhookType | 'TEST', timestamp: isoTime(event.timestamp) };
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
 * `payment.recorded` makes them (both kinds apply it before this one). Its environment is
 * that record's and its timestamp the entry's time, so neither is logged; entries written
 * before carry both, and those are kept as logged.
 */
export interface LoggedWebhook {
  readonly id: string;
  readonly envId?: string;
  readonly type: FlatWebhookType;
  readonly timestamp?: number;
  readonly transactionId?: string;
  readonly accountId?: string;
  readonly approval?: true;
}

/** As entries logged them before records were referenced: the resource rendered in the entry. */
interface RenderedWebhook {
  readonly id: string;
  readonly envId: string;
  readonly type: FlatWebhookType;
  readonly timestamp: number;
  readonly transaction?: TransactionView;
  readonly account?: InternalAccountView;
  readonly approval?: true;
  readonly deliveryStatus: DeliveryStatus;
  readonly attempts: readonly DeliveryAttempt[];
}

/** What a log entry may hold for a new webhook event. */
export type WebhookRecordedAs = LoggedWebhook | RenderedWebhook;

/** A new event reporting a transaction (one in the same `payment.recorded`), with its derived id. */
export function transactionWebhook(tx: Transaction, type: 'INCOMING_PAYMENT' | 'OUTGOING_PAYMENT', id: string, approval = false): LoggedWebhook {
  const event = { id, type, transactionId: tx.id };
  return approval ? { ...event, approval: true } : event;
}

/** ACCOUNT_STATUS for an account as its event's postings leave it. */
export function accountStatusWebhook(account: InternalAccount, id: string): LoggedWebhook {
  return { id, type: 'ACCOUNT_STATUS', accountId: account.id };
}

/**
 * The payment events with an ACCOUNT_STATUS event added for every balance they change
 * (CONTRACT.md: every internal-account balance change) among `accounts`. Each event
 * reports the account as its own postings leave it (the record it names is read when the
 * event is applied, after those postings). `webhookId` gives the new events' ids, derived
 * from the logged ones (events are derived when their entry applies, the same on replay).
 */
export function withAccountStatus<P extends { postings: readonly Posting[]; webhooks: readonly WebhookRecordedAs[] }>(
  events: P[],
  accounts: ReadonlyArray<InternalAccount | undefined>,
  webhookId: () => string,
): P[] {
  const known = new Map<string, InternalAccount>();
  for (const account of accounts) if (account !== undefined) known.set(account.id, account);
  return events.map((event) => {
    const changed: InternalAccount[] = [];
    for (const accountId of balanceChangedIds(event.postings)) {
      const account = known.get(accountId);
      if (account !== undefined) changed.push(account);
    }
    if (changed.length === 0) return event;
    return { ...event, webhooks: [...event.webhooks, ...changed.map((account) => accountStatusWebhook(account, webhookId()))] };
  });
}

/** The accounts whose balance `postings` change, each once, in the postings' order: those an ACCOUNT_STATUS event reports. */
export function balanceChangedIds(postings: readonly Posting[]): string[] {
  const ids: string[] = [];
  for (const { accountId, balance } of postings) if (balance !== 0 && !ids.includes(accountId)) ids.push(accountId);
  return ids;
}

export type WebhookDeliveryEvent =
  /**
   * One delivery try and what it left: DELIVERED on a 2xx, else a retry or FAILED; and the
   * endpoint's health after it (absent in entries logged before endpoints had one).
   */
  | { type: 'webhook.attempted'; id: string; attempt: DeliveryAttempt; deliveryStatus: DeliveryStatus; tries: number; nextAttemptAt: number; endpoint?: EndpointHealth }
  /** The oldest PENDING events of an environment past its cap: FAILED, with the reason. */
  | { type: 'webhooks.dropped'; envId: string; ids: string[]; reason: string }
  /** POST /webhooks/events/{id}/redeliver: PENDING again with a fresh set of tries. */
  | { type: 'webhook.requeued'; id: string }
  /** Settled events past WEBHOOK_RETENTION_MS: removed, as if never recorded. */
  | { type: 'webhooks.pruned'; ids: string[] }
  /**
   * Events of a change that records no payment, in that change's entry: sandbox funding as
   * logged before it recorded a transaction; applied so that older logs still replay.
   */
  | { type: 'webhooks.recorded'; webhooks: WebhookRecordedAs[] }
  /** POST /sandbox/webhooks/test: a TEST event, tried once (it reports nothing, so a failure is only its answer). */
  | { type: 'webhook.test.recorded'; id: string; envId: string };

/**
 * The outcome of one try, decided from the event and its endpoint as the log has them:
 * `undefined` when the event is no longer PENDING (a redelivery or a drop raced the try;
 * its outcome is dropped). A try made while the endpoint is down is a probe: when it goes
 * unanswered it says the endpoint is still down, not that the event is bad, so the event
 * keeps its tries and waits for the next probe. An approval is tried once whatever the
 * endpoint's state (its payment fails by its own rules).
 */
export function decideAttempt(
  event: WebhookEvent | undefined,
  endpoint: WebhookEndpoint | undefined,
  url: string,
  attempt: DeliveryAttempt,
): WebhookDeliveryEvent | undefined {
  if (event === undefined || event.deliveryStatus !== 'PENDING') return undefined;
  const ok = attempt.statusCode >= 200 && attempt.statusCode < 300;
  const before = healthOf(endpoint, url);
  const wasDown = before?.downSince !== undefined;
  const noAnswer = !ok && unanswered(attempt.statusCode);
  const probe = wasDown && noAnswer && !triedOnce(event);
  const tries = probe ? (event.tries ?? 0) : (event.tries ?? 0) + 1;
  const limit = triedOnce(event) ? 1 : MAX_DELIVERY_TRIES;
  const deliveryStatus: DeliveryStatus = ok ? 'DELIVERED' : tries >= limit ? 'FAILED' : 'PENDING';
  const health = healthAfter(before, url, noAnswer, attempt);
  const retryAt = health.nextProbeAt ?? attempt.at + attempt.ms + deliveryRetryDelayMs(tries);
  const nextAttemptAt = deliveryStatus === 'PENDING' ? retryAt : 0;
  return { type: 'webhook.attempted', id: event.id, attempt, deliveryStatus, tries, nextAttemptAt, endpoint: health };
}

/** An approval (its answer decides its payment) and a TEST (its answer is the whole point) are tried once. */
function triedOnce(event: WebhookEvent): boolean {
  return event.approval === true || event.type === 'TEST';
}

function healthAfter(before: WebhookEndpoint | undefined, url: string, noAnswer: boolean, attempt: DeliveryAttempt): EndpointHealth {
  if (!noAnswer) return { url, unanswered: 0 };
  const unansweredInARow = (before?.unanswered ?? 0) + 1;
  if (unansweredInARow < ENDPOINT_DOWN_AFTER) return { url, unanswered: unansweredInARow };
  const downSince = before?.downSince;
  const failedProbes = downSince === undefined ? 0 : (before?.failedProbes ?? 0) + 1;
  const nextProbeAt = attempt.at + attempt.ms + probeDelayMs(failedProbes);
  return { url, unanswered: unansweredInARow, downSince: downSince ?? attempt.at, failedProbes, nextProbeAt };
}

/** Why events dropped from a full backlog are FAILED. */
export function droppedReason(cap: number): string {
  return `dropped from the backlog: the environment held more than ${cap} undelivered events`;
}

/**
 * The oldest PENDING events of the environment past `cap`, at most `batch`: the ones a
 * drop would take, so that its decision can hold them. An approval is never dropped: its
 * payment waits on its answer, and fails by its own rules.
 */
export function dropCandidates(events: WebhookEvents, envId: string, cap: number, batch: number): string[] {
  const want = Math.min(events.pendingIn(envId) - cap, batch);
  const ids: string[] = [];
  if (want <= 0) return ids;
  for (const id of events.pendingIdsIn(envId)) {
    if (ids.length >= want) break;
    if (events.droppable(id)) ids.push(id);
  }
  return ids;
}

/** FAILS the held `candidates` that are still PENDING, as many as the environment is past `cap` now. */
export function decideDrop(events: WebhookEvents, envId: string, candidates: readonly string[], cap: number): WebhookDeliveryEvent[] {
  const excess = events.pendingIn(envId) - cap;
  const ids = candidates.filter((id) => events.droppable(id)).slice(0, Math.max(excess, 0));
  return ids.length === 0 ? [] : [{ type: 'webhooks.dropped', envId, ids, reason: droppedReason(cap) }];
}

/** The events settled at least WEBHOOK_RETENTION_MS before `now`, oldest settled first, at most `batch`. */
export function pruneCandidates(events: WebhookEvents, now: number, batch: number): string[] {
  const ids: string[] = [];
  events.walkSettled((id, settledAt) => {
    if (ids.length >= batch || settledAt + WEBHOOK_RETENTION_MS > now) return false;
    ids.push(id);
    return true;
  });
  return ids;
}

/** Prunes the held `candidates` that are still settled and past their retention at `at`; a requeued one is kept. */
export function decidePrune(events: WebhookEvents, candidates: readonly string[], at: number): WebhookDeliveryEvent[] {
  const ids = candidates.filter((id) => {
    const settledAt = events.get(id)?.settledAt;
    return settledAt !== undefined && settledAt + WEBHOOK_RETENTION_MS <= at;
  });
  return ids.length === 0 ? [] : [{ type: 'webhooks.pruned', ids }];
}

/** Requeues a settled event; a PENDING one is queued already (nothing to log). */
export function decideRequeue(event: WebhookEvent): WebhookDeliveryEvent[] {
  return event.deliveryStatus === 'PENDING' ? [] : [{ type: 'webhook.requeued', id: event.id }];
}

/**
 * The webhook events, listed per environment in creation order (their UUIDv7 ids), and the
 * PENDING ones per environment (the delivery queue, oldest first), and the settled ones in
 * the order they settled (the retention sweep's). No payment decision reads these lists;
 * the delivery worker, the sweep and redelivery do.
 */
/** The events the outbox applies, as far as it reads a payment step (payment-recorded.ts has all of it). */
type OutboxEvent =
  | { type: 'payment.recorded'; webhooks: readonly WebhookRecordedAs[]; step?: DerivedStep; quoteChange?: { readonly id: string; readonly webhookStep?: DerivedStepFacts } }
  | WebhookDeliveryEvent
  | EnvelopeSourceEvent;

/**
 * The changes that are events of ENVELOPE environments only, as far as the outbox reads
 * them. A creation's event takes its record's UUID (webhookIdOfRecord); a customer update
 * names the id its decision drew, since a customer is updated many times.
 */
type EnvelopeSourceEvent =
  | { type: 'customer.opened'; u: string; e: string }
  | { type: 'customer.updated'; customer: { readonly id: string }; webhookId?: string }
  | { type: 'verification.created'; verification: Verification }
  | { type: 'externalAccount.created'; account: { readonly id: string } }
  | { type: 'bulkImport.sliced'; id: string }
  | { type: 'bulkImport.failed'; id: string };

/** What the outbox reads of the quotes: those that derive a payment's webhook step (Quote.webhookStep). */
interface DerivingQuotes {
  peek(id: string): Quote | undefined;
  readonly records: ReadonlyMap<string, Quote>;
  whenRestored(listener: (quote: Quote) => void): void;
  endDerivedStep(id: string): void;
}

export class WebhookEvents implements RecordKind<WebhookEvent | WebhookStep, OutboxEvent> {
  readonly idPrefix = 'Webhook:';
  /** Events stored one by one under their ids, and payment steps under their stems (WebhookStep). */
  readonly #events = new RecordMap<WebhookEvent | WebhookStep>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #pendingByEnv = new Map<string, PendingQueue>();
  /** Settled events, oldest settled first: the retention sweep's order. */
  readonly #settled = new SettledQueue();
  readonly records: ReadonlyMap<string, WebhookEvent | WebhookStep> = this.#events;
  /**
   * Told (in memory, before the entry is durable) when an environment's queue may have a new
   * head: `made`, new events joined it and nothing else changed (none tried, settled or requeued).
   */
  onQueued: ((envId: string, made: boolean) => void) | undefined;

  /**
   * The records the events report: those kinds apply an entry's events before this one
   * (a verification is taken from its event); the environments give each event its format.
   */
  constructor(
    private readonly accounts: InternalAccounts,
    private readonly transactions: Transactions,
    private readonly envs: PlatformEnvs,
    private readonly customers: Customers,
    private readonly externalAccounts: ExternalAccounts,
    private readonly bulkImports: BulkImports,
    private readonly quotes: DerivingQuotes,
  ) {
    transactions.onReplaced = (before) => this.#reportReplaced(before);
    quotes.whenRestored((quote) => {
      if (quote.webhookStep !== undefined) this.#derivedRestored.push([derivedStemOf(quote.id), quote.envId, quote.webhookStep]);
    });
  }

  /** The steps restored quotes derive (not the quotes: recovery drops settled ones as it goes), until every kind is restored (restoredAll). */
  #derivedRestored: Array<readonly [stem: string, envId: string, facts: DerivedStepFacts]> = [];

  /** Events of the steps quotes derive (none stored: they count in no record). */
  #derivedEvents = 0;

  /** What a step's report named by id or by its quote is now (a transaction or a quote read back if it left memory). */
  readonly #current: StepReads = {
    transaction: (id) => this.transactions.current(id),
    accountOfQuote: (stem, which) => this.#accountOfQuote(stem, which),
  };

  /** Steps restored with transactions named by id (StoredStep), until every kind is restored. */
  #unresolved: StoredStep[] = [];

  readonly appliers: Appliers<OutboxEvent> = {
    'payment.recorded': (event, at) => (event.step === undefined ? this.#record(event.webhooks, at) : this.#recordDerived(event.step, at, event.quoteChange)),
    'webhooks.recorded': (event, at) => this.#record(event.webhooks, at),
    'webhook.attempted': (event, at) => {
      const current = this.#take(event.id);
      const attempts = current.attempts.length < MAX_KEPT_ATTEMPTS ? [...current.attempts, event.attempt] : [...current.attempts.slice(1 - MAX_KEPT_ATTEMPTS), event.attempt];
      const next: WebhookEvent =
        event.deliveryStatus === 'PENDING'
          ? { ...current, attempts, tries: event.tries, nextAttemptAt: event.nextAttemptAt }
          : { ...withoutQueueState(current), attempts, deliveryStatus: event.deliveryStatus, settledAt: at };
      this.#events.set(next.id, next);
      if (next.deliveryStatus !== 'PENDING') this.#settle(next, at);
      this.onQueued?.(next.envId, false);
    },
    'webhook.requeued': (event) => {
      const current = this.#take(event.id);
      const next: WebhookEvent = { ...withoutQueueState(current), deliveryStatus: 'PENDING' };
      this.#events.set(next.id, next);
      this.#queue(next.envId).insert(next.id);
      this.#passStaleSettled();
      this.onQueued?.(next.envId, false);
    },
    'webhooks.dropped': (event, at) => {
      const { ids } = event;
      for (let n = 0; n < ids.length; ) {
        const inStep = this.#dropRunInStep(ids, n, event.reason, at, event.envId);
        if (inStep > 0) {
          n += inStep;
          continue;
        }
        const id = ids[n++]!;
        const current = this.#take(id);
        const next: WebhookEvent = { ...withoutQueueState(current), deliveryStatus: 'FAILED', failureReason: event.reason, settledAt: at };
        this.#events.set(id, next);
        this.#settle(next, at);
      }
      this.onQueued?.(event.envId, false);
    },
    'webhooks.pruned': (event) => this.#prune(event.ids),
    'webhook.test.recorded': (event, at) => this.#made(event.envId, event.id, 'TEST', at, {}),
    'customer.opened': (event, at) => {
      if (!this.#envelope(event.e)) return;
      const customer = this.customers.get(openedCustomerId(event))!;
      if (customerEnvelopeType(customer) !== undefined) this.#made(event.e, webhookIdOfRecord(customer.id), 'CUSTOMER', at, { customer });
    },
    'customer.updated': (event, at) => {
      if (event.webhookId === undefined) return;
      const customer = this.customers.get(event.customer.id)!;
      this.#made(customer.envId, event.webhookId, 'CUSTOMER', at, { customer });
    },
    'verification.created': (event, at) => {
      const { verification } = event;
      if (this.#envelope(verification.envId) && verificationEnvelopeType(verification) !== undefined) {
        this.#made(verification.envId, webhookIdOfRecord(verification.id), 'VERIFICATION', at, { verification });
      }
    },
    'externalAccount.created': (event, at) => {
      const externalAccount = this.externalAccounts.get(event.account.id)!;
      if (this.#envelope(externalAccount.envId)) this.#made(externalAccount.envId, webhookIdOfRecord(externalAccount.id), 'EXTERNAL_ACCOUNT', at, { externalAccount });
    },
    'bulkImport.sliced': (event, at) => this.#importEnded(event.id, at),
    'bulkImport.failed': (event, at) => this.#importEnded(event.id, at),
  };

  /** A job's end (the bulk imports apply its event first) is its one BULK_UPLOAD event, in ENVELOPE environments. */
  #importEnded(jobId: string, at: number): void {
    const bulkImport = this.bulkImports.get(jobId)!;
    if (isFinished(bulkImport) && this.#envelope(bulkImport.envId)) this.#made(bulkImport.envId, webhookIdOfRecord(bulkImport.id), 'BULK_UPLOAD', at, { bulkImport });
  }

  /** Whether the environment makes its events in the envelope now. */
  #envelope(envId: string): boolean {
    return this.envs.get(envId)?.config.webhookFormat === 'ENVELOPE';
  }

  /** A new PENDING event of the environment's current format, reporting `resource`. */
  #made(envId: string, id: string, type: WebhookEventType, at: number, resource: Pick<WebhookEvent, 'customer' | 'verification' | 'externalAccount' | 'bulkImport'>): void {
    const event: { -readonly [K in keyof WebhookEvent]: WebhookEvent[K] } = { id, envId, type, timestamp: at, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, ...resource };
    if (this.#envelope(envId)) event.format = 'ENVELOPE';
    this.#put(event);
    this.onQueued?.(envId, true);
  }

  stored(record: WebhookEvent | WebhookStep): WebhookEvent | WebhookStep | StoredStep {
    if (!isStep(record)) return record;
    let reports: Array<StepReport | StoredReport> | undefined;
    for (let i = 0; i < record.reports.length; i++) {
      const report = record.reports[i]!;
      if (isQuoteAccount(report)) {
        reports ??= record.reports.slice();
        reports[i] = report === SOURCE_OF_QUOTE ? -1 : -2;
        continue;
      }
      if (typeof report === 'string') {
        if (!isPaymentStemOf(record.id, report)) continue;
        reports ??= record.reports.slice();
        reports[i] = lastByteOf(report);
        continue;
      }
      // The maps' own values: the writer runs outside any decision, and never loads.
      if (!('quoteId' in report)) {
        const version = storedAccountVersion(report, Map.prototype.get.call(this.accounts.records, report.id) as InternalAccount | undefined);
        if (version === undefined) continue;
        reports ??= record.reports.slice();
        reports[i] = version;
        continue;
      }
      if (!isPaymentStemOf(record.id, report.id) || Map.prototype.get.call(this.transactions.records, report.id) !== report) continue;
      reports ??= record.reports.slice();
      reports[i] = lastByteOf(report.id);
    }
    // Every report its quote gives was written as its number above.
    return reports === undefined ? record : withReports(record, 2, reports as StoredReport[]);
  }

  restore(record: WebhookEvent | WebhookStep | StoredStep): void {
    if ((record as StoredStep).step === 2) {
      // Listed and queued by its events' ids now; the map holds it with ids for reports until
      // every kind is restored (restoredAll), and nothing reads a step before then.
      const stored = record as StoredStep;
      this.#unresolved.push(stored);
      this.#putStep(stored as unknown as WebhookStep);
      return;
    }
    if (isStep(record as WebhookEvent | WebhookStep)) {
      this.#putStep(record as WebhookStep);
      return;
    }
    const event = record as WebhookEvent;
    // Snapshots taken before records were referenced hold the rendered resource.
    const legacy = typeof event.transaction?.createdAt === 'string' || typeof event.account?.createdAt === 'string';
    this.#put(legacy ? renderedOf(event) : event, true);
  }

  /**
   * The steps restored with transactions named by id take them, as the snapshot restored
   * them, and the account versions stored as they changed are rebuilt from their accounts.
   */
  restoredAll(): void {
    for (const stored of this.#unresolved) {
      // A transaction named by id stays so: read when an event is, not now (it may have left memory).
      const reports = stored.reports.map((report): StepReport => {
        if (typeof report === 'number') return report >= 0 ? transactionIdAtStem(stored.id, report) : report === -1 ? SOURCE_OF_QUOTE : PAYEE_OF_QUOTE;
        if (!isStoredAccountVersion(report)) return report;
        const account = this.accounts.get(report[0]);
        if (account === undefined) throw new Error(`webhook step ${stored.id} reports account ${report[0]}, which the snapshot does not hold`);
        return accountVersionAt(account, report);
      });
      this.#events.install(stored.id, withReports(stored, 1, reports));
    }
    this.#unresolved = [];
    // The steps restored quotes derive, but those a snapshot stored (one of their events
    // changed): listed and queued, merged in one pass per environment.
    const byEnv = new Map<string, string[]>();
    for (const [stem, envId, facts] of this.#derivedRestored) {
      if (this.#events.peek(stem) !== undefined) continue;
      const ids = derivedEventIds(stem, facts);
      this.#derivedEvents += ids.length;
      let envIds = byEnv.get(envId);
      if (envIds === undefined) byEnv.set(envId, (envIds = []));
      for (const id of ids) envIds.push(id);
    }
    this.#derivedRestored = [];
    for (const [envId, ids] of byEnv) {
      bucket(this.#byEnv, envId).merge(ids.slice());
      this.#queue(envId).merge(ids);
    }
  }

  /**
   * A new version replaced `before`: a step that reports the transaction is noted changed, so
   * the next snapshot writes the version it reports in full (StoredStep). By id, not by the
   * version object: a settled transaction left memory and was read back as another object
   * (registry.ts, RecordKind.settled) that the step's version equals.
   */
  #reportReplaced(before: Transaction): void {
    const id = paymentStemOf(before.id, 'Webhook');
    const stored = Map.prototype.get.call(this.#events, id) as WebhookEvent | WebhookStep | undefined;
    // A step its quote derives is stored from now on.
    const step = stored === undefined ? this.#derivedStep(id) : isStep(stored) ? stored : undefined;
    if (step === undefined) return;
    const at = step.reports.findIndex((report) => reportedIdOf(report) === before.id);
    if (at < 0) return;
    let next = step;
    if (typeof step.reports[at] === 'string') {
      // Its events report the version replaced now: the step holds it from here on.
      const reports = step.reports.slice();
      reports[at] = before;
      next = withReports(step, 1, reports);
    }
    // Noted changed, unchecked: the decision that changed the transaction holds its account, not the step's events.
    this.#replaceStep(step, next, true);
  }

  /**
   * Stores `next`, the new version of `step`: a step its quote derived is stored from now on,
   * its events no longer counted as derived. `unchecked`: outside the holding check.
   */
  #replaceStep(step: WebhookStep, next: WebhookStep, unchecked = false): void {
    if (step.derived === true && this.#events.peek(step.id) === undefined) this.#derivedEvents -= step.reports.length;
    // Unchecked, yet through the map's own set: a new id must raise the ids it knows of.
    if (unchecked) this.#events.setUnchecked(step.id, next);
    else this.#events.set(step.id, next);
  }

  #put(event: WebhookEvent, restored = false): void {
    if (event.deliveryStatus !== 'PENDING' && event.settledAt === undefined) event = { ...event, settledAt: inferredSettledAt(event) };
    this.#store(event, restored);
    bucket(this.#byEnv, event.envId).insert(event.id);
    if (event.deliveryStatus === 'PENDING') this.#queue(event.envId).insert(event.id);
    else if (restored) this.#settled.restore(event.id, event.settledAt!);
    else this.#settled.push(event.id, event.settledAt!);
  }

  /** A PENDING event is DELIVERED or FAILED now: off its queue, into the retention order. */
  #settle(event: WebhookEvent, at: number): void {
    this.#unqueue(event.envId, event.id);
    this.#settled.push(event.id, at);
  }

  /** Removes pruned events from the records and every index. */
  #prune(ids: readonly string[]): void {
    const goneByEnv = new Map<string, Set<string>>();
    for (const id of ids) {
      const own = this.#events.get(id);
      let envId: string;
      if (own !== undefined) {
        envId = own.envId;
        this.#events.delete(id);
      } else {
        // A dropped event its step still holds is taken out of it, and is then nowhere.
        envId = this.#takeFromStep(id).step.envId;
      }
      let gone = goneByEnv.get(envId);
      if (gone === undefined) goneByEnv.set(envId, (gone = new Set()));
      gone.add(id);
    }
    for (const [envId, gone] of goneByEnv) {
      const listed = this.#byEnv.get(envId)!;
      listed.removeAll(gone);
      if (listed.ids.length === 0) this.#byEnv.delete(envId);
    }
    this.#passStaleSettled();
  }

  /** Drops the front entries of the retention order whose event is gone, PENDING again, or settled again later. */
  #passStaleSettled(): void {
    for (let head = this.#settled.head(); head !== undefined && !this.#isSettledAt(head.id, head.at); head = this.#settled.head()) this.#settled.shift();
  }

  #isSettledAt(id: string, at: number): boolean {
    const own = this.#events.peek(id) as WebhookEvent | undefined;
    if (own !== undefined) return own.settledAt === at;
    // A step's event settles only by a drop, which stores its step.
    const held = this.#storedStepHolding(id);
    return held !== undefined && droppedAtOf(held.step, held.i) === at;
  }

  /** Visits settled events oldest settled first (id, when it settled) while `visit` returns true. */
  walkSettled(visit: (id: string, settledAt: number) => boolean): void {
    this.#passStaleSettled();
    this.#settled.walk((id, at) => !this.#isSettledAt(id, at) || visit(id, at));
  }

  /** When the oldest settled event is past its retention; undefined: none settled. */
  retentionEndsAt(): number | undefined {
    this.#passStaleSettled();
    const head = this.#settled.head();
    return head === undefined ? undefined : head.at + WEBHOOK_RETENTION_MS;
  }

  #queue(envId: string): PendingQueue {
    let queue = this.#pendingByEnv.get(envId);
    if (queue === undefined) {
      queue = new PendingQueue();
      this.#pendingByEnv.set(envId, queue);
    }
    return queue;
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    for (const [envId, pending] of this.#pendingByEnv) {
      for (const id of pending) {
        // Read without building the event: a step's would read back the transactions it names.
        const held = this.#storedStepHolding(id);
        const own = held === undefined ? this.#events.peek(id) : undefined;
        const pendingNow =
          held !== undefined ? droppedAtOf(held.step, held.i) === 0 : own !== undefined ? !isStep(own) && own.deliveryStatus === 'PENDING' : this.#mayBeDerived(id);
        if (!pendingNow) problems.push(`webhook event ${id} is queued in ${envId} but not PENDING`);
      }
    }
    for (const event of this.#events.values()) {
      if (isStep(event)) {
        eachStepEvent(event, (id) => {
          if (this.#events.peek(id) !== undefined) problems.push(`webhook event ${id} is stored on its own and in its step ${event.id}`);
        });
        continue;
      }
      if ((event.deliveryStatus === 'PENDING') !== (event.settledAt === undefined)) problems.push(`webhook event ${event.id} is ${event.deliveryStatus} with a settling time, or settled without one`);
    }
    if (this.#derivedEvents < 0) problems.push(`${this.#derivedEvents} events of derived webhook steps`);
    return problems;
  }

  /**
   * Whether `id`, with no record of its own nor a stored step, is an event of a step its quote
   * derives (PENDING, untried): asked of the quote while memory holds it; a quote that left
   * memory is not read back for it (a backlog's million events would read every quote).
   */
  #mayBeDerived(id: string): boolean {
    const stem = id.slice(0, -2);
    const quote = Map.prototype.get.call(this.quotes.records, quoteIdAtStem(stem)) as Quote | undefined;
    if (quote === undefined) return true;
    return quote.webhookStep !== undefined && derivedEventIds(stem, quote.webhookStep).includes(id);
  }

  get(id: string): WebhookEvent | undefined {
    const own = this.#events.get(id);
    if (own !== undefined) return isStep(own) ? undefined : own;
    return this.#inStep(id);
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /**
   * Whether `id` is a PENDING event a full backlog may drop (not an approval), read without
   * building the event: one of a step's, the usual case, from its step alone. Building each
   * candidate (a miss in the map of events of their own first) cost a full backlog's payment
   * load about 3% of its time (docs/bench.md, session 45).
   */
  droppable(id: string): boolean {
    const held = this.#storedStepHolding(id);
    if (held !== undefined) return droppedAtOf(held.step, held.i) === 0;
    const own = this.#events.get(id);
    // A queued event with no record and no stored step is a derived step's: PENDING, no approval.
    if (own === undefined) return this.#events.peek(id.slice(0, -2)) === undefined;
    return !isStep(own) && own.deliveryStatus === 'PENDING' && own.approval !== true;
  }

  /** Every event one by one, those of steps built as they were stored before steps (the state digest's view). */
  *eachRecord(): Iterable<readonly [string, WebhookEvent]> {
    for (const [id, record] of this.#events) {
      if (!isStep(record)) {
        yield [id, record];
        continue;
      }
      yield* this.#eventsOf(record);
    }
    // The steps quotes derive (every quote is in memory: capture loads all).
    for (const quote of this.quotes.records.values()) {
      if (quote.webhookStep === undefined) continue;
      const stem = derivedStemOf(quote.id);
      if (this.#events.peek(stem) === undefined) yield* this.#eventsOf(this.#derivedStep(stem)!);
    }
  }

  #eventsOf(step: WebhookStep): Array<readonly [string, WebhookEvent]> {
    const held: Array<readonly [string, WebhookEvent]> = [];
    eachStepEvent(step, (eventId, i) => held.push([eventId, stepEvent(step, i, eventId, this.#current)]));
    return held;
  }

  /** How many events there are (a step counts the events it holds): `records` counts a step once. */
  get eventCount(): number {
    let n = this.#derivedEvents;
    for (const record of this.#events.values()) n += isStep(record) ? record.reports.length - popCount(record.taken) : 1;
    return n;
  }

  /** A step is the actor of none: each of its events is one (an applier changes only its own event's bit, in log order). */
  actorOf(record: WebhookEvent | WebhookStep): string | undefined {
    return isStep(record) ? undefined : record.id;
  }

  /** The step, stored or derived by its quote, that holds the event `id` (not taken out), and the event's index in it. */
  #stepHolding(id: string): { step: WebhookStep; i: number } | undefined {
    return heldIn(this.#stepAt(id.slice(0, -2)), id);
  }

  /** The stored step that holds the event `id`, and its index: what needs no quote read back. */
  #storedStepHolding(id: string): { step: WebhookStep; i: number } | undefined {
    const step = this.#events.peek(id.slice(0, -2));
    return step === undefined || !isStep(step) ? undefined : heldIn(step, id);
  }

  /** The step under `stem`: stored, or derived by its quote (built at each read). */
  #stepAt(stem: string): WebhookStep | undefined {
    const stored = this.#events.peek(stem);
    if (stored !== undefined) return isStep(stored) ? stored : undefined;
    return this.#derivedStep(stem);
  }

  /**
   * The step the quote of `stem` derives (Quote.webhookStep), if it does (and there is such a
   * quote): as derivedStepOf makes it.
   */
  #derivedStep(stem: string): WebhookStep | undefined {
    const quote = this.quotes.peek(quoteIdAtStem(stem));
    const facts = quote?.webhookStep;
    return facts === undefined ? undefined : derivedStepOf(stem, quote!.envId, facts[0] === 1);
  }

  /**
   * The step under `stem` that a queued event with no record of its own nor a stored step
   * belongs to: its quote's, built without the quote (a full backlog's drop comes long after
   * the quote left memory). Whether the payment made a receiver's transaction is read from
   * the listing: the byte 02 is then the transaction's, no event's.
   */
  #derivedStepUnread(stem: string, envId: string): WebhookStep {
    const listed = this.#byEnv.get(envId)?.ids ?? [];
    const second = stem + '02';
    return derivedStepOf(stem, envId, listed[lowerBound(listed, second)] !== second);
  }

  /** The account version the quote of the step `stem` derives (Quote.webhookStep): the rest is the account's, which no change touches. */
  #accountOfQuote(stem: string, which: QuoteAccount): InternalAccount {
    const quote = this.quotes.peek(quoteIdAtStem(stem));
    const facts = quote?.webhookStep;
    if (facts === undefined) throw new Error(`webhook step ${stem} reports an account of its quote, which derives no step`);
    const source = which === SOURCE_OF_QUOTE;
    const id = source ? quote!.sourceAccountId : quote!.payeeAccountId!;
    const account = this.accounts.peek(id);
    if (account === undefined) throw new Error(`webhook step ${stem} reports account ${id}, which does not exist`);
    return source ? accountVersionAt(account, [id, facts[1], facts[2], facts[3], quote!.createdAt]) : accountVersionAt(account, [id, facts[4], facts[5], facts[6], quote!.createdAt]);
  }

  /** The event `id` while its step holds it. */
  #inStep(id: string): WebhookEvent | undefined {
    const held = this.#stepHolding(id);
    return held === undefined ? undefined : stepEvent(held.step, held.i, id, this.#current);
  }

  /**
   * The PENDING events from `ids[from]` on that one step holds, FAILED there as dropped at
   * `at` for `reason`: the step's new version says so (droppedAt), stored once for the run.
   * A payment's events are consecutive in the queue, so a full backlog drops them together,
   * and a version stored per event cost a copy of the step and a change noted each.
   * Returns how many it dropped; 0, changing nothing, when no step holds `ids[from]`
   * PENDING, or its step's dropped events FAILED for another reason: the caller takes it
   * out of its step instead. The run ends at the first id its step does not hold PENDING
   * (an id listed twice included), which the caller then drops on its own, as if each
   * event of the run had been dropped before it.
   */
  #dropRunInStep(ids: readonly string[], from: number, reason: string, at: number, envId: string): number {
    const first = ids[from]!;
    const stem = first.slice(0, -2);
    // A queued event with no record of its own and no stored step is its quote's step's.
    // (The stem is looked up once: each lookup is a miss in a map of every stored event.)
    const atStem = this.#events.peek(stem);
    const held =
      atStem !== undefined ? (isStep(atStem) ? heldIn(atStem, first) : undefined) : this.#events.peek(first) === undefined ? heldIn(this.#derivedStepUnread(stem, envId), first) : undefined;
    if (held === undefined) return 0;
    const { step } = held;
    if (step.failureReason !== undefined && step.failureReason !== reason) return 0;
    let droppedAt: number[] | undefined;
    let n = from;
    for (; n < ids.length; n++) {
      const id = ids[n]!;
      // heldIn reads the id's last byte alone: the rest must be the step's.
      const i = n === from ? held.i : id.length === first.length && id.startsWith(stem) ? heldIn(step, id)?.i : undefined;
      if (i === undefined || droppedAtOf(step, i) !== 0 || (droppedAt !== undefined && droppedAt[i] !== 0)) break;
      droppedAt ??= step.droppedAt === undefined ? new Array<number>(step.reports.length).fill(0) : step.droppedAt.slice();
      droppedAt[i] = at;
      this.#unqueue(step.envId, id);
      this.#settled.push(id, at);
    }
    if (droppedAt === undefined) return 0;
    this.#replaceStep(step, { ...step, droppedAt, failureReason: reason });
    return n - from;
  }

  /**
   * The event `id` as it is, about to change: stored under its own id from now on (the
   * caller sets it), so taken out of its step if one holds it.
   */
  #take(id: string): WebhookEvent {
    const own = this.#events.get(id);
    if (own !== undefined) return own as WebhookEvent;
    const held = this.#stepHolding(id);
    if (held === undefined) throw new Error(`webhook event ${id} does not exist`);
    // Built before it is taken out: the last one out ends a derived step's quote facts, which its reports may need.
    const event = stepEvent(held.step, held.i, id, this.#current);
    this.#takeOut(held);
    return event;
  }

  /** Takes the event `id` out of the step that holds it: the step as it was, and the event's index. */
  #takeFromStep(id: string): { step: WebhookStep; i: number } {
    const held = this.#stepHolding(id);
    if (held === undefined) throw new Error(`webhook event ${id} does not exist`);
    this.#takeOut(held);
    return held;
  }

  /** Takes event `i` out of `step` (its bit in `taken`); the step goes with its last event. */
  #takeOut(held: { step: WebhookStep; i: number }): void {
    const { step, i } = held;
    const taken = step.taken | (1 << i);
    if (taken !== 2 ** step.reports.length - 1) {
      this.#replaceStep(step, { ...step, taken });
      return;
    }
    if (this.#events.peek(step.id) !== undefined) this.#events.delete(step.id);
    else this.#derivedEvents -= step.reports.length;
    // Its quote derived it: it must not again.
    if (step.derived === true) this.quotes.endDerivedStep(quoteIdAtStem(step.id));
  }

  idsIn(envId: string): readonly string[] {
    return this.#byEnv.get(envId)?.ids ?? [];
  }

  /** The oldest PENDING event of the environment: the next one its endpoint gets. */
  queueHead(envId: string): WebhookEvent | undefined {
    const id = this.#pendingByEnv.get(envId)?.head();
    return id === undefined ? undefined : this.get(id);
  }

  /**
   * When the head of `envId`'s queue may be tried (0: at once; undefined: the queue is empty),
   * without building it: a step's event would read the transaction it reports, which may have
   * left memory, to say what a step's untried event always says.
   */
  queueHeadDueAt(envId: string): number | undefined {
    const id = this.#pendingByEnv.get(envId)?.head();
    if (id === undefined) return undefined;
    const own = this.#events.peek(id);
    if (own !== undefined && !isStep(own)) return own.nextAttemptAt ?? 0;
    // An event of a stored step, or, with no step stored, of one its quote derives: untried.
    return this.#storedStepHolding(id) !== undefined || this.#events.peek(id.slice(0, -2)) === undefined ? 0 : undefined;
  }

  /** The PENDING events of one environment, oldest first. */
  pendingIdsIn(envId: string): Iterable<string> {
    return this.#pendingByEnv.get(envId) ?? [];
  }

  /** Environments with PENDING events. */
  queuedEnvs(): string[] {
    return [...this.#pendingByEnv.keys()];
  }

  /** PENDING events of one environment: its delivery queue's length. */
  pendingIn(envId: string): number {
    return this.#pendingByEnv.get(envId)?.size ?? 0;
  }

  /** PENDING events, all environments. */
  get pendingCount(): number {
    let n = 0;
    for (const queue of this.#pendingByEnv.values()) n += queue.size;
    return n;
  }

  #record(webhooks: readonly WebhookRecordedAs[], at: number): void {
    if (webhooks.length > 1) {
      const step = this.#stepOf(webhooks, at);
      if (step !== undefined) {
        this.#putStep(step, false);
        this.onQueued?.(step.envId, true);
        return;
      }
    }
    for (const logged of webhooks) {
      const event = 'deliveryStatus' in logged ? renderedOf(logged) : this.#resolve(logged, at);
      this.#put(event);
      this.onQueued?.(event.envId, true);
    }
  }

  /**
   * A step as its payment's derivation named it: the WebhookStep #stepOf makes of its
   * events' logged form (loggedOfStep), built without that form. The accounts are read as
   * the entry's postings left them (their kind applies it first). What #stepOf would not
   * make a step of (fewer than two events, records of two environments, the stem taken) is
   * recorded event by event from the logged form, as before.
   */
  #recordDerived(derived: DerivedStep, at: number, change: { readonly id: string; readonly webhookStep?: DerivedStepFacts } | undefined): void {
    const { transactions, accountIds } = derived;
    // Made at its length: an array grown by push from empty keeps room for 17, and the step keeps it.
    const reports = new Array<StepReport>(transactions.length + accountIds.length);
    const envId = (transactions[0] ?? this.accounts.get(accountIds[0] ?? ''))?.envId;
    let oneEnv = envId !== undefined;
    let n = 0;
    for (const tx of transactions) {
      if (tx.envId !== envId) oneEnv = false;
      // By id: the entry made this version, and a later one tells #reportReplaced, which puts this
      // one here. It finds the step by the transaction's id, so only a transaction whose id derives
      // the stem goes by id (a payment's two do).
      reports[n++] = isPaymentStemOf(derived.stem, tx.id) ? tx.id : tx;
    }
    for (const accountId of accountIds) {
      const account = this.accounts.get(accountId);
      if (account === undefined) throw new Error(`a webhook step ${derived.stem} reports ${accountId}, which does not exist`);
      if (account.envId !== envId) oneEnv = false;
      reports[n++] = account;
    }
    const facts = change?.webhookStep;
    if (!oneEnv || reports.length < 2 || this.#events.peek(derived.stem) !== undefined) {
      // Events of their own: a quote that says it derives them (its kind applied the entry first) must not.
      if (facts !== undefined) this.quotes.endDerivedStep(change!.id);
      this.#record(loggedOfStep(derived), at);
      return;
    }
    if (facts !== undefined && this.#derives(change!.id, facts, derived, reports, at)) {
      // Its quote derives it (#derivedStep): listed and queued, stored nowhere.
      const listed = bucket(this.#byEnv, envId!);
      const queue = this.#queue(envId!);
      // The layout #derives found the quote's step to have.
      eachEventId(derived.stem, derived.first, derived.gaps, reports.length, (id) => {
        listed.insert(id);
        queue.insert(id);
      });
      this.#derivedEvents += reports.length;
    } else {
      const step = this.#newStep(derived.stem, envId!, at, derived.first, derived.gaps, reports);
      // A quote that says it derives the step has its facts cleared when the stored step ends.
      this.#putStep(facts === undefined ? step : { ...step, derived: true }, false);
    }
    this.onQueued?.(envId!, true);
  }

  /**
   * Whether quote `quoteId`'s facts make exactly the step #newStep would store of `derived`
   * with `reports` at `at` (#derivedStep builds it from them): the step under the quote's
   * UUID, FLAT, made at the quote's time, its transactions by id, and its two accounts'
   * versions, the quote's source account's and payee account's, the facts' amounts now.
   */
  #derives(quoteId: string, facts: DerivedStepFacts, derived: DerivedStep, reports: readonly StepReport[], at: number): boolean {
    const quote = this.quotes.peek(quoteId);
    const receiver = facts[0] === 1;
    if (quote === undefined || quoteIdAtStem(derived.stem) !== quoteId || quote.createdAt !== at || idTimeOf(quoteId) !== at || this.#envelope(quote.envId)) return false;
    if (derived.first !== 1 || derived.gaps !== (receiver ? 2 : 0) || reports.length !== (receiver ? 4 : 3)) return false;
    if (reports[0] !== transactionIdAtStem(derived.stem, 0) || (receiver && reports[1] !== transactionIdAtStem(derived.stem, 2))) return false;
    const source = reports[reports.length - 2]!;
    const payee = reports[reports.length - 1]!;
    return isVersionAt(source, quote.sourceAccountId, facts[1], facts[2], facts[3], at) && isVersionAt(payee, quote.payeeAccountId, facts[4], facts[5], facts[6], at);
  }

  /** A new step of events, in the ENVELOPE format where its environment delivers so. */
  #newStep(id: string, envId: string, at: number, first: number, gaps: number, reports: Array<StepReport>): WebhookStep {
    if (this.#envelope(envId)) return { id, step: 1, envId, timestamp: at, format: 'ENVELOPE', first, gaps, reports, taken: 0 };
    return { id, step: 1, envId, timestamp: at, first, gaps, reports, taken: 0 };
  }

  /**
   * The logged events as one step (WebhookStep), if they can be: payment events, no approval,
   * each reporting one record of one environment, with ids counting up from the first's
   * within MAX_STEP_SPAN; and no step stored under their stem yet (two steps of one entry may
   * share it: the second is stored event by event).
   */
  #stepOf(webhooks: readonly WebhookRecordedAs[], at: number): WebhookStep | undefined {
    const firstId = webhooks[0]!.id;
    const first = lastByteOf(firstId);
    if (first < 0) return undefined;
    const stem = firstId.slice(0, -2);
    let gaps = 0;
    let last = first;
    const reports: Array<Transaction | InternalAccount> = [];
    for (let i = 0; i < webhooks.length; i++) {
      const logged = webhooks[i]!;
      if ('deliveryStatus' in logged || logged.approval === true || logged.envId !== undefined || logged.timestamp !== undefined) return undefined;
      const byte = lastByteOf(logged.id);
      if (logged.id.length !== firstId.length || !logged.id.startsWith(stem) || (i > 0 && byte <= last) || byte - first > MAX_STEP_SPAN) return undefined;
      for (let skipped = last + 1; skipped < byte; skipped++) gaps |= 1 << (skipped - first);
      last = byte;
      const report = this.#reportOf(logged);
      if (report === undefined || reportedType(report) !== logged.type || (i > 0 && report.envId !== reports[0]!.envId)) return undefined;
      reports.push(report);
    }
    if (this.#events.peek(stem) !== undefined) return undefined;
    return this.#newStep(stem, reports[0]!.envId, at, first, gaps, reports);
  }

  /** The one record a logged payment event reports (undefined: it names none or both); a missing record is a bug that stops the apply. */
  #reportOf(logged: LoggedWebhook): Transaction | InternalAccount | undefined {
    const { transactionId, accountId } = logged;
    if ((transactionId === undefined) === (accountId === undefined)) return undefined;
    const report = transactionId !== undefined ? this.transactions.get(transactionId) : this.accounts.get(accountId!);
    if (report === undefined) throw new Error(`webhook event ${logged.id} reports ${transactionId ?? accountId}, which does not exist`);
    return report;
  }

  /**
   * Sets `record` under its id, which must be new unless it is `restored`. A new id grows the
   * map: checked after the set, not looked up before it, since a lookup in a map of a million
   * events costs about a microsecond, and an apply that throws is fatal.
   */
  #store(record: WebhookEvent | WebhookStep, restored: boolean): void {
    const countBefore = this.#events.size;
    this.#events.set(record.id, record);
    if (!restored && this.#events.size === countBefore) throw new Error(`webhook ${isStep(record) ? 'step' : 'event'} ${record.id} exists already`);
  }

  /**
   * Stores a step and lists the events it holds, queuing the PENDING ones and putting the
   * dropped ones (only a restored step has any) in the retention order; an event with a
   * state of its own is taken out.
   */
  #putStep(step: WebhookStep, restored = true): void {
    this.#store(step, restored);
    const listed = bucket(this.#byEnv, step.envId);
    let queue: PendingQueue | undefined;
    eachStepEvent(step, (id, i) => {
      listed.insert(id);
      const dropped = droppedAtOf(step, i);
      if (dropped === 0) (queue ??= this.#queue(step.envId)).insert(id);
      else this.#settled.restore(id, dropped);
    });
  }

  /** The event a logged webhook stands for, in the entry of time `at`. */
  #resolve(logged: LoggedWebhook, at: number): WebhookEvent {
    const { transactionId, accountId } = logged;
    const tx = transactionId === undefined ? undefined : this.transactions.get(transactionId);
    if (transactionId !== undefined && tx === undefined) throw new Error(`webhook event ${logged.id} reports transaction ${transactionId}, which does not exist`);
    const account = accountId === undefined ? undefined : this.accounts.get(accountId);
    if (accountId !== undefined && account === undefined) throw new Error(`webhook event ${logged.id} reports account ${accountId}, which does not exist`);
    const envId = logged.envId ?? tx?.envId ?? account?.envId;
    if (envId === undefined) throw new Error(`webhook event ${logged.id} names neither its environment nor a record of one`);
    const timestamp = logged.timestamp ?? at;
    const envelope = this.#envelope(envId);
    // A payment's event in a FLAT environment, its resource in the literal: a property added
    // after a literal costs the object a property array of its own, kept as long as the event.
    if (logged.approval !== true && !envelope) {
      if (tx !== undefined && account === undefined) return { id: logged.id, envId, type: logged.type, timestamp, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, transaction: tx };
      if (account !== undefined && tx === undefined) return { id: logged.id, envId, type: logged.type, timestamp, deliveryStatus: 'PENDING', attempts: NO_ATTEMPTS, account };
    }
    // Written out: object rest with excluded keys takes V8's slow path.
    const event: { -readonly [K in keyof WebhookEvent]: WebhookEvent[K] } = {
      id: logged.id,
      envId,
      type: logged.type,
      timestamp,
      deliveryStatus: 'PENDING',
      attempts: NO_ATTEMPTS,
    };
    if (logged.approval === true) event.approval = true;
    if (tx !== undefined) event.transaction = tx;
    if (account !== undefined) event.account = account;
    if (envelope) event.format = 'ENVELOPE';
    return event;
  }

  #unqueue(envId: string, id: string): void {
    const pending = this.#pendingByEnv.get(envId);
    if (pending === undefined) return;
    pending.remove(id);
    if (pending.size === 0) this.#pendingByEnv.delete(envId);
  }
}

/** The health of each environment's endpoint, as its tries left it (see WebhookEndpoint). */
type EndpointEvent = Extract<WebhookDeliveryEvent, { type: 'webhook.attempted' }>;

export class WebhookEndpoints implements RecordKind<WebhookEndpoint, EndpointEvent> {
  readonly idPrefix = 'WebhookEndpoint:';
  readonly #endpoints = new RecordMap<WebhookEndpoint>();
  readonly records: ReadonlyMap<string, WebhookEndpoint> = this.#endpoints;

  /** The event a try names exists before the try, so its environment is known. */
  constructor(private readonly events: WebhookEvents) {}

  readonly appliers: Appliers<EndpointEvent> = {
    'webhook.attempted': (event) => {
      if (event.endpoint === undefined) return;
      const envId = this.events.get(event.id)!.envId;
      const id = endpointIdOf(envId);
      // Up with nothing unanswered is the state without a record.
      if (event.endpoint.unanswered === 0) this.#endpoints.delete(id);
      else this.#endpoints.set(id, { id, envId, ...event.endpoint });
    },
  };

  restore(endpoint: WebhookEndpoint): void {
    this.#endpoints.set(endpoint.id, endpoint);
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    for (const endpoint of this.#endpoints.values()) {
      if (endpoint.id !== endpointIdOf(endpoint.envId)) problems.push(`webhook endpoint ${endpoint.id} is filed under another environment than ${endpoint.envId}`);
      if ((endpoint.downSince === undefined) !== (endpoint.nextProbeAt === undefined)) problems.push(`webhook endpoint ${endpoint.id} is down without a next probe, or the reverse`);
    }
    return problems;
  }

  get(envId: string): WebhookEndpoint | undefined {
    return this.#endpoints.get(endpointIdOf(envId));
  }

  /** Endpoints that are down now. */
  down(): WebhookEndpoint[] {
    return [...this.#endpoints.values()].filter((e) => e.downSince !== undefined);
  }
}

/**
 * One environment's PENDING event ids in ascending (creation) order. Events join at the
 * tail (new ids are the newest) and leave from the head (delivered in order), so the head
 * is an offset into the array rather than a shift of it: a delivery from a million-event
 * backlog costs O(1), not a million-element move. The rare out-of-order join (a
 * redelivery) or leave (an approval failed behind the head) splices.
 */
class PendingQueue implements Iterable<string> {
  #ids: string[] = [];
  #start = 0;

  get size(): number {
    return this.#ids.length - this.#start;
  }

  head(): string | undefined {
    return this.#ids[this.#start];
  }

  insert(id: string): void {
    const ids = this.#ids;
    if (ids.length === this.#start || ids[ids.length - 1]! < id) {
      ids.push(id);
      return;
    }
    const at = lowerBound(ids, id);
    if (ids[at] !== id) ids.splice(at, 0, id);
  }

  /** Inserts every id of `more` in one pass (a restore's events of derived steps). */
  merge(more: string[]): void {
    const live = this.#start === 0 ? this.#ids : this.#ids.slice(this.#start);
    insertSorted(live, more);
    this.#ids = live;
    this.#start = 0;
  }

  remove(id: string): void {
    const ids = this.#ids;
    if (ids[this.#start] === id) {
      // '' sorts before every id, so the array stays sorted for lowerBound.
      ids[this.#start++] = '';
      // Reclaims the dead prefix once it outweighs the live part.
      if (this.#start > 1024 && this.#start * 2 > ids.length) {
        this.#ids = ids.slice(this.#start);
        this.#start = 0;
      }
      return;
    }
    const at = lowerBound(ids, id);
    if (ids[at] === id) ids.splice(at, 1);
  }

  *[Symbol.iterator](): Iterator<string> {
    for (let i = this.#start; i < this.#ids.length; i++) yield this.#ids[i]!;
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
  const { tries: _tries, nextAttemptAt: _next, failureReason: _reason, settledAt: _settled, ...rest } = event;
  return rest;
}

/**
 * When an event settled that was recorded before events noted it (a snapshot or a logged
 * rendered event of then): its last try, or when it was made. A dropped event may have
 * settled later than that, so it may be pruned early by the time it waited in the backlog.
 */
function inferredSettledAt(event: WebhookEvent): number {
  return event.attempts.at(-1)?.at ?? event.timestamp;
}
