// Transactions: the record of money moved by an executed quote (SERVICE_SPEC parts 2 and 3,
// CONTRACT.md "Money"). A transaction is a record owned by the internal account it moves
// money for, and changes only under that account's actor: an OUTGOING transaction belongs
// to its source account, an INCOMING one to its destination account.
//
// Every change of a transaction is one `payment.recorded` event that carries, together,
// the new records (transactions, the quote), the balance postings, the ledger deltas and
// the webhook events that report it: one log entry, all or nothing. A quote's execution
// logs `payment.decided`, its facts, and that `payment.recorded` is derived from them when
// the entry applies (actors/payment.ts, executionRecorded).
//
// External payouts follow the sandbox outcome table of CONTRACT.md. The outcome is fixed
// when the quote executes (from the destination's identifier), stored on the transaction,
// and played out by one durable timer keyed by the transaction id.
import { idOf, idTimeOf, type LoggedId } from '../src/engine/ids.js';
import { derivedFrom, paymentIdAt, quoteIdSharedBy } from './derived-ids.js';
import { ChangeTrackingMap } from '../src/engine/change-log.js';
import { DomainError } from './errors.js';
import { fundingReference } from './internal-account.js';
import type { ExternalAccount } from './external-account.js';
import { primaryIdentifier, sandboxSuffix } from './identifiers.js';
import type { SandboxReceiverBehaviour } from './lookup.js';
import type { Environment } from './platform.js';
import { renderDestination, TRANSACTION_DERIVED, type DestinationView, type Quote, type QuoteDestination, type QuoteTimer } from './quote.js';
import { currencyObject, type Currency } from './reference.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export type TransactionStatus = 'CREATED' | 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'REJECTED' | 'FAILED' | 'REFUNDED' | 'EXPIRED';
export const TRANSACTION_STATUSES: readonly TransactionStatus[] = ['CREATED', 'PENDING', 'PROCESSING', 'COMPLETED', 'REJECTED', 'FAILED', 'REFUNDED', 'EXPIRED'];
export type TransactionType = 'INCOMING' | 'OUTGOING';
export const TRANSACTION_TYPES: readonly TransactionType[] = ['INCOMING', 'OUTGOING'];
export type FailureReason =
  | 'LNURLP_FAILED'
  | 'PAY_REQUEST_FAILED'
  | 'PAYMENT_APPROVAL_WEBHOOK_ERROR'
  | 'PAYMENT_APPROVAL_TIMED_OUT'
  | 'OFFRAMP_FAILED'
  | 'MISSING_MANDATORY_PAYEE_DATA'
  | 'QUOTE_EXPIRED'
  | 'QUOTE_EXECUTION_FAILED'
  /** A bank payout cancelled by the platform while still in flight (POST /transactions/{id}/cancel, CONTRACT.md). */
  | 'CANCELLED';
export const FAILURE_REASONS: readonly FailureReason[] = [
  'LNURLP_FAILED',
  'PAY_REQUEST_FAILED',
  'PAYMENT_APPROVAL_WEBHOOK_ERROR',
  'PAYMENT_APPROVAL_TIMED_OUT',
  'OFFRAMP_FAILED',
  'MISSING_MANDATORY_PAYEE_DATA',
  'QUOTE_EXPIRED',
  'QUOTE_EXECUTION_FAILED',
  'CANCELLED',
];

export type TransactionSource =
  | { readonly sourceType: 'ACCOUNT'; readonly accountId: string }
  /** Money sent from outside for a REALTIME_FUNDING quote. */
  | { readonly sourceType: 'REALTIME_FUNDING'; readonly currency: string }
  /** The sender of an incoming UMA payment (POST /sandbox/uma/receive). */
  | { readonly sourceType: 'UMA_ADDRESS'; readonly umaAddress: string }
  /** Simulated funds added in sandbox (POST /sandbox/internal-accounts/{id}/fund). */
  | { readonly sourceType: 'SANDBOX_FUNDING' };

/** The spec's subset of rateDetails that a transaction shows. */
export interface TransactionRateDetails {
  readonly serviceApiMultiplier: number;
  readonly serviceApiFixedFee: number;
  readonly serviceApiVariableFeeRate: number;
  readonly serviceApiVariableFeeAmount: number;
}

/** What the pending timer of an external payout does when it fires. */
export type PayoutOutcome =
  /** in transit -> outflow: COMPLETED */
  | 'SETTLE'
  /** in transit and fees -> back to the source: FAILED, then REFUNDED */
  | 'FAIL_REFUND'
  /** a transfer-out the bank rejects: in transit -> back to the source: REJECTED, then REFUNDED */
  | 'REJECT_REFUND'
  /** in transit -> outflow, the money is gone: FAILED */
  | 'FAIL_LOST'
  /** a settled payout comes back (its outflow cancelled) and is refunded with its fees: FAILED, then REFUNDED */
  | 'RETURN_REFUND'
  /** a direct pull the bank rejects (nothing had moved): REJECTED */
  | 'PULL_REJECTED'
  /** a direct pull that fails (nothing had moved): FAILED */
  | 'PULL_FAILED';

export interface PendingOutcome {
  readonly outcome: PayoutOutcome;
  readonly due: number;
  readonly failureReason?: FailureReason;
}

