// Quotes (SERVICE_SPEC parts 2, 3 and 4; CONTRACT.md "Money"): a priced transfer from an
// internal account to an internal or external account of the same environment, locked on
// one side. A quote is a record owned by its source account's actor (for a direct pull
// from a customer's bank account: that customer's actor, which owns the account): it is created,
// executed and expired while that actor is held, so "executes at most once" and "expired quotes
// do not execute" are local decisions. A quote lives 5 minutes; a durable timer keyed by
// the quote id expires it, and executing cancels that timer.
import { idOf, loggedId, newId, type LoggedId } from '../src/engine/ids.js';
import { cancelTimer, setTimer, type EngineEvent, type EventLayout } from '../src/engine/state-machine.js';
import { assertActive, type Customer } from './customer.js';
import { derivedFrom, executionTransactionIdOf, newExecutedQuoteId } from './derived-ids.js';
import { DomainError, invalidField } from './errors.js';
import type { ExternalAccount } from './external-account.js';
import { priceTransfer, type LockedCurrencySide, type PricedTransfer, type RateDetails } from './fx.js';
import { fundingReference, POOL_ACCOUNT, type InternalAccount } from './internal-account.js';
import type { SandboxReceiverBehaviour } from './lookup.js';
import { defaultSupportedCurrency, type PlatformEnv } from './platform.js';
import { currencyObject, type Currency } from './reference.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export type QuoteStatus = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED' | 'EXPIRED';
export const QUOTE_STATUSES: readonly QuoteStatus[] = ['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED'];
export const LOCKED_SIDES: readonly LockedCurrencySide[] = ['SENDING', 'RECEIVING'];
export const PURPOSES_OF_PAYMENT = [
  'GIFT',
  'SELF',
  'GOODS_OR_SERVICES',
  'EDUCATION',
  'HEALTH_OR_MEDICAL',
  'REAL_ESTATE_PURCHASE',
  'TAX_PAYMENT',
  'LOAN_PAYMENT',
  'UTILITY_BILL',
  'DONATION',
  'TRAVEL',
  'OTHER',
] as const;
export type PurposeOfPayment = (typeof PURPOSES_OF_PAYMENT)[number];

/** CONTRACT.md: quotes expire 5 minutes after creation. */
export const QUOTE_LIFETIME_MS = 5 * 60_000;

export type QuoteDestination =
  | { readonly destinationType: 'ACCOUNT'; readonly accountId: string; readonly paymentRail?: string }
  | { readonly destinationType: 'UMA_ADDRESS'; readonly umaAddress: string };

export interface Quote {
  readonly id: string;
  readonly envId: string;
  readonly status: QuoteStatus;
  /** The internal account (or bank account of a direct pull) that pays; '' for a REALTIME_FUNDING quote. */
  readonly sourceAccountId: string;
  /**
   * A REALTIME_FUNDING quote: the money arrives from outside (POST /sandbox/send) under
   * this reference, derived from the quote id like an account's funding reference.
   */
  readonly fundingReference?: string;
  /** The source account's customer; '' for the platform's own account. */
  readonly sourceCustomerId: string;
  /** The actor that owns this quote: the source internal account, or the pulling customer. */
  readonly ownerId: string;
  readonly destination: QuoteDestination;
  /**
   * Who is paid: the account credited or paid out to (the destination account, or the
   * internal account of a local UMA receiver in the quoted currency), or, for a sandbox
   * test UMA address, its scripted behaviour. Exactly one is set.
   */
  readonly payeeAccountId?: string;
  readonly umaTestBehaviour?: SandboxReceiverBehaviour;
  /** The receiver lookup an UMA quote used. */
  readonly lookupId?: string;
  readonly lockedCurrencySide: LockedCurrencySide;
  readonly lockedCurrencyAmount: number;
  readonly price: PricedTransfer;
  readonly description?: string;
  readonly purposeOfPayment?: PurposeOfPayment;
  readonly senderCustomerInfo?: Readonly<Record<string, string>>;
  /** What is known of the receiving party (the spec's FULL_NAME, BIRTH_DATE, NATIONALITY keys). */
  readonly counterpartyInformation?: Readonly<Record<string, string>>;
  readonly transactionId?: string;
  /**
   * Which of the transactions of its immediate execution exist only as the quote derives them
   * (actors/transaction.ts, derivedTransaction), stored nowhere else until one changes: bit
   * TRANSACTION_DERIVED.outgoing, bit TRANSACTION_DERIVED.received. Absent: none.
   */
  readonly transactionsDerived?: number;
  /**
   * The webhook step of its immediate execution, while it exists only as the quote derives it
   * (actors/webhook-event.ts, WebhookEvents: stored nowhere until one of its events changes,
   * cleared when that stored step ends): what it reports that the quote does not otherwise
   * say. Absent: no step derived.
   */
  readonly webhookStep?: DerivedStepFacts;
  /**
   * For an EMBEDDED_WALLET source: the exact bytes its session key must stamp to execute
   * (CONTRACT.md "Embedded-wallet API"). Kept here, and verified against this copy only.
   */
  readonly payloadToSign?: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly updatedAt: number;
}

export interface QuoteInput {
  destination: { currency?: string; paymentRail?: string; umaAddress?: string };
  lookupId?: string;
  lockedCurrencySide: LockedCurrencySide;
  lockedCurrencyAmount: number;
  description?: string;
  purposeOfPayment?: PurposeOfPayment;
  senderCustomerInfo?: Record<string, string>;
  immediatelyExecute?: boolean;
}

/** Where a quote pays to, resolved in the quote's environment. */
export type Payee =
  | { kind: 'INTERNAL'; account: InternalAccount; customer: Customer | undefined }
  | { kind: 'EXTERNAL'; account: ExternalAccount; customer: Customer | undefined }
  /** A sandbox test UMA address: paid out of the service, as its behaviour scripts. */
  | { kind: 'UMA_TEST'; umaAddress: string; currency: string; behaviour: SandboxReceiverBehaviour; customer: undefined };

export function payeeCurrency(payee: Payee): string {
  return payee.kind === 'UMA_TEST' ? payee.currency : payee.account.currency;
}

/**
 * Who pays: an internal account, or (direct pull) a customer's US bank account that the
 * service debits through the bank, so money enters the service as the payment executes.
 */