export interface Transaction {
  readonly id: string;
  readonly envId: string;
  readonly type: TransactionType;
  readonly status: TransactionStatus;
  /**
   * The account the transaction moves money for: the source of an outgoing transaction
   * (an internal account, or the bank account of a direct pull), the destination of an
   * incoming one.
   */
  readonly accountId: string;
  /** Sender for outgoing, recipient for incoming; '' when that party is the platform. */
  readonly customerId: string;
  readonly platformCustomerId: string;
  readonly source: TransactionSource;
  readonly destination: QuoteDestination;
  readonly sendingCurrency: string;
  /** Debited from the source, fees included. */
  readonly sentAmount: number;
  readonly receivingCurrency: string;
  readonly receivedAmount: number;
  /** The part of sentAmount that is converted and paid out. */
  readonly principal: number;
  readonly feesIncluded: number;
  readonly exchangeRate: number;
  /** The quote that made it; '' for a transfer. */
  readonly quoteId: string;
  readonly reference: string;
  readonly description?: string;
  readonly counterpartyInformation?: Readonly<Record<string, string>>;
  readonly rateDetails: TransactionRateDetails;
  readonly failureReason?: FailureReason;
  readonly pending?: PendingOutcome;
  readonly settledAt?: number;
  /** When the platform says it delivered the receipt to its customer (POST /transactions/{id}/confirm); the last one given. */
  readonly receiptDeliveryConfirmedAt?: number;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** The fields a transaction takes from the quote that made it. */
type QuotedField = 'destination' | 'sendingCurrency' | 'sentAmount' | 'receivingCurrency' | 'receivedAmount' | 'principal' | 'feesIncluded' | 'exchangeRate' | 'quoteId' | 'description' | 'rateDetails';

/**
 * What a transaction takes from the quote that made it: destination, priced amounts, memo.
 * The memo is set after the literal, not spread into it: a spread in the middle of a literal
 * makes V8 define each property after it the slow way (about a microsecond an object here).
 */
function quotedFields(quote: Quote): Pick<Transaction, QuotedField> {
  const p = quote.price;
  const fields: { -readonly [K in keyof Pick<Transaction, QuotedField>]: Transaction[K] } = {
    destination: quote.destination,
    sendingCurrency: p.sendingCurrency,
    sentAmount: p.totalSendingAmount,
    receivingCurrency: p.receivingCurrency,
    receivedAmount: p.totalReceivingAmount,
    principal: p.principal,
    feesIncluded: p.feesIncluded,
    exchangeRate: p.exchangeRate,
    quoteId: quote.id,
    rateDetails: {
      serviceApiMultiplier: p.rateDetails.serviceApiMultiplier,
      serviceApiFixedFee: p.rateDetails.serviceApiFixedFee,
      serviceApiVariableFeeRate: p.rateDetails.serviceApiVariableFeeRate,
      serviceApiVariableFeeAmount: p.rateDetails.serviceApiVariableFeeAmount,
    },
  };
  if (quote.description !== undefined) fields.description = quote.description;
  return fields;
}

/** The fields of a transaction it does not take from its quote. */
export type OwnFields = Omit<Transaction, QuotedField>;

/** A transaction `quote` made: its own fields, and those it takes from the quote. */
export function quotedTransaction(own: OwnFields, quote: Quote): Transaction {
  return assemble(own, quotedFields(quote));
}

const RATE_DETAIL_KEYS = ['serviceApiMultiplier', 'serviceApiFixedFee', 'serviceApiVariableFeeRate', 'serviceApiVariableFeeAmount'] as const;

/** Whether `tx` holds exactly what it takes from `quote` (quotedFields), so that `quotedTransaction` gives it back. */
function takesItsQuote(tx: Transaction, quote: Quote): boolean {
  const p = quote.price;
  if (
    tx.destination !== quote.destination ||
    tx.sendingCurrency !== p.sendingCurrency ||
    tx.sentAmount !== p.totalSendingAmount ||
    tx.receivingCurrency !== p.receivingCurrency ||
    tx.receivedAmount !== p.totalReceivingAmount ||
    tx.principal !== p.principal ||
    tx.feesIncluded !== p.feesIncluded ||
    tx.exchangeRate !== p.exchangeRate ||
    tx.quoteId !== quote.id ||
    tx.description !== quote.description
  ) {
    return false;
  }
  // Its own copy of the rate details, with the same keys in the same order (a restore makes them so).
  let i = 0;
  for (const key in tx.rateDetails) {
    const name = RATE_DETAIL_KEYS[i++];
    if (key !== name || tx.rateDetails[name] !== p.rateDetails[name]) return false;
  }
  return i === RATE_DETAIL_KEYS.length;
}

/**
 * A transaction as payment steps logged it before issue 38 (steps are now derived from
 * decided facts, never logged): one made from a quote left out what it takes from the quote
 * (`quotedFields`), and applying it takes them from the quote again.
 */
export type LoggedTransaction = Transaction | FromQuote;
export type FromQuote = Omit<Transaction, QuotedField | DerivableField> &
  Partial<Pick<Transaction, DerivableField>> & {
    readonly fromQuote: string;
    /** Which own fields a snapshot left out (DERIVED's bits), to be given back from the quote and the rest; absent: none. */
    readonly derived?: number;
  };

/** Own fields of a payment's transaction that are most often what its quote and its other fields say. */
type DerivableField = 'envId' | 'accountId' | 'customerId' | 'platformCustomerId' | 'source' | 'reference' | 'updatedAt' | 'settledAt';

/**
 * The bits of FromQuote.derived, and what each field is when its bit is set. A quote never
 * changes the fields read here once it made its transaction (its environment, parties and
 * outgoing transaction), so a later version of the quote gives the same.
 */
const DERIVED = {
  /** The quote's. */
  envId: 1,
  /** The quote's source account (OUTGOING) or payee account (INCOMING). */
  accountId: 2,
  /** The quote's source customer (OUTGOING); the customer the derived account id names (INCOMING). */
  customerId: 4,
  /** The customer id's UUID: a customer made without a platform id of its own. */
  platformCustomerId: 8,
  /** `{sourceType: 'ACCOUNT', accountId}` of the quote's source account. */
  source: 16,
  /** The reference of the quote's outgoing transaction (paymentReference). */
  reference: 32,
  /** The transaction's createdAt. */
  updatedAt: 64,
  /** The transaction's createdAt. */
  settledAt: 128,
} as const;

const CUSTOMER_ID_PREFIX = 'Customer:';

function derivedAccountIdOf(type: TransactionType, quote: Quote): string | undefined {
  return type === 'OUTGOING' ? quote.sourceAccountId : quote.payeeAccountId;
}

function derivedCustomerIdOf(type: TransactionType, accountId: string, quote: Quote): string | undefined {
  return type === 'OUTGOING' ? quote.sourceCustomerId : derivedFrom(accountId)?.customerId;
}

function isQuoteSource(source: TransactionSource, quote: Quote): boolean {
  if (source.sourceType !== 'ACCOUNT' || source.accountId !== quote.sourceAccountId) return false;
  let keys = 0;
  for (const _ in source) keys++;
  return keys === 2;
}

/**
 * Which own fields of `tx` are what its quote and its other fields say (DERIVED's bits), its
 * payment's reference being `reference` (paymentReference of the outgoing transaction).
 */
function derivedBits(tx: Transaction, quote: Quote, reference: string | undefined): number {
  let derived = 0;
  if (tx.envId === quote.envId) derived |= DERIVED.envId;
  if (tx.accountId === derivedAccountIdOf(tx.type, quote)) derived |= DERIVED.accountId;
  if (tx.customerId === derivedCustomerIdOf(tx.type, tx.accountId, quote)) derived |= DERIVED.customerId;
  if (tx.customerId.startsWith(CUSTOMER_ID_PREFIX) && tx.platformCustomerId.length === tx.customerId.length - CUSTOMER_ID_PREFIX.length && tx.customerId.endsWith(tx.platformCustomerId)) {
    derived |= DERIVED.platformCustomerId;
  }
  if (isQuoteSource(tx.source, quote)) derived |= DERIVED.source;
  if (reference !== undefined && tx.reference === reference) derived |= DERIVED.reference;
  if (tx.updatedAt === tx.createdAt) derived |= DERIVED.updatedAt;
  if (tx.settledAt === tx.createdAt) derived |= DERIVED.settledAt;
  return derived;
}

/**
 * A payment's transaction as a snapshot stores it (Transactions.stored): what it does not take
 * from its quote, less what DERIVED gives back. Two thirds of a payment's transaction bytes in
 * a snapshot were ids and times its quote and its other fields already say.
 */
function storedFromQuote(tx: Transaction, quote: Quote): FromQuote {
  const derived = derivedBits(tx, quote, quote.transactionId === undefined ? undefined : paymentReference(quote.transactionId));
  const out: { -readonly [K in keyof FromQuote]: FromQuote[K] } = { id: tx.id, type: tx.type, status: tx.status, createdAt: tx.createdAt, fromQuote: quote.id };
  if ((derived & DERIVED.envId) === 0) out.envId = tx.envId;
  if ((derived & DERIVED.accountId) === 0) out.accountId = tx.accountId;
  if ((derived & DERIVED.customerId) === 0) out.customerId = tx.customerId;
  if ((derived & DERIVED.platformCustomerId) === 0) out.platformCustomerId = tx.platformCustomerId;
  if ((derived & DERIVED.source) === 0) out.source = tx.source;
  if ((derived & DERIVED.reference) === 0) out.reference = tx.reference;
  if ((derived & DERIVED.updatedAt) === 0) out.updatedAt = tx.updatedAt;
  if ((derived & DERIVED.settledAt) === 0 && tx.settledAt !== undefined) out.settledAt = tx.settledAt;
  if (tx.counterpartyInformation !== undefined) out.counterpartyInformation = tx.counterpartyInformation;
  if (tx.failureReason !== undefined) out.failureReason = tx.failureReason;
  if (tx.pending !== undefined) out.pending = tx.pending;
  if (tx.receiptDeliveryConfirmedAt !== undefined) out.receiptDeliveryConfirmedAt = tx.receiptDeliveryConfirmedAt;
  out.derived = derived;
  return out;
}

/** Every bit of DERIVED: a transaction whose own fields are all what its quote and its other fields say. */
const ALL_DERIVED = Object.values(DERIVED).reduce((all, bit) => all | bit, 0);

/** A customer's platformCustomerId, which never changes once it opens (Customers.platformCustomerIdOf). */
export type PlatformCustomerIds = (customerId: string) => string | undefined;

/** The platformCustomerId a payment's transaction takes from its party `customerId` ('' for the platform). */
function partyPlatformId(customerId: string, platformIds: PlatformCustomerIds): string | undefined {
  return customerId === '' ? '' : platformIds(customerId);
}

/**
 * Whether `tx`, made by the immediate execution of `quote` whose outgoing transaction is
 * `outgoingId` (the quote's own UUID: derived-ids.ts, executionTransactionIdOf) with the
 * reference `reference` (paymentReference of it), is exactly what `derivedTransaction` gives
 * back from the quote once the quote names that transaction: the outgoing or the receiver's
 * transaction, COMPLETED when its id's timestamp says, its platformCustomerId its customer's,
 * taking everything else from its quote (the FromQuote form with every other DERIVED bit and
 * nothing more). Such a transaction is stored nowhere until it changes (Transactions).
 */
export function derivesFromQuote(tx: Transaction, quote: Quote, outgoingId: string, reference: string, platformIds: PlatformCustomerIds): boolean {
  if (tx.status !== 'COMPLETED' || tx.createdAt !== idTimeOf(tx.id)) return false;
  if (tx.id === outgoingId ? tx.type !== 'OUTGOING' : tx.type !== 'INCOMING' || tx.id !== paymentIdAt(outgoingId, 'Transaction', 2)) return false;
  if (tx.counterpartyInformation !== undefined || tx.failureReason !== undefined || tx.pending !== undefined || tx.receiptDeliveryConfirmedAt !== undefined) return false;
  if (tx.platformCustomerId !== partyPlatformId(tx.customerId, platformIds)) return false;
  return (derivedBits(tx, quote, reference) | DERIVED.platformCustomerId) === ALL_DERIVED && takesItsQuote(tx, quote);
}

const NONE_DERIVED: ReadonlyArray<readonly [string, TransactionType]> = [];

/** The ids of the transactions `quote` derives (Quote.transactionsDerived), each with its type. */
function derivedIdsOf(quote: Quote): ReadonlyArray<readonly [string, TransactionType]> {
  const derived = quote.transactionsDerived;
  const outgoing = quote.transactionId;
  if (derived === undefined || outgoing === undefined) return NONE_DERIVED;
  const ids: Array<readonly [string, TransactionType]> = [];
  if ((derived & TRANSACTION_DERIVED.outgoing) !== 0) ids.push([outgoing, 'OUTGOING']);
  if ((derived & TRANSACTION_DERIVED.received) !== 0) ids.push([paymentIdAt(outgoing, 'Transaction', 2), 'INCOMING']);
  return ids;
}

/**
 * The transaction `id` (its outgoing transaction, or the receiver's) as `quote`, executed at
 * once, derives it: what derivesFromQuote found it to be when the execution applied.
 */
export function derivedTransaction(quote: Quote, id: string, platformIds: PlatformCustomerIds): Transaction {
  const createdAt = idTimeOf(id);
  if (createdAt === undefined) throw new Error(`transaction id ${id} carries no time`);
  const type: TransactionType = id === quote.transactionId ? 'OUTGOING' : 'INCOMING';
  const customerId = derivedCustomerIdOf(type, derivedAccountIdOf(type, quote) ?? '', quote);
  const platformCustomerId = customerId === undefined ? undefined : partyPlatformId(customerId, platformIds);
  if (platformCustomerId === undefined) throw new Error(`transaction ${id} derives from quote ${quote.id}, whose party ${customerId ?? '(none)'} is no customer`);
  const stored: FromQuote = { id, type, status: 'COMPLETED', createdAt, fromQuote: quote.id, platformCustomerId, derived: ALL_DERIVED & ~DERIVED.platformCustomerId };
  return quotedTransaction(ownFieldsOf(stored, quote), quote);
}

/** The own fields of `stored`, those it left out (`derived`) given back from `quote` and its other fields. */
function ownFieldsOf(stored: FromQuote, quote: Quote): OwnFields {
  const derived = stored.derived ?? 0;
  const given = <K extends DerivableField>(field: K, value: () => Transaction[K] | undefined): Transaction[K] => {
    const v = (derived & DERIVED[field]) === 0 ? stored[field] : value();
    if (v === undefined && field !== 'settledAt') throw new Error(`transaction ${stored.id} left out ${field}, which its quote ${quote.id} does not give`);
    return v as Transaction[K];
  };
  const accountId = given('accountId', () => derivedAccountIdOf(stored.type, quote));
  const customerId = given('customerId', () => derivedCustomerIdOf(stored.type, accountId, quote));
  const own: { -readonly [K in keyof OwnFields]: OwnFields[K] } = {
    id: stored.id,
    envId: given('envId', () => quote.envId),
    type: stored.type,
    status: stored.status,
    accountId,
    customerId,
    platformCustomerId: given('platformCustomerId', () => customerId.slice(CUSTOMER_ID_PREFIX.length)),
    source: given('source', () => ({ sourceType: 'ACCOUNT', accountId: quote.sourceAccountId })),
    reference: given('reference', () => (quote.transactionId === undefined ? undefined : paymentReference(quote.transactionId))),
    createdAt: stored.createdAt,
    updatedAt: given('updatedAt', () => stored.createdAt),
  };
  if (stored.counterpartyInformation !== undefined) own.counterpartyInformation = stored.counterpartyInformation;
  if (stored.failureReason !== undefined) own.failureReason = stored.failureReason;
  if (stored.pending !== undefined) own.pending = stored.pending;
  const settledAt = given('settledAt', () => stored.createdAt);
  if (settledAt !== undefined) own.settledAt = settledAt;
  if (stored.receiptDeliveryConfirmedAt !== undefined) own.receiptDeliveryConfirmedAt = stored.receiptDeliveryConfirmedAt;
  return own;
}

/** The fields a transaction does not take from its quote; `counterparty` null: none. */
function ownFields(
  tx: Omit<Transaction, QuotedField>,
  keepPending = true,
  counterparty: Readonly<Record<string, string>> | null = tx.counterpartyInformation ?? null,
): { -readonly [K in keyof Omit<Transaction, QuotedField>]: Transaction[K] } {
  const own: { -readonly [K in keyof Omit<Transaction, QuotedField>]: Transaction[K] } = {
    id: tx.id,
    envId: tx.envId,
    type: tx.type,
    status: tx.status,
    accountId: tx.accountId,
    customerId: tx.customerId,
    platformCustomerId: tx.platformCustomerId,
    source: tx.source,
    reference: tx.reference,
    createdAt: tx.createdAt,
    updatedAt: tx.updatedAt,
  };
  if (counterparty !== null) own.counterpartyInformation = counterparty;
  if (tx.failureReason !== undefined) own.failureReason = tx.failureReason;
  if (keepPending && tx.pending !== undefined) own.pending = tx.pending;
  if (tx.settledAt !== undefined) own.settledAt = tx.settledAt;
  if (tx.receiptDeliveryConfirmedAt !== undefined) own.receiptDeliveryConfirmedAt = tx.receiptDeliveryConfirmedAt;
  return own;
}

type MutableTransaction = { -readonly [K in keyof Transaction]: Transaction[K] };

/**
 * A transaction from its own fields and its quoted ones, written out field by field: in
 * Node 20 `{ ...own, ...quoted }` of these two objects takes about 11 µs (and Object.assign
 * leaves a slow dictionary object), which was most of the money path's apply time.
 */
function assemble(own: Omit<Transaction, QuotedField>, q: Pick<Transaction, QuotedField>): MutableTransaction {
  const tx: MutableTransaction = {
    id: own.id,
    envId: own.envId,
    type: own.type,
    status: own.status,
    accountId: own.accountId,
    customerId: own.customerId,
    platformCustomerId: own.platformCustomerId,
    source: own.source,
    destination: q.destination,
    sendingCurrency: q.sendingCurrency,
    sentAmount: q.sentAmount,
    receivingCurrency: q.receivingCurrency,
    receivedAmount: q.receivedAmount,
    principal: q.principal,
    feesIncluded: q.feesIncluded,
    exchangeRate: q.exchangeRate,
    quoteId: q.quoteId,
    reference: own.reference,
    rateDetails: q.rateDetails,
    createdAt: own.createdAt,
    updatedAt: own.updatedAt,
  };
  if (q.description !== undefined) tx.description = q.description;
  if (own.counterpartyInformation !== undefined) tx.counterpartyInformation = own.counterpartyInformation;
  if (own.failureReason !== undefined) tx.failureReason = own.failureReason;
  if (own.pending !== undefined) tx.pending = own.pending;
  if (own.settledAt !== undefined) tx.settledAt = own.settledAt;
  if (own.receiptDeliveryConfirmedAt !== undefined) tx.receiptDeliveryConfirmedAt = own.receiptDeliveryConfirmedAt;
  return tx;
}

/** The receiving party's own transaction of an internal payment `out`; its counterparty is the sender. */
export function receivedSide(
  out: Transaction,
  id: string,
  account: { readonly id: string; readonly customerId: string },
  platformCustomerId: string,
  sender: Readonly<Record<string, string>> | undefined,
): Transaction {
  const own = ownFields(out, true, sender ?? null);
  own.id = id;
  own.type = 'INCOMING';
  own.accountId = account.id;
  own.customerId = account.customerId;
  own.platformCustomerId = platformCustomerId;
  return assemble(own, out);
}

/** Timer messages of payments: a quote's expiry, an external payout's sandbox outcome. */
/**
 * A payout's or transfer's outcome timer is keyed by its transaction's id (payoutTimer), which
 * its message does not repeat (timers set before also carry it as `transactionId`; every
 * one was keyed by it too).
 */
export type PaymentTimer = QuoteTimer | { type: 'payout.outcome' };

/** The outcome timer of the payout or transfer `transactionId`, due at `due`, held by `actorId`. */
export function payoutTimer(transactionId: string, due: number, actorId: string): { due: number; actorIds: string[]; message: PaymentTimer; key: string } {
  return { due, actorIds: [actorId], message: { type: 'payout.outcome' }, key: transactionId };
}

/**
 * The last reference made and its transaction: an execution makes its outgoing transaction's,
 * and the check of which transactions its quote derives asks for it again (paymentReference
 * is a function of the id alone, so the answer is the same).
 */
let lastReferenced: string | undefined;
let lastReference = '';

/**
 * The reconciliation reference of a payment: derived from the outgoing transaction's id
 * (as funding references are from account ids), so it is unique without an index.
 */
export function paymentReference(transactionId: string): string {
  if (transactionId !== lastReferenced) {
    lastReference = fundingReference(transactionId);
    lastReferenced = transactionId;
  }
  return lastReference;
}

/**
 * The amounts of a transaction no quote priced (a transfer, sandbox funding, an incoming UMA
 * payment): `amount` of one currency on both sides, no fees, no conversion, and the
 * reference derived from its id.
 */
export function unquotedAmounts(id: string, currency: string, amount: number): Pick<Transaction, Exclude<QuotedField, 'destination' | 'description'> | 'reference'> {
  return {
    sendingCurrency: currency,
    sentAmount: amount,
    receivingCurrency: currency,
    receivedAmount: amount,
    principal: amount,
    feesIncluded: 0,
    exchangeRate: 1,
    quoteId: '',
    reference: paymentReference(id),
    rateDetails: { serviceApiMultiplier: 1, serviceApiFixedFee: 0, serviceApiVariableFeeRate: 0, serviceApiVariableFeeAmount: 0 },
  };
}

/** How a payout to an external account plays out: at once, and (maybe) when its timer fires. */
export interface PayoutPlan {
  atExecute: 'FAIL' | 'COMPLETE' | 'PROCESS';
  /** Why a FAIL at execute failed; QUOTE_EXECUTION_FAILED when absent. */
  failureReason?: FailureReason;
  later?: { afterMs: number; outcome: PayoutOutcome; failureReason?: FailureReason };
}

export const SHORT_OUTCOME_MS = 5_000;
export const BANK_RETURN_MS = 30_000;
export const LONG_PAYMENT_MS = 6 * 60_000;

/**
 * The sandbox outcome table of CONTRACT.md for a quote to an external account, selected by
 * the last 3 digits of the account's primary identifier. Production has no simulated
 * rails: the payout completes.
 */
export function payoutPlan(environment: Environment, account: ExternalAccount): PayoutPlan {
  if (environment === 'production') return { atExecute: 'COMPLETE' };
  const suffix = sandboxSuffix(primaryIdentifier(account.accountInfo));
  if (account.accountInfo.accountType === 'SPARK_WALLET') {
    switch (suffix) {
      case '002':
      case '003': // wallet unavailable
        return { atExecute: 'FAIL' };
      case '004':
        return { atExecute: 'PROCESS', later: { afterMs: SHORT_OUTCOME_MS, outcome: 'FAIL_REFUND', failureReason: 'OFFRAMP_FAILED' } };
      case '005':
        return { atExecute: 'PROCESS', later: { afterMs: BANK_RETURN_MS, outcome: 'FAIL_REFUND', failureReason: 'OFFRAMP_FAILED' } };
      default:
        return { atExecute: 'COMPLETE' };
    }
  }
  switch (suffix) {
    case '002':
      return { atExecute: 'FAIL' };
    case '003':
      return { atExecute: 'PROCESS', later: { afterMs: LONG_PAYMENT_MS, outcome: 'SETTLE' } };
    case '004':
      return { atExecute: 'PROCESS', later: { afterMs: SHORT_OUTCOME_MS, outcome: 'FAIL_REFUND', failureReason: 'OFFRAMP_FAILED' } };
    case '005': // completes, then the receiving bank returns it
      return { atExecute: 'COMPLETE', later: { afterMs: BANK_RETURN_MS, outcome: 'RETURN_REFUND', failureReason: 'OFFRAMP_FAILED' } };
    case '006': // cancelled by the user: no failure reason of the spec's list says so
      return { atExecute: 'PROCESS', later: { afterMs: SHORT_OUTCOME_MS, outcome: 'FAIL_REFUND' } };
    case '007': // payout and refund failed: the money is lost
      return { atExecute: 'PROCESS', later: { afterMs: SHORT_OUTCOME_MS, outcome: 'FAIL_LOST', failureReason: 'OFFRAMP_FAILED' } };
    default:
      return { atExecute: 'COMPLETE' };
  }
}

/**
 * A direct pull from a customer's bank account (the transfer-in rows of CONTRACT.md's
 * sandbox table): 002 and 003 are refused at once (insufficient funds, account closed);
 * 004 is rejected by the bank after ~5 s; 005 stays pending ~30 s, then fails; anything
 * else is pulled at once. Production pulls at once.
 */
export function pullPlan(environment: Environment, account: ExternalAccount): PayoutPlan {
  if (environment === 'production') return { atExecute: 'COMPLETE' };
  switch (sandboxSuffix(primaryIdentifier(account.accountInfo))) {
    case '002':
      throw new DomainError('INSUFFICIENT_FUNDS', `the bank account ${account.id} has insufficient funds for the pull (sandbox suffix 002)`, [
        { field: 'source.accountId', message: 'insufficient funds' },
      ]);
    case '003':
      throw new DomainError('ACCOUNT_CLOSED', `the bank account ${account.id} is closed or invalid (sandbox suffix 003)`, [{ field: 'source.accountId', message: 'account closed' }]);
    case '004':
      return { atExecute: 'PROCESS', later: { afterMs: SHORT_OUTCOME_MS, outcome: 'PULL_REJECTED' } };
    case '005':
      return { atExecute: 'PROCESS', later: { afterMs: BANK_RETURN_MS, outcome: 'PULL_FAILED' } };
    default:
      return { atExecute: 'COMPLETE' };
  }
}

/**
 * A payment to a sandbox test UMA address (SERVICE_SPEC part 3): `$success.*` completes at
 * once; `$pending.long.usd` stays PROCESSING as long as the slowest bank payout (6 minutes)
 * and then completes; `$fail.compliance.usd` fails at execute: the receiving side refuses
 * the pay request on compliance grounds, and nothing moves.
 */
export function umaTestPlan(behaviour: SandboxReceiverBehaviour): PayoutPlan {
  switch (behaviour) {
    case 'SUCCESS':
      return { atExecute: 'COMPLETE' };
    case 'PENDING_LONG':
      return { atExecute: 'PROCESS', later: { afterMs: LONG_PAYMENT_MS, outcome: 'SETTLE' } };
    case 'FAIL_COMPLIANCE':
      return { atExecute: 'FAIL', failureReason: 'PAY_REQUEST_FAILED' };
  }
}

/** A transaction in a new status, without its pending outcome once that has played out. */
export function withStatus(tx: Transaction, status: TransactionStatus, at: number, changes: Partial<Transaction> = {}): Transaction {
  const next = assemble(ownFields(tx, false), tx);
  for (const key of Object.keys(changes) as Array<keyof Transaction>) (next as Record<keyof Transaction, unknown>)[key] = changes[key];
  next.status = status;
  next.updatedAt = at;
  if (status === 'COMPLETED' && next.settledAt === undefined) next.settledAt = at;
  return next;
}

/**
 * The transactions. The per-environment and per-customer lists serve listings only; no
 * decision reads them.
 */
/**
 * The platform confirmed that it delivered the receipt of a transaction (POST
 * /transactions/{id}/confirm): the time it gives, or the entry's; a later one overwrites it.
 */
export interface ReceiptConfirmed {
  type: 'receipt.confirmed';
  transactionId: LoggedId;
  confirmedAt: number;
}

/** A transaction's receipt confirmed at `confirmedAt`, changed at the entry's time `at` (its pending outcome kept). */
export function withReceiptConfirmed(tx: Transaction, confirmedAt: number, at: number): Transaction {
  const next = assemble(ownFields(tx), tx);
  next.receiptDeliveryConfirmedAt = confirmedAt;
  next.updatedAt = at;
  return next;
}

/** A payment's entry, as far as the transactions read it (payment-recorded.ts has all of it), and a receipt's confirmation. */
type TransactionsEvent = { type: 'payment.recorded'; transactions: readonly LoggedTransaction[]; quoteChange?: { transactionId?: string; transactionsDerived?: number } } | ReceiptConfirmed;

/** What the transactions read of the quotes: those they take their quoted fields from, or derive from whole. */
interface QuoteSource {
  get(id: string): Quote | undefined;
  peek(id: string): Quote | undefined;
  ownerOf(id: string): string | undefined;
  readonly records: ReadonlyMap<string, Quote>;
  onRepriced: ((before: Quote) => void) | undefined;
  whenRestored(listener: (quote: Quote) => void): void;
}

export class Transactions implements RecordKind<Transaction, TransactionsEvent> {
  readonly idPrefix = 'Transaction:';
  /** A quote's transaction belongs to the quote's owner; a transfer's or an incoming payment's to its account. */
  actorOf(tx: Transaction): string {
    return tx.quoteId === '' ? tx.accountId : (this.quotes.ownerOf(tx.quoteId) ?? tx.accountId);
  }
  readonly #transactions = new RecordMap<Transaction>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #byCustomer = new Map<string, SortedIds>();
  readonly records: ReadonlyMap<string, Transaction> = this.#transactions;
  /**
   * The incoming UMA payments recorded and not yet approved, rejected or failed, their
   * amounts added up by `envId currency`: the part of an environment's intake reserved for
   * them (Intake in actors/ledger.ts), so approving one never takes the intake past its
   * bound. Kept as records are stored, so a snapshot's restore rebuilds it.
   */
  readonly #awaitingApproval = new Map<string, number>();

  /**
   * The quotes that transactions logged (or stored) without their quoted fields take them
   * from, and that derive the transactions of their immediate execution (derivedTransaction).
   */
  constructor(
    private readonly quotes: QuoteSource,
    customers: { platformCustomerIdOf(id: string): string | undefined },
  ) {
    this.#platformIds = (id) => customers.platformCustomerIdOf(id);
    quotes.onRepriced = (before) => this.#repriced(before);
    quotes.whenRestored((quote) => this.#indexDerived(quote));
  }

  /** The parties' platform ids, which derived transactions take (derivedTransaction). */
  readonly #platformIds: PlatformCustomerIds;

  /** Transactions restored in their stored form whose quote was not restored yet (restoredAll). */
  #unresolved: FromQuote[] = [];

  readonly appliers: Appliers<TransactionsEvent> = {
    'payment.recorded': (event) => {
      const derived = event.quoteChange?.transactionsDerived ?? 0;
      for (const logged of event.transactions) {
        const tx = this.#fromLog(logged);
        // Derived from its quote, which this entry changed to say so: indexed, stored nowhere.
        const bit = derived === 0 ? 0 : tx.id === event.quoteChange!.transactionId ? TRANSACTION_DERIVED.outgoing : TRANSACTION_DERIVED.received;
        if ((derived & bit) !== 0) this.#indexOf(tx.id, tx.envId, tx.customerId);
        else this.#put(tx, this.get(tx.id));
      }
    },
    'receipt.confirmed': (event, at) => {
      const id = idOf(event.transactionId, 'Transaction');
      const tx = this.get(id);
      if (tx === undefined) throw new Error(`receipt.confirmed for transaction ${id}, which does not exist`);
      this.#put(withReceiptConfirmed(tx, event.confirmedAt, at), tx);
    },
  };

  #fromLog(tx: LoggedTransaction): Transaction {
    if (!('fromQuote' in tx)) return tx;
    const quote = this.quotes.get(tx.fromQuote);
    if (quote === undefined) throw new Error(`transaction ${tx.id} comes from quote ${tx.fromQuote}, which does not exist`);
    return quotedTransaction(ownFieldsOf(tx, quote), quote);
  }