export type Payer =
  | { kind: 'INTERNAL'; account: InternalAccount }
  | { kind: 'PULL'; account: ExternalAccount; customerId: string }
  /**
   * REALTIME_FUNDING: money sent from outside against the quote's payment instructions.
   * `customerId` is '' for the platform; `ownerId` is the customer's actor, or the
   * environment's for the platform.
   */
  | { kind: 'FUNDING'; currency: string; customerId: string; ownerId: string };

/** The actor that owns a payer's quotes and transactions. */
export function ownerOf(payer: Payer): string {
  switch (payer.kind) {
    case 'INTERNAL':
      return payer.account.id;
    case 'PULL':
      return payer.customerId;
    case 'FUNDING':
      return payer.ownerId;
  }
}

function payerCurrency(payer: Payer): string {
  return payer.kind === 'FUNDING' ? payer.currency : payer.account.currency;
}

/** Currencies a REALTIME_FUNDING quote can be paid in: the pooled bank accounts' and BTC (Spark). */
export function canFundInRealTime(currency: string): boolean {
  return POOL_ACCOUNT[currency] !== undefined || currency === 'BTC';
}

/** The parties of a quote, resolved by the caller (which also holds their actors). */
export interface QuoteParties {
  env: PlatformEnv;
  source: Payer;
  sourceCustomer: Customer | undefined;
  payee: Payee;
}

/** Checks the parties may transact now: nothing new is made for a deleted customer (CONTRACT.md). */
export function assertPartiesActive(parties: QuoteParties): void {
  if (parties.sourceCustomer !== undefined) assertActive(parties.sourceCustomer);
  if (parties.payee.customer !== undefined) assertActive(parties.payee.customer);
}

/** A new quote: its logged facts, and its record as they make it (the reply, and what applying them makes). */
export function decideCreateQuote(parties: QuoteParties, input: QuoteInput, at: number): { decided: QuoteDecided; quote: Quote } {
  const { env, source, payee } = parties;
  const uma = input.destination.umaAddress?.toLowerCase();
  const destinationField = uma === undefined ? 'destination.accountId' : 'destination.umaAddress';
  const receiving = payeeCurrency(payee);
  assertPartiesActive(parties);
  if (payee.kind === 'INTERNAL' && source.kind !== 'FUNDING' && payee.account.id === source.account.id) {
    throw invalidField(destinationField, 'the destination is the source account');
  }
  if (input.destination.currency !== undefined && input.destination.currency !== receiving) {
    throw invalidField('destination.currency', `the destination account holds ${receiving}, not ${input.destination.currency}`);
  }
  if (payee.kind !== 'EXTERNAL' && input.destination.paymentRail !== undefined) {
    throw invalidField('destination.paymentRail', 'only a payout to an external account takes a payment rail');
  }
  if (source.kind === 'PULL' && payee.kind !== 'INTERNAL') {
    throw invalidField(destinationField, 'a direct pull funds an internal account (or a local UMA receiver); it cannot pay out of the service');
  }
  if (source.kind === 'FUNDING') {
    if (payee.kind !== 'INTERNAL') throw invalidField(destinationField, 'a REALTIME_FUNDING quote funds an internal account (or a local UMA receiver); it cannot pay out of the service');
    if (!canFundInRealTime(source.currency)) throw invalidField('source.currency', `${source.currency} cannot be sent in real time: use a fiat currency with a pooled bank account, or BTC`);
    if (input.immediatelyExecute === true) throw invalidField('immediatelyExecute', 'a REALTIME_FUNDING quote executes when its money arrives (POST /sandbox/send)');
  }
  if (input.immediatelyExecute === true && source.kind === 'INTERNAL' && source.account.type === 'EMBEDDED_WALLET') {
    throw invalidField('immediatelyExecute', 'an EMBEDDED_WALLET source needs a signed execute: create the quote, then execute it with the signature');
  }
  const sending = payerCurrency(source);
  const price = priceTransfer(sending, receiving, input.lockedCurrencySide, input.lockedCurrencyAmount);
  checkBounds(env, source.kind === 'FUNDING' ? 'source.currency' : 'source.accountId', sending, price.totalSendingAmount, 'SENDING');
  // Executed at once, it shares its UUID with its payment (derived-ids.ts, newExecutedQuoteId).
  const id = input.immediatelyExecute === true ? newExecutedQuoteId(at) : newId('Quote', at);
  checkBounds(env, destinationField, receiving, price.totalReceivingAmount, 'RECEIVING');
  const decided: QuoteDecided = {
    type: 'quote.decided',
    id: loggedId(id, 'Quote'),
    lockedCurrencySide: input.lockedCurrencySide,
    lockedCurrencyAmount: input.lockedCurrencyAmount,
    price: priceFacts(price),
  };
  setSourceFacts(decided, source, env.id);
  setPayeeFacts(decided, payee, uma, input.destination.paymentRail);
  if (input.lookupId !== undefined) decided.lookupId = input.lookupId;
  if (input.description !== undefined) decided.description = input.description;
  if (input.purposeOfPayment !== undefined) decided.purposeOfPayment = input.purposeOfPayment;
  if (input.senderCustomerInfo !== undefined) decided.senderCustomerInfo = { ...input.senderCustomerInfo };
  const quote = quoteRecord(decided, env.id, source, payee, at);
  return { decided, quote };
}

/**
 * A new quote as the log holds it (`quote.decided`): what was decided when it was made,
 * and nothing that follows from it. Its record is derived when it applies (quoteOf),
 * from these facts, the entry's time and its parties as the state holds them there; the
 * status, times, owner, destination, counterparty information, funding reference and an
 * EMBEDDED_WALLET's payloadToSign all follow, so none of them is logged.
 */
export interface QuoteDecided {
  type: 'quote.decided';
  id: LoggedId;
  /** The paying internal account; its environment and customer are the quote's. */
  sourceAccount?: LoggedId;
  /** A direct pull: the customer's bank account debited; its environment and customer are the quote's. */
  pullAccount?: LoggedId;
  /** REALTIME_FUNDING: the environment, and the customer funding it (absent: the platform). */
  funding?: { envId: string; customerId?: LoggedId };
  /** The internal account paid (also a local UMA receiver's). */
  payeeAccount?: LoggedId;
  /** The bank account paid out to. */
  payoutAccount?: LoggedId;
  paymentRail?: string;
  umaAddress?: string;
  umaTestBehaviour?: SandboxReceiverBehaviour;
  lookupId?: string;
  lockedCurrencySide: LockedCurrencySide;
  lockedCurrencyAmount: number;
  price: PriceFacts;
  description?: string;
  purposeOfPayment?: PurposeOfPayment;
  senderCustomerInfo?: Readonly<Record<string, string>>;
}