  /**
   * A transaction as a snapshot stores it: a payment's (its quote's transaction, or the
   * receiver's derived from it) without what it takes from its quote when it takes exactly
   * that (the FromQuote form the log once held): a third of its bytes and of its encoding
   * (docs/bench.md, session 44). The quote's pricing never changes; if a new version of it
   * did, `#repriced` notes its transactions changed, so the next snapshot writes them whole.
   */
  stored(tx: Transaction): Transaction | FromQuote {
    if (tx.quoteId === '') return tx;
    const quote = this.quotes.get(tx.quoteId);
    const outgoing = quote?.transactionId;
    if (quote === undefined || outgoing === undefined || (tx.id !== outgoing && tx.id !== paymentIdAt(outgoing, 'Transaction', 2))) return tx;
    if (!takesItsQuote(tx, quote)) return tx;
    return storedFromQuote(tx, quote);
  }

  /**
   * The transactions of `before`'s payment that a snapshot may hold in the FromQuote form are
   * noted changed; those it derived (TRANSACTION_DERIVED) are stored as it derived them, which
   * the repriced quote would not.
   */
  #repriced(before: Quote): void {
    const outgoing = before.transactionId;
    if (outgoing === undefined) return;
    const derived = before.transactionsDerived ?? 0;
    for (const id of [outgoing, paymentIdAt(outgoing, 'Transaction', 2)]) {
      const tx = Map.prototype.get.call(this.#transactions, id) as Transaction | undefined;
      // Noted as a change, unchecked: the decision that repriced the quote holds its owner, not necessarily the receiver.
      if (tx !== undefined) ChangeTrackingMap.prototype.set.call(this.#transactions, id, tx);
      else if ((derived & (id === outgoing ? TRANSACTION_DERIVED.outgoing : TRANSACTION_DERIVED.received)) !== 0 && this.#transactions.peek(id) === undefined) {
        // Not changed since (no version of its own, in memory or in a lazy chunk): derived still.
        this.#transactions.setUnchecked(id, derivedTransaction(before, id, this.#platformIds));
      }
    }
  }

  /** The stored transactions whose quote was restored after them take its fields now. */
  restoredAll(): void {
    for (const tx of this.#unresolved) this.restore(this.#fromLog(tx));
    this.#unresolved = [];
  }

  /**
   * Told of every transaction a new version replaced, with the version it replaced (the
   * outbox's steps may name that version in a snapshot by its id: WebhookEvents.stored).
   */
  onReplaced: ((before: Transaction) => void) | undefined;

  /**
   * A transaction at its end with nothing pending (no payout in flight, no return due, no
   * approval awaited): a snapshot holds it, and it leaves memory until asked for again
   * (registry.ts, RecordKind.settled). Its restore only indexes it: it adds nothing to the
   * amounts awaiting approval.
   */
  settled(tx: Transaction): boolean {
    return tx.pending === undefined && tx.status !== 'CREATED' && tx.status !== 'PENDING' && tx.status !== 'PROCESSING';
  }

  /** A settled transaction read back: indexed when it was made or first restored, and it awaits no approval. */
  readBack(record: Transaction | FromQuote): void {
    const tx = 'fromQuote' in record ? this.#fromLog(record) : record;
    this.#transactions.set(tx.id, tx);
  }

  restore(record: Transaction | FromQuote): void {
    if ('fromQuote' in record) {
      // A snapshot's: its quote may come later in the snapshot, or earlier.
      const quote = this.quotes.get(record.fromQuote);
      if (quote === undefined) this.#unresolved.push(record);
      else this.restore(quotedTransaction(ownFieldsOf(record, quote), quote));
      return;
    }
    // The version it replaces is one memory holds, never one its quote would derive: the
    // snapshot's is the version that replaced that, and the parties it reads may not be restored yet.
    this.#put(record, this.#transactions.get(record.id));
  }

  /** Puts `tx` in place of `before`, the version it replaces (undefined: none), with its index entries. */
  #put(tx: Transaction, before: Transaction | undefined): void {
    if (before !== undefined && before !== tx) this.onReplaced?.(before);
    const added = awaitingApproval(tx) - (before === undefined ? 0 : awaitingApproval(before));
    if (added !== 0) {
      const key = `${tx.envId} ${tx.receivingCurrency}`;
      this.#awaitingApproval.set(key, (this.#awaitingApproval.get(key) ?? 0) + added);
    }
    this.#transactions.set(tx.id, tx);
    this.#indexOf(tx.id, tx.envId, tx.customerId);
  }

  #indexOf(id: string, envId: string, customerId: string): void {
    bucket(this.#byEnv, envId).insert(id);
    if (customerId !== '') bucket(this.#byCustomer, customerId).insert(id);
  }

  /** The index entries of the transactions a restored quote derives (a snapshot holds no record of them). */
  #indexDerived(quote: Quote): void {
    for (const [id, type] of derivedIdsOf(quote)) {
      const customerId = derivedCustomerIdOf(type, derivedAccountIdOf(type, quote) ?? '', quote);
      if (customerId === undefined) throw new Error(`quote ${quote.id} derives its transaction ${id}, whose party is no customer`);
      this.#indexOf(id, quote.envId, customerId);
    }
  }

  /**
   * The transaction `id` as its quote derives it, when it is one of an immediate execution's
   * that exist only so (TRANSACTION_DERIVED): read through the quotes' holding check
   * (`checked`, a transaction's actor is its quote's owner) or without it.
   */
  #derived(id: string, checked: boolean): Transaction | undefined {
    const quoteId = quoteIdSharedBy(id);
    if (quoteId === undefined) return undefined;
    const quote = checked ? this.quotes.get(quoteId) : this.quotes.peek(quoteId);
    const derived = quote?.transactionsDerived;
    if (quote === undefined || derived === undefined || quote.transactionId === undefined) return undefined;
    const bit = id === quote.transactionId ? TRANSACTION_DERIVED.outgoing : id === paymentIdAt(quote.transactionId, 'Transaction', 2) ? TRANSACTION_DERIVED.received : 0;
    return (derived & bit) === 0 ? undefined : derivedTransaction(quote, id, this.#platformIds);
  }

  /** Whether transaction `id` exists: in memory, in a lazy chunk, or derived from its quote (the invariants' lookup). */
  has(id: string): boolean {
    return this.#transactions.peek(id) !== undefined || this.#derived(id, false) !== undefined;
  }

  /** Every transaction one by one, those a quote derives built from it (the state digest's view, every kind loaded). */
  *eachRecord(): Iterable<readonly [string, Transaction]> {
    yield* this.#transactions;
    for (const quote of this.quotes.records.values()) {
      // A version stored since is the transaction now (yielded above).
      for (const [id] of derivedIdsOf(quote)) if (!this.#transactions.holds(id)) yield [id, derivedTransaction(quote, id, this.#platformIds)];
    }
  }

  checkInvariants(lookup: { has(id: string): boolean }): string[] {
    const problems: string[] = [];
    for (const tx of this.#transactions.values()) {
      if (tx.sentAmount !== tx.principal + tx.feesIncluded) problems.push(`${tx.id} sent ${tx.sentAmount} but principal + fees is ${tx.principal + tx.feesIncluded}`);
      if (!lookup.has(tx.accountId)) problems.push(`${tx.id} belongs to unknown account ${tx.accountId}`);
      // A pending outcome exists exactly while a payout is in flight, or settled and due to come back.
      // A transfer the bank holds waits as PENDING (CONTRACT.md's 005 row for transfers). An
      // incoming UMA payment waits PENDING for the platform's decision, with no outcome of its own.
      const waiting = (tx.status === 'PROCESSING' || tx.status === 'PENDING') && !isAwaitingApproval(tx);
      const expected = tx.pending === undefined ? !waiting : tx.pending.outcome === 'RETURN_REFUND' ? tx.status === 'COMPLETED' : waiting;
      if (!expected) problems.push(`${tx.id} is ${tx.status} with pending outcome ${tx.pending?.outcome ?? 'none'}`);
    }
    return problems;
  }

  get(id: string): Transaction | undefined {
    return this.#transactions.get(id) ?? this.#derived(id, true);
  }

  /** The transaction `id` now, read back if it left memory, outside the holding check: for rendering what names it (a webhook step's events). */
  current(id: string): Transaction | undefined {
    return this.#transactions.peek(id) ?? this.#derived(id, false);
  }

  /** How many transactions exist, in memory or left in a snapshot's lazy chunks (settled). */
  get count(): number {
    let count = 0;
    for (const ids of this.#byEnv.values()) count += ids.ids.length;
    return count;
  }

  /** The amounts of the environment's incoming payments of `currency` awaiting approval, added up. */
  awaitingApprovalIn(envId: string, currency: string): number {
    return this.#awaitingApproval.get(`${envId} ${currency}`) ?? 0;
  }

  inEnv(envId: string, id: string): Transaction | undefined {
    const tx = this.get(id);
    return tx?.envId === envId ? tx : undefined;
  }

  /** The environment's transactions, or one customer's, ascending by id (creation order). */
  idsIn(envId: string, customerId?: string): readonly string[] {
    if (customerId !== undefined) return this.#byCustomer.get(customerId)?.ids ?? [];
    return this.#byEnv.get(envId)?.ids ?? [];
  }
}

/**
 * What an incoming UMA payment holds of its environment's intake: its amount while it is
 * PENDING (recorded, not yet decided). Other PENDING incoming transactions (a transfer-in
 * or direct pull the sandbox bank holds) never credit anything.
 */
function awaitingApproval(tx: Transaction): number {
  return isAwaitingApproval(tx) ? tx.receivedAmount : 0;
}

/** An incoming UMA payment recorded and not yet decided by the platform. */
function isAwaitingApproval(tx: Transaction): boolean {
  return tx.type === 'INCOMING' && tx.status === 'PENDING' && tx.source.sourceType === 'UMA_ADDRESS';
}

export interface AmountView {
  amount: number;
  currency: Currency;
}

export interface TransactionView {
  id: string;
  status: TransactionStatus;
  type: TransactionType;
  direction: 'DEBIT' | 'CREDIT';
  source:
    | { sourceType: 'ACCOUNT'; accountId: string; currency: string }
    | { sourceType: 'REALTIME_FUNDING'; currency: string }
    | { sourceType: 'UMA_ADDRESS'; umaAddress: string; currency: string }
    | { sourceType: 'SANDBOX_FUNDING'; currency: string };
  destination: DestinationView;
  customerId: string;
  platformCustomerId: string;
  sentAmount?: AmountView;
  receivedAmount: AmountView;
  exchangeRate: number;
  quoteId?: string;
  description?: string;
  counterpartyInformation?: Record<string, string>;
  reconciliationInstructions?: { reference: string };
  rateDetails: TransactionRateDetails;
  failureReason?: FailureReason;
  settledAt?: string;
  receiptDeliveryConfirmedAt?: string;
  createdAt: string;
  updatedAt: string;
}

function renderSource(source: TransactionSource, currency: string): TransactionView['source'] {
  switch (source.sourceType) {
    case 'ACCOUNT':
      return { sourceType: 'ACCOUNT', accountId: source.accountId, currency };
    case 'UMA_ADDRESS':
      return { sourceType: 'UMA_ADDRESS', umaAddress: source.umaAddress, currency };
    case 'REALTIME_FUNDING':
      return { sourceType: 'REALTIME_FUNDING', currency };
    case 'SANDBOX_FUNDING':
      return { sourceType: 'SANDBOX_FUNDING', currency };
  }
}

export function renderTransaction(tx: Transaction): TransactionView {
  const destination = renderDestination(tx.destination, tx.receivingCurrency);
  const view: TransactionView = {
    id: tx.id,
    status: tx.status,
    type: tx.type,
    direction: tx.type === 'OUTGOING' ? 'DEBIT' : 'CREDIT',
    source: renderSource(tx.source, tx.sendingCurrency),
    destination,
    customerId: tx.customerId,
    platformCustomerId: tx.platformCustomerId,
    receivedAmount: { amount: tx.receivedAmount, currency: currencyObject(tx.receivingCurrency) },
    exchangeRate: tx.exchangeRate,
    rateDetails: { ...tx.rateDetails },
    createdAt: isoTime(tx.createdAt),
    updatedAt: isoTime(tx.updatedAt),
  };
  if (tx.type === 'OUTGOING') view.sentAmount = { amount: tx.sentAmount, currency: currencyObject(tx.sendingCurrency) };
  if (tx.quoteId !== '') view.quoteId = tx.quoteId;
  if (tx.description !== undefined) view.description = tx.description;
  if (tx.counterpartyInformation !== undefined) view.counterpartyInformation = { ...tx.counterpartyInformation };
  if (tx.status !== 'CREATED') view.reconciliationInstructions = { reference: tx.reference };
  if (tx.failureReason !== undefined) view.failureReason = tx.failureReason;
  if (tx.settledAt !== undefined) view.settledAt = isoTime(tx.settledAt);
  if (tx.receiptDeliveryConfirmedAt !== undefined) view.receiptDeliveryConfirmedAt = isoTime(tx.receiptDeliveryConfirmedAt);
  return view;
}