/**
 * A quote between two internal accounts, as most are logged, laid out in a row of the log
 * (src/engine/log-layout.ts): its id, side, amount, price and the two accounts, in the order
 * decideCreateQuote sets them. A quote with any other field is written as msgpack.
 */
export const QUOTE_DECIDED_LAYOUT: EventLayout = {
  type: 'quote.decided',
  fields: [
    ['id', 'id'],
    ['lockedCurrencySide', 'shared'],
    ['lockedCurrencyAmount', 'number'],
    ['price', 'list'],
    ['sourceAccount', 'id'],
    ['payeeAccount', 'id'],
  ] satisfies ReadonlyArray<readonly [keyof QuoteDecided, EventLayout['fields'][number][1]]>,
};

/**
 * A quote's price as logged, in a fixed order (no key names in every entry): what the rate
 * table gave when it was priced. The total sent, the counterparty's fixed fee (always 0)
 * and the variable fee amount follow from these (priceOf).
 */
export type PriceFacts = readonly [
  sendingCurrency: string,
  receivingCurrency: string,
  principal: number,
  feesIncluded: number,
  totalReceivingAmount: number,
  exchangeRate: number,
  counterpartyMultiplier: number,
  serviceApiMultiplier: number,
  serviceApiFixedFee: number,
  serviceApiVariableFeeRate: number,
];

function priceFacts(p: PricedTransfer): PriceFacts {
  const r = p.rateDetails;
  return [p.sendingCurrency, p.receivingCurrency, p.principal, p.feesIncluded, p.totalReceivingAmount, p.exchangeRate, r.counterpartyMultiplier, r.serviceApiMultiplier, r.serviceApiFixedFee, r.serviceApiVariableFeeRate];
}

/** The PricedTransfer of logged price facts, key for key as priceTransfer makes it. */
function priceOf(f: PriceFacts): PricedTransfer {
  const [sendingCurrency, receivingCurrency, principal, feesIncluded, totalReceivingAmount, exchangeRate, counterpartyMultiplier, serviceApiMultiplier, serviceApiFixedFee, serviceApiVariableFeeRate] = f;
  return {
    sendingCurrency,
    receivingCurrency,
    principal,
    feesIncluded,
    totalSendingAmount: principal + feesIncluded,
    totalReceivingAmount,
    exchangeRate,
    rateDetails: { counterpartyMultiplier, counterpartyFixedFee: 0, serviceApiMultiplier, serviceApiFixedFee, serviceApiVariableFeeRate, serviceApiVariableFeeAmount: feesIncluded - serviceApiFixedFee },
  };
}

// The facts are set on the decided event rather than spread into its literal: a spread in
// the middle of a literal makes V8 define each property after it the slow way.
function setSourceFacts(decided: QuoteDecided, source: Payer, envId: string): void {
  switch (source.kind) {
    case 'INTERNAL':
      decided.sourceAccount = loggedId(source.account.id, 'InternalAccount');
      return;
    case 'PULL':
      decided.pullAccount = loggedId(source.account.id, 'ExternalAccount');
      return;
    case 'FUNDING':
      decided.funding = source.customerId === '' ? { envId } : { envId, customerId: loggedId(source.customerId, 'Customer') };
  }
}

function setPayeeFacts(decided: QuoteDecided, payee: Payee, uma: string | undefined, paymentRail: string | undefined): void {
  if (payee.kind === 'UMA_TEST') {
    decided.umaAddress = payee.umaAddress;
    decided.umaTestBehaviour = payee.behaviour;
    return;
  }
  if (payee.kind === 'INTERNAL') decided.payeeAccount = loggedId(payee.account.id, 'InternalAccount');
  else decided.payoutAccount = loggedId(payee.account.id, 'ExternalAccount');
  if (uma !== undefined) decided.umaAddress = uma;
  else if (paymentRail !== undefined) decided.paymentRail = paymentRail;
}

/** The state a quote's record is derived from when its `quote.decided` applies. */
export interface QuoteState {
  readonly quotes: Pick<Quotes, 'takeDecided'>;
  readonly customers: { get(id: string): Customer | undefined };
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
  readonly externalAccounts: { get(id: string): ExternalAccount | undefined };
}

/**
 * What `quote.decided` makes: the quote's record, from its facts and its parties as the
 * state holds them where the entry applies (the state the decision read), so the record
 * is the one the decision replied with, on first apply and on replay.
 */
export function quoteOf(decided: QuoteDecided, state: QuoteState, at: number): Quote {
  const decidedHere = state.quotes.takeDecided(decided);
  if (decidedHere !== undefined) return decidedHere;
  const source = payerAt(decided, state);
  const envId = source.kind === 'FUNDING' ? decided.funding!.envId : source.account.envId;
  return quoteRecord(decided, envId, source, payeeAt(decided, state), at);
}

function payerAt(d: QuoteDecided, state: QuoteState): Payer {
  if (d.sourceAccount !== undefined) return { kind: 'INTERNAL', account: existing(state.internalAccounts, idOf(d.sourceAccount, 'InternalAccount')) };
  if (d.pullAccount !== undefined) {
    const account = existing(state.externalAccounts, idOf(d.pullAccount, 'ExternalAccount'));
    return { kind: 'PULL', account, customerId: account.customerId ?? '' };
  }
  if (d.funding === undefined) throw new Error(`quote.decided ${idOf(d.id, 'Quote')} names no source`);
  const customerId = d.funding.customerId === undefined ? '' : idOf(d.funding.customerId, 'Customer');
  return { kind: 'FUNDING', currency: d.price[0], customerId, ownerId: customerId === '' ? d.funding.envId : customerId };
}

function payeeAt(d: QuoteDecided, state: QuoteState): Payee {
  const customer = (id: string | null): Customer | undefined => (id === null || id === '' ? undefined : state.customers.get(id));
  if (d.umaTestBehaviour !== undefined) return { kind: 'UMA_TEST', umaAddress: d.umaAddress ?? '', currency: d.price[1], behaviour: d.umaTestBehaviour, customer: undefined };
  if (d.payoutAccount !== undefined) {
    const account = existing(state.externalAccounts, idOf(d.payoutAccount, 'ExternalAccount'));
    return { kind: 'EXTERNAL', account, customer: customer(account.customerId) };
  }
  if (d.payeeAccount === undefined) throw new Error(`quote.decided ${idOf(d.id, 'Quote')} names no payee`);
  const account = existing(state.internalAccounts, idOf(d.payeeAccount, 'InternalAccount'));
  return { kind: 'INTERNAL', account, customer: customer(account.customerId) };
}

function existing<T>(records: { get(id: string): T | undefined }, id: string): T {
  const record = records.get(id);
  if (record === undefined) throw new Error(`quote.decided names ${id}, which does not exist`);
  return record;
}

/** A new quote's record: its facts, time and parties, key for key as quotes were always made. */
function quoteRecord(decided: QuoteDecided, envId: string, source: Payer, payee: Payee, at: number): Quote {
  const id = idOf(decided.id, 'Quote');
  const quote: { -readonly [K in keyof Quote]: Quote[K] } = {
    id,
    envId,
    status: 'PENDING',
    sourceAccountId: source.kind === 'FUNDING' ? '' : source.account.id,
    sourceCustomerId: source.kind === 'INTERNAL' ? source.account.customerId : source.customerId,
    ownerId: ownerOf(source),
    destination: destinationOf(decided, payee),
    lockedCurrencySide: decided.lockedCurrencySide,
    lockedCurrencyAmount: decided.lockedCurrencyAmount,
    price: priceOf(decided.price),
    createdAt: at,
    expiresAt: at + QUOTE_LIFETIME_MS,
    updatedAt: at,
  };
  // Set after the literal, not spread into it (a spread in a literal's middle is V8's slow path).
  if (payee.kind === 'UMA_TEST') quote.umaTestBehaviour = payee.behaviour;
  else quote.payeeAccountId = payee.account.id;
  if (decided.lookupId !== undefined) quote.lookupId = decided.lookupId;
  if (source.kind === 'INTERNAL' && source.account.type === 'EMBEDDED_WALLET') quote.payloadToSign = executePayload(quote);
  if (source.kind === 'FUNDING') quote.fundingReference = fundingReference(id);
  if (decided.description !== undefined) quote.description = decided.description;
  if (decided.purposeOfPayment !== undefined) quote.purposeOfPayment = decided.purposeOfPayment;
  if (decided.senderCustomerInfo !== undefined) quote.senderCustomerInfo = { ...decided.senderCustomerInfo };
  const counterparty = counterpartyOf(payee);
  if (counterparty !== undefined) quote.counterpartyInformation = counterparty;
  return quote;
}

function destinationOf(decided: QuoteDecided, payee: Payee): QuoteDestination {
  if (decided.umaAddress !== undefined) return { destinationType: 'UMA_ADDRESS', umaAddress: decided.umaAddress };
  const accountId = payee.kind === 'UMA_TEST' ? '' : payee.account.id;
  return decided.paymentRail === undefined ? { destinationType: 'ACCOUNT', accountId } : { destinationType: 'ACCOUNT', accountId, paymentRail: decided.paymentRail };
}

/** The action an embedded wallet's session signs to pay a quote. */
export const EXECUTE_QUOTE_ACTION = 'EXECUTE_QUOTE';

/**
 * What an embedded wallet's session key signs to execute `quote`: the action, the wallet,
 * the quote, what leaves and what arrives where, and until when. Key order is fixed here;
 * the string is kept on the quote and the client signs it byte for byte, so nothing ever
 * serialises it again.
 */
function executePayload(quote: Quote): string {
  const p = quote.price;
  return JSON.stringify({
    action: EXECUTE_QUOTE_ACTION,
    accountId: quote.sourceAccountId,
    quoteId: quote.id,
    destination: quote.destination,
    sendingCurrency: p.sendingCurrency,
    totalSendingAmount: p.totalSendingAmount,
    feesIncluded: p.feesIncluded,
    receivingCurrency: p.receivingCurrency,
    totalReceivingAmount: p.totalReceivingAmount,
    expiresAt: isoTime(quote.expiresAt),
  });
}

/**
 * The platform's per-currency bounds (PATCH /config) on what one quote sends or delivers.
 * The sending currency must be one the platform supports (its accounts hold it); the
 * receiving side may be any currency the rate table prices (a payout to an MXN bank
 * account, a test UMA address in EUR), bounded by the platform's settings for it or, when
 * it has none, the defaults (as receiver lookups report them).
 */
function checkBounds(env: PlatformEnv, accountField: string, currency: string, amount: number, side: 'SENDING' | 'RECEIVING'): void {
  const configured = env.config.supportedCurrencies.find((s) => s.currencyCode === currency);
  if (configured === undefined && side === 'SENDING') throw invalidField(accountField, `${currency} is not among the platform's supported currencies`);
  const supported = configured ?? defaultSupportedCurrency(currency);
  if (amount < supported.minAmount) {
    throw new DomainError('INVALID_INPUT', `lockedCurrencyAmount: the quote moves ${amount} ${currency}, below the platform's minAmount ${supported.minAmount}`, [
      { field: 'lockedCurrencyAmount', message: `below minAmount ${supported.minAmount} ${currency}`, minAmount: supported.minAmount, currency },
    ]);
  }
  if (amount > supported.maxAmount) {
    throw new DomainError('INVALID_INPUT', `lockedCurrencyAmount: the quote moves ${amount} ${currency}, above the platform's maxAmount ${supported.maxAmount}`, [
      { field: 'lockedCurrencyAmount', message: `above maxAmount ${supported.maxAmount} ${currency}`, maxAmount: supported.maxAmount, currency },
    ]);
  }
}

function counterpartyOf(payee: Payee): Record<string, string> | undefined {
  const info: Record<string, string> = {};
  if (payee.kind === 'UMA_TEST') return undefined;
  if (payee.kind === 'EXTERNAL') {
    const beneficiary = 'beneficiary' in payee.account.accountInfo ? payee.account.accountInfo.beneficiary : undefined;
    if (beneficiary?.fullName !== undefined) info.FULL_NAME = beneficiary.fullName;
    if (beneficiary?.birthDate !== undefined) info.BIRTH_DATE = beneficiary.birthDate;
    if (beneficiary?.nationality !== undefined) info.NATIONALITY = beneficiary.nationality;
  } else if (payee.customer !== undefined) {
    if (payee.customer.fullName !== undefined) info.FULL_NAME = payee.customer.fullName;
    if (payee.customer.birthDate !== undefined) info.BIRTH_DATE = payee.customer.birthDate;
    if (payee.customer.nationality !== undefined) info.NATIONALITY = payee.customer.nationality;
  }
  return Object.keys(info).length > 0 ? info : undefined;
}

/** The timer that expires a new quote at its expiresAt: keyed by the quote id, delivered to the quote's owner. */
export function expiryTimer(quote: Quote, at: number): EngineEvent<QuoteTimer> {
  return setTimer<QuoteTimer>(quote.expiresAt, [quote.ownerId], { type: 'quote.expire' }, at, quote.id);
}

/** Cancels the expiry timer of a quote that executes (or whose money arrives). */
export function cancelExpiry(quote: Quote): EngineEvent<QuoteTimer> {
  return cancelTimer(quote.id);
}

/** The expiry timer's decision: a quote still PENDING becomes EXPIRED; anything else stays. */
export function decideExpireQuote(quote: Quote | undefined, at: number): QuoteEvent[] {
  if (quote === undefined || quote.status !== 'PENDING') return [];
  return [{ type: 'quote.changed', quote: { ...quote, status: 'EXPIRED', updatedAt: at } }];
}

/**
 * The quotes. The per-environment list serves listings only; the quote itself changes
 * only under its source account's actor. `quote.created` carries the whole record: World
 * makes it from a logged `quote.decided`, and stores written before logged it as is.
 */
export type QuoteEvent = { type: 'quote.created'; quote: Quote } | { type: 'quote.changed'; quote: Quote };

/**
 * Quote.webhookStep: 1 when the payment made a receiver's transaction (its events' ids skip
 * the byte it took), else 0; then the source account's balance, inflow and outflow as the
 * payment left them, then the payee account's. Every other field of those accounts' versions
 * is the account's own, which no later change touches (accounts that carry `privateEnabled`
 * are never derived), and their time is the quote's.
 */
export type DerivedStepFacts = readonly [receiver: 0 | 1, sourceBalance: number, sourceInflow: number, sourceOutflow: number, payeeBalance: number, payeeInflow: number, payeeOutflow: number];

/** The bits of Quote.transactionsDerived. */
export const TRANSACTION_DERIVED = {
  /** The outgoing transaction (the quote's transactionId). */
  outgoing: 1,
  /** The receiver's transaction (paymentIdAt its outgoing one, byte 02). */
  received: 2,
} as const;

/** A quote's new status as a payment step logs it (with the transaction it made). */
export interface QuoteChange {
  id: string;
  status: QuoteStatus;
  transactionId?: string;
  /** Quote.transactionsDerived, as the execution that names the transaction found them. */
  transactionsDerived?: number;
  /** Quote.webhookStep, as the execution that makes the step found it. */
  webhookStep?: DerivedStepFacts;
}

/**
 * `quote` as a payment step changed it, written out field by field: a spread of a quote
 * and its changes took about 9 µs on Node 20, a payment's costliest apply step.
 */
function changedQuote(quote: Quote, change: QuoteChange, at: number): Quote {
  const next: { -readonly [K in keyof Quote]: Quote[K] } = {
    id: quote.id,
    envId: quote.envId,
    status: change.status,
    sourceAccountId: quote.sourceAccountId,
    sourceCustomerId: quote.sourceCustomerId,
    ownerId: quote.ownerId,
    destination: quote.destination,
    lockedCurrencySide: quote.lockedCurrencySide,
    lockedCurrencyAmount: quote.lockedCurrencyAmount,
    price: quote.price,
    createdAt: quote.createdAt,
    expiresAt: quote.expiresAt,
    updatedAt: at,
  };
  if (quote.fundingReference !== undefined) next.fundingReference = quote.fundingReference;
  if (quote.payeeAccountId !== undefined) next.payeeAccountId = quote.payeeAccountId;
  if (quote.umaTestBehaviour !== undefined) next.umaTestBehaviour = quote.umaTestBehaviour;
  if (quote.lookupId !== undefined) next.lookupId = quote.lookupId;
  if (quote.description !== undefined) next.description = quote.description;
  if (quote.purposeOfPayment !== undefined) next.purposeOfPayment = quote.purposeOfPayment;
  if (quote.senderCustomerInfo !== undefined) next.senderCustomerInfo = quote.senderCustomerInfo;
  if (quote.counterpartyInformation !== undefined) next.counterpartyInformation = quote.counterpartyInformation;
  const transactionId = change.transactionId ?? quote.transactionId;
  if (transactionId !== undefined) next.transactionId = transactionId;
  const transactionsDerived = change.transactionsDerived ?? quote.transactionsDerived;
  if (transactionsDerived !== undefined) next.transactionsDerived = transactionsDerived;
  const webhookStep = change.webhookStep ?? quote.webhookStep;
  if (webhookStep !== undefined) next.webhookStep = webhookStep;
  if (quote.payloadToSign !== undefined) next.payloadToSign = quote.payloadToSign;
  return next;
}

/** `quote` as it is without Quote.webhookStep, written field by field as changedQuote writes every quote (its time kept). */
function withoutDerivedStep(quote: Quote): Quote {
  return changedQuote({ ...quote, webhookStep: undefined }, { id: quote.id, status: quote.status }, quote.updatedAt);
}

/**
 * A quote as a snapshot stores it (Quotes.stored): without the fields that say what its
 * others already do, each named by a bit of `derived`. A snapshot wrote about 500 bytes a
 * payment's quote, a quarter of them these; and then 378, of which the two ids its others
 * give (its source's customer, its immediate execution's transaction) took 93.
 */
type StoredQuote = Omit<Quote, 'ownerId' | 'expiresAt' | 'updatedAt' | 'sourceCustomerId'> &
  Partial<Pick<Quote, 'ownerId' | 'expiresAt' | 'updatedAt' | 'sourceCustomerId'>> & { readonly derived?: number };

/** The bits of StoredQuote.derived, and what each field left out is. */
const QUOTE_DERIVED = {
  /** The source account's id (the quote's actor is its source account). */
  ownerId: 1,
  /** The destination account's id. */
  payeeAccountId: 2,
  /** createdAt and QUOTE_LIFETIME_MS. */
  expiresAt: 4,
  /** createdAt. */
  updatedAt: 8,
  /** The customer whose provisioned account the source account is (derivedFrom); '' when it is no customer's (the platform's own). */
  sourceCustomerId: 16,
  /** The quote's own UUID: it was executed as it was made (executionTransactionIdOf). */
  transactionId: 32,
} as const;

/** The customer whose provisioned account `accountId` is, by its id alone; '' for any other account. */
function sourceCustomerOf(accountId: string): string {
  return derivedFrom(accountId)?.customerId ?? '';
}

function storedQuote(quote: Quote): StoredQuote {
  const destinationAccount = quote.destination.destinationType === 'ACCOUNT' ? quote.destination.accountId : undefined;
  let derived = 0;
  if (quote.ownerId === quote.sourceAccountId) derived |= QUOTE_DERIVED.ownerId;
  if (quote.payeeAccountId !== undefined && quote.payeeAccountId === destinationAccount) derived |= QUOTE_DERIVED.payeeAccountId;
  if (quote.expiresAt === quote.createdAt + QUOTE_LIFETIME_MS) derived |= QUOTE_DERIVED.expiresAt;
  if (quote.updatedAt === quote.createdAt) derived |= QUOTE_DERIVED.updatedAt;
  if (quote.sourceCustomerId === sourceCustomerOf(quote.sourceAccountId)) derived |= QUOTE_DERIVED.sourceCustomerId;
  if (quote.transactionId !== undefined && quote.transactionId === executionTransactionIdOf(quote.id)) derived |= QUOTE_DERIVED.transactionId;
  if (derived === 0) return quote;
  // Field by field, as changedQuote writes a quote: a rest pattern made an object the writer encoded slower than the whole quote.
  const out: { -readonly [K in keyof StoredQuote]: StoredQuote[K] } = {
    id: quote.id,
    envId: quote.envId,
    status: quote.status,
    sourceAccountId: quote.sourceAccountId,
    destination: quote.destination,
    lockedCurrencySide: quote.lockedCurrencySide,
    lockedCurrencyAmount: quote.lockedCurrencyAmount,
    price: quote.price,
    createdAt: quote.createdAt,
    derived,
  };
  if ((derived & QUOTE_DERIVED.sourceCustomerId) === 0) out.sourceCustomerId = quote.sourceCustomerId;
  if ((derived & QUOTE_DERIVED.ownerId) === 0) out.ownerId = quote.ownerId;
  if ((derived & QUOTE_DERIVED.expiresAt) === 0) out.expiresAt = quote.expiresAt;
  if ((derived & QUOTE_DERIVED.updatedAt) === 0) out.updatedAt = quote.updatedAt;
  if ((derived & QUOTE_DERIVED.payeeAccountId) === 0 && quote.payeeAccountId !== undefined) out.payeeAccountId = quote.payeeAccountId;
  if (quote.fundingReference !== undefined) out.fundingReference = quote.fundingReference;
  if (quote.umaTestBehaviour !== undefined) out.umaTestBehaviour = quote.umaTestBehaviour;
  if (quote.lookupId !== undefined) out.lookupId = quote.lookupId;
  if (quote.description !== undefined) out.description = quote.description;
  if (quote.purposeOfPayment !== undefined) out.purposeOfPayment = quote.purposeOfPayment;
  if (quote.senderCustomerInfo !== undefined) out.senderCustomerInfo = quote.senderCustomerInfo;
  if (quote.counterpartyInformation !== undefined) out.counterpartyInformation = quote.counterpartyInformation;
  if ((derived & QUOTE_DERIVED.transactionId) === 0 && quote.transactionId !== undefined) out.transactionId = quote.transactionId;
  if (quote.transactionsDerived !== undefined) out.transactionsDerived = quote.transactionsDerived;
  if (quote.webhookStep !== undefined) out.webhookStep = quote.webhookStep;
  if (quote.payloadToSign !== undefined) out.payloadToSign = quote.payloadToSign;
  return out;
}

/** The quote `stored` stands for, key for key as quotes are made (changedQuote writes each field in order). */
function quoteOfStored(stored: StoredQuote): Quote {
  const derived = stored.derived;
  if (derived === undefined) return stored as Quote;
  const given = (bit: number, value: number | string | undefined, derivedValue: number | string | undefined): number | string | undefined => ((derived & bit) === 0 ? value : derivedValue);
  const destinationAccount = stored.destination.destinationType === 'ACCOUNT' ? stored.destination.accountId : undefined;
  const whole = {
    ...stored,
    ownerId: given(QUOTE_DERIVED.ownerId, stored.ownerId, stored.sourceAccountId),
    payeeAccountId: given(QUOTE_DERIVED.payeeAccountId, stored.payeeAccountId, destinationAccount),
    expiresAt: given(QUOTE_DERIVED.expiresAt, stored.expiresAt, stored.createdAt + QUOTE_LIFETIME_MS),
    sourceCustomerId: given(QUOTE_DERIVED.sourceCustomerId, stored.sourceCustomerId, sourceCustomerOf(stored.sourceAccountId)),
    transactionId: given(QUOTE_DERIVED.transactionId, stored.transactionId, executionTransactionIdOf(stored.id)),
  } as Quote;
  return changedQuote(whole, { id: stored.id, status: stored.status }, given(QUOTE_DERIVED.updatedAt, stored.updatedAt, stored.createdAt) as number);
}

/**
 * The timer that expires an unexecuted quote. It is keyed by the quote's id, which the
 * engine hands `onTimer` with it, so the message does not repeat it. (Timers set before
 * issue 38 also carry it as `quoteId`: every expiry timer was keyed by its quote's id.)
 */
export type QuoteTimer = { type: 'quote.expire' };

/** The events the quotes apply, as far as they read them (payment-recorded.ts has the whole payment step). */
type QuotesEvent = QuoteEvent | { type: 'payment.recorded'; quoteChange?: QuoteChange; quote?: Quote };

/** Whether two versions of a quote give its transactions the same fields (quotedFields in transaction.ts). */
function samePricing(a: Quote, b: Quote): boolean {
  if (a.description !== b.description) return false;
  if (a.destination !== b.destination && JSON.stringify(a.destination) !== JSON.stringify(b.destination)) return false;
  return a.price === b.price || JSON.stringify(a.price) === JSON.stringify(b.price);
}

export class Quotes implements RecordKind<Quote, QuotesEvent> {
  readonly idPrefix = 'Quote:';
  actorOf(quote: Quote): string {
    return quote.ownerId;
  }

  /** The actor that owns quote `id`, read without the holding check (for its transaction's actor). */
  ownerOf(id: string): string | undefined {
    return this.#quotes.peek(id)?.ownerId;
  }
  readonly #quotes = new RecordMap<Quote>();
  readonly #byEnv = new Map<string, SortedIds>();
  /** REALTIME_FUNDING quotes by funding reference (references are unique: they encode the quote id). */
  readonly #byReference = new Map<string, string>();
  readonly records: ReadonlyMap<string, Quote> = this.#quotes;
  /**
   * Quote records whose payloadToSign was found to name them: a record is immutable, so the
   * answer stands, and a check of every quote (the simulator's, after each crash and every 500
   * steps) parses each payload once, not at every check.
   */
  readonly #payloadNamesItsQuote = new WeakSet<Quote>();
  /**
   * The last `quote.decided` decided here and the record its decision made, for its apply
   * (quoteOf): the decision read the same state at the same time that applying it reads (it
   * applies at once, under the same actors, in the same turn), so deriving it again would
   * make an equal record for nothing. Any other event (a replay's, or one whose decision
   * threw after this was set) is not this object and is derived; log-replay holds that both
   * give the same answers. One slot rather than a WeakMap keyed by the event: an ephemeron
   * table entry per quote cost its set and the collector's ephemeron passes on every payment.
   */
  #decided: QuoteDecided | undefined;
  #decidedQuote: Quote | undefined;

  /** Notes the record the decision of `decided` made, for the apply of that same event. */
  decidedHere(decided: QuoteDecided, quote: Quote): void {
    this.#decided = decided;
    this.#decidedQuote = quote;
  }

  /** The record noted with this very event (then forgotten), or undefined for any other. */
  takeDecided(decided: QuoteDecided): Quote | undefined {
    if (decided !== this.#decided) return undefined;
    const quote = this.#decidedQuote;
    this.#decided = this.#decidedQuote = undefined;
    return quote;
  }

  readonly appliers: Appliers<QuotesEvent> = {
    'quote.created': (event) => {
      // One lookup of the map: a new id is added, an existing one refused.
      if (!this.#quotes.add(event.quote.id, event.quote)) throw new Error(`quote.created for ${event.quote.id}, which exists`);
      this.#index(event.quote);
    },
    'quote.changed': (event) => this.#replace(event.quote),
    'payment.recorded': (event, at) => {
      if (event.quote !== undefined) this.#replace(event.quote);
      const change = event.quoteChange;
      if (change !== undefined) {
        const quote = this.#quotes.get(change.id);
        if (quote === undefined) throw new Error(`quote ${change.id} does not exist`);
        this.#set(quote, changedQuote(quote, change, at));
      }
    },
  };

  #replace(quote: Quote): void {
    const before = this.#quotes.get(quote.id);
    if (before === undefined) throw new Error(`quote ${quote.id} does not exist`);
    this.#set(before, quote);
  }

  /**
   * Told of a quote whose new version prices it otherwise than `before` did (its destination,
   * price or memo: what its transactions take from it; no change of a quote does today): a
   * snapshot may store those transactions without them (Transactions.stored).
   */
  onRepriced: ((before: Quote) => void) | undefined;

  #set(before: Quote | undefined, quote: Quote): void {
    if (before !== undefined && before !== quote && !samePricing(before, quote)) this.onRepriced?.(before);
    this.#quotes.set(quote.id, quote);
  }

  /**
   * A quote executed to its end, failed or expired: a snapshot holds it, and it leaves memory
   * until asked for again (registry.ts, RecordKind.settled). Its restore only indexes it.
   */
  settled(quote: Quote): boolean {
    return quote.status === 'COMPLETED' || quote.status === 'FAILED' || quote.status === 'EXPIRED';
  }

  /** A settled quote read back: indexed when it was made or first restored. */
  readBack(stored: Quote | StoredQuote): void {
    const quote = quoteOfStored(stored);
    this.#quotes.set(quote.id, quote);
  }

  stored(quote: Quote): Quote | StoredQuote {
    return storedQuote(quote);
  }

  restore(stored: Quote | StoredQuote): void {
    const quote = quoteOfStored(stored);
    this.#set(this.#quotes.get(quote.id), quote);
    this.#index(quote);
    for (const listener of this.#restoredListeners) listener(quote);
  }

  readonly #restoredListeners: Array<(quote: Quote) => void> = [];

  /**
   * `listener` is told of every quote a snapshot's restore puts (a lazy chunk's, during
   * recovery, too): the index entries of the transactions it derives (Transactions,
   * derivedTransaction) and the events of the webhook step it derives (WebhookEvents).
   */
  whenRestored(listener: (quote: Quote) => void): void {
    this.#restoredListeners.push(listener);
  }

  /**
   * The webhook step quote `id` derived ended (its events taken out, as their own records or
   * pruned): the quote no longer derives it, or it would come back. Changed outside the
   * holding check, as the outbox's decision holds the events, and `updatedAt` kept: nothing a
   * platform reads of the quote changes.
   */
  endDerivedStep(id: string): void {
    const quote = this.#quotes.peek(id);
    if (quote?.webhookStep === undefined) return;
    this.#quotes.setUnchecked(id, withoutDerivedStep(quote));
  }

  #index(quote: Quote): void {
    bucket(this.#byEnv, quote.envId).insert(quote.id);
    if (quote.fundingReference !== undefined) this.#byReference.set(quote.fundingReference, quote.id);
  }

  /** Every quote's amounts add up; an executed quote names its transaction. */
  checkInvariants(lookup: { has(id: string): boolean }): string[] {
    const problems: string[] = [];
    for (const q of this.#quotes.values()) {
      const p = q.price;
      if (p.totalSendingAmount !== p.principal + p.feesIncluded) problems.push(`${q.id}: totalSendingAmount is not principal + feesIncluded`);
      if (p.feesIncluded < 0) problems.push(`${q.id}: negative fees`);
      const executed = q.status !== 'PENDING' && q.status !== 'EXPIRED';
      if (executed !== (q.transactionId !== undefined)) problems.push(`${q.id} is ${q.status} with transaction ${q.transactionId ?? 'none'}`);
      if (q.transactionId !== undefined && !lookup.has(q.transactionId)) problems.push(`${q.id} names unknown transaction ${q.transactionId}`);
      if ((q.payeeAccountId === undefined) === (q.umaTestBehaviour === undefined)) problems.push(`${q.id} must name exactly one payee`);
      if (q.payloadToSign !== undefined && !this.#payloadNamesItsQuote.has(q)) {
        if ((JSON.parse(q.payloadToSign) as { quoteId?: unknown }).quoteId !== q.id) problems.push(`${q.id}: payloadToSign names another quote`);
        else this.#payloadNamesItsQuote.add(q);
      }
    }
    return problems;
  }

  get(id: string): Quote | undefined {
    return this.#quotes.get(id);
  }

  /**
   * Every quote as the state digest counts it: without Quote.webhookStep, a form of its
   * step's events, which the outbox counts one by one whether a quote derives them or a step
   * stores them (so a log replays to one digest whichever form it makes).
   */
  *eachRecord(): Iterable<readonly [string, Quote]> {
    for (const [id, quote] of this.#quotes) {
      yield [id, quote.webhookStep === undefined ? quote : withoutDerivedStep(quote)];
    }
  }

  /** The quote `id`, read back if it left memory, without the holding check: for rendering a transaction it derives. */
  peek(id: string): Quote | undefined {
    return this.#quotes.peek(id);
  }

  /** How many quotes exist, in memory or left in a snapshot's lazy chunks (settled). */
  get count(): number {
    let count = 0;
    for (const ids of this.#byEnv.values()) count += ids.ids.length;
    return count;
  }

  inEnv(envId: string, id: string): Quote | undefined {
    const q = this.#quotes.get(id);
    return q?.envId === envId ? q : undefined;
  }

  /** The REALTIME_FUNDING quote of the environment with this funding reference. */
  byFundingReference(envId: string, reference: string): Quote | undefined {
    const id = this.#byReference.get(reference);
    return id === undefined ? undefined : this.inEnv(envId, id);
  }
}

export type DestinationView =
  | { destinationType: 'ACCOUNT'; accountId: string; currency: string; paymentRail?: string }
  | { destinationType: 'UMA_ADDRESS'; umaAddress: string; currency: string };

export function renderDestination(d: QuoteDestination, currency: string): DestinationView {
  if (d.destinationType === 'UMA_ADDRESS') return { destinationType: 'UMA_ADDRESS', umaAddress: d.umaAddress, currency };
  return d.paymentRail === undefined
    ? { destinationType: 'ACCOUNT', accountId: d.accountId, currency }
    : { destinationType: 'ACCOUNT', accountId: d.accountId, currency, paymentRail: d.paymentRail };
}

export interface QuoteView {
  id: string;
  status: QuoteStatus;
  createdAt: string;
  expiresAt: string;
  source: { sourceType: 'ACCOUNT'; accountId: string; customerId?: string } | { sourceType: 'REALTIME_FUNDING'; currency: string; customerId?: string };
  destination: DestinationView;
  paymentInstructions?: PaymentInstruction[];
  sendingCurrency: Currency;
  receivingCurrency: Currency;
  totalSendingAmount: number;
  totalReceivingAmount: number;
  exchangeRate: number;
  feesIncluded: number;
  lockedCurrencySide: LockedCurrencySide;
  lockedCurrencyAmount: number;
  transactionId?: string;
  description?: string;
  purposeOfPayment?: PurposeOfPayment;
  counterpartyInformation?: Record<string, string>;
  rateDetails: RateDetails;
}

/** Where a REALTIME_FUNDING quote's money goes, or what an EMBEDDED_WALLET source signs. */
export type PaymentInstruction =
  | {
      accountOrWalletInfo:
        | { accountType: string; accountNumber: string; routingNumber?: string; reference: string }
        | { accountType: 'SPARK_WALLET'; assetType: 'BTC'; address: string; reference: string };
      instructionsNotes: string;
    }
  | { accountOrWalletInfo: { accountType: 'EMBEDDED_WALLET'; payloadToSign: string } };

/**
 * Where to send a REALTIME_FUNDING quote's money: the pooled bank account of the currency
 * with the quote's reference, or for BTC a Spark address of the service (the sandbox has
 * no Spark node: the address is derived from the reference, and the money arrives through
 * POST /sandbox/send).
 */
function paymentInstructionsOf(q: Quote, reference: string): PaymentInstruction[] {
  const currency = q.price.sendingCurrency;
  const amount = `${q.price.totalSendingAmount} (smallest unit of ${currency})`;
  const pool = POOL_ACCOUNT[currency];
  if (pool !== undefined) {
    return [{ accountOrWalletInfo: { ...pool, reference }, instructionsNotes: `Send exactly ${amount} to this account with the reference ${reference} before ${isoTime(q.expiresAt)}.` }];
  }
  return [
    {
      accountOrWalletInfo: { accountType: 'SPARK_WALLET', assetType: 'BTC', address: `sprt1${reference.toLowerCase()}`, reference },
      instructionsNotes: `Send exactly ${amount} to this Spark address before ${isoTime(q.expiresAt)}.`,
    },
  ];
}

export function renderQuote(q: Quote): QuoteView {
  const p = q.price;
  const destination = renderDestination(q.destination, p.receivingCurrency);
  const view: QuoteView = {
    id: q.id,
    status: q.status,
    createdAt: isoTime(q.createdAt),
    expiresAt: isoTime(q.expiresAt),
    source:
      q.fundingReference !== undefined
        ? { sourceType: 'REALTIME_FUNDING', currency: p.sendingCurrency, ...(q.sourceCustomerId === '' ? {} : { customerId: q.sourceCustomerId }) }
        : q.sourceCustomerId === ''
          ? { sourceType: 'ACCOUNT', accountId: q.sourceAccountId }
          : { sourceType: 'ACCOUNT', accountId: q.sourceAccountId, customerId: q.sourceCustomerId },
    destination,
    sendingCurrency: currencyObject(p.sendingCurrency),
    receivingCurrency: currencyObject(p.receivingCurrency),
    totalSendingAmount: p.totalSendingAmount,
    totalReceivingAmount: p.totalReceivingAmount,
    exchangeRate: p.exchangeRate,
    feesIncluded: p.feesIncluded,
    lockedCurrencySide: q.lockedCurrencySide,
    lockedCurrencyAmount: q.lockedCurrencyAmount,
    rateDetails: { ...p.rateDetails },
  };
  if (q.fundingReference !== undefined) view.paymentInstructions = paymentInstructionsOf(q, q.fundingReference);
  if (q.transactionId !== undefined) view.transactionId = q.transactionId;
  if (q.description !== undefined) view.description = q.description;
  if (q.purposeOfPayment !== undefined) view.purposeOfPayment = q.purposeOfPayment;
  if (q.counterpartyInformation !== undefined) view.counterpartyInformation = { ...q.counterpartyInformation };
  if (q.payloadToSign !== undefined) view.paymentInstructions = [{ accountOrWalletInfo: { accountType: 'EMBEDDED_WALLET', payloadToSign: q.payloadToSign } }];
  return view;
}
