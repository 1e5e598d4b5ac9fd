// Executing a quote, and the later steps of an external payout (CONTRACT.md "Money").
//
// Amounts: the source pays totalSendingAmount T = principal P + fees F. F goes to the
// environment's fee ledger. The ledger invariant (per environment and currency,
// sum(balances) + in transit + fees = inflow - outflow) holds after every step:
//   internal, same currency, P = received:  source -T, destination +P, fees +F
//   internal, converted:                     source -T (outflow +P), fees +F; destination +R (inflow +R)
//   external, completes at once:             source -T (outflow +P), fees +F
//   external, in flight:                     source -T, in transit +P, fees +F
//     settles (or is lost):                  in transit -P, source outflow +P
//     fails and is refunded, or is cancelled: in transit -P, fees -F, source +T
//   external, settled then returned:         source +T (outflow -P: the return cancels
//                                            the payout's outflow), fees -F
//   direct pull (money enters from a bank):  destination +R (inflow +R); fees +F, and the
//                                            pulled T in and its principal P converted out
//                                            (ledger inflow +T, outflow +P)
//   direct pull rejected or failed:          nothing had moved
//   sandbox funding:                         destination +A (inflow +A)
// Every step that adds inflow is refused first when it would take the environment's intake
// past Number.MAX_SAFE_INTEGER (assertIntakeRoom, actors/ledger.ts); the others only move
// what the intake counts already, so no balance or total can pass it.
import { idOf, idTimeOf, loggedId } from '../src/engine/ids.js';
import { setTimer, type EngineEvent } from '../src/engine/state-machine.js';
import { DomainError, invalidField } from './errors.js';
import type { InternalAccount, Posting } from './internal-account.js';
import { assertIntakeRoom, type Intake, type LedgerDelta } from './ledger.js';
import { assertPartiesActive, TRANSACTION_DERIVED, type DerivedStepFacts, type Payee, type Quote, type QuoteChange, type QuoteParties, type QuoteStatus } from './quote.js';
import {
  derivesFromQuote,
  paymentReference,
  unquotedAmounts,
  quotedTransaction,
  type OwnFields,
  receivedSide,
  payoutPlan,
  pullPlan,
  type PayoutPlan,
  type PendingOutcome,
  type PayoutOutcome,
  umaTestPlan,
  withStatus,
  type PaymentTimer,
  type PlatformCustomerIds,
  payoutTimer,
  type Transaction,
} from './transaction.js';
import type { CancelDecided, FundingDecided, QuoteFundingDecided, OutcomeDecided, PaymentDecided, PaymentRecorded, TransferDecided } from './payment-recorded.js';
import type { Customer } from './customer.js';
import type { ExternalAccount } from './external-account.js';
import type { PlatformEnv } from './platform.js';
import { executionTransactionIdOf, idsStartingAt, newDerivingId, newPaymentTransactionId, paymentIdAt, paymentIdsFrom, paymentStemOf } from './derived-ids.js';
import { balanceChangedIds, transactionWebhook, withAccountStatus } from './webhook-event.js';
import { isoTime } from './iso-time.js';

/** A payment decision's events (a quote's execution logs `payment.decided`, a transfer `transfer.decided`) and timer. */
export interface ExecuteDecision<E extends PaymentDecided | TransferDecided = PaymentDecided | TransferDecided> {
  events: E[];
  /** The payout's outcome timer, when it plays out later (keyed by the transaction id). */
  timer?: { due: number; actorIds: string[]; message: PaymentTimer; key: string };
}

/** A decision's events as its log entry has them: its steps, then its outcome timer if it has one. */
export function executionEvents<E extends PaymentDecided | TransferDecided>(decision: ExecuteDecision<E>, at: number): Array<E | EngineEvent<PaymentTimer>> {
  const t = decision.timer;
  return t === undefined ? decision.events : [...decision.events, setTimer(t.due, t.actorIds, t.message, at, t.key)];
}

/**
 * Executes a PENDING quote: checks that it may, and decides how it plays out (the payout's
 * or pull's plan) and its transaction's id: the facts of its `payment.decided`. What it
 * moves and makes is derived from them when the event applies (executionRecorded). The
 * caller holds the quote's owner (its source account, or the pulling customer), the
 * destination account if internal, and both customers. The transaction's id is a new one,
 * or, for a quote executed as it is made, the quote's own UUID (derived-ids.ts,
 * newExecutedQuoteId).
 */
export function decideExecuteQuote(quote: Quote, parties: QuoteParties, intake: Intake, at: number, transactionId = newPaymentTransactionId(at)): ExecuteDecision<PaymentDecided> {
  const source = checkExecutable(quote, parties, at);
  const { payee, env } = parties;
  // A direct pull asks the bank first: some sandbox accounts refuse at once (nothing is made).
  const plan =
    source.kind === 'PULL' ? pullPlan(env.environment, source.account) : payee.kind === 'INTERNAL' ? undefined : payee.kind === 'UMA_TEST' ? umaTestPlan(payee.behaviour) : payoutPlan(env.environment, payee.account);
  if (source.kind === 'PULL' && payee.kind !== 'INTERNAL') throw new Error(`quote ${quote.id} pulls from a bank account into ${payee.kind}`);
  // Paid into an internal account now: what enters the service must fit its intake.
  if (payee.kind === 'INTERNAL' && plan?.atExecute !== 'PROCESS') assertIntakeRoom(intake, quote.envId, creditsOf(quote, source.kind === 'PULL'), 'lockedCurrencyAmount');
  const decided: PaymentDecided = { type: 'payment.decided', quoteId: loggedId(quote.id, 'Quote') };
  // The quote's own UUID goes without saying (executionTransactionIdOf).
  if (transactionId !== executionTransactionIdOf(quote.id)) decided.transactionId = loggedId(transactionId, 'Transaction');
  if (plan !== undefined) decided.plan = plan;
  const timer = timerOf(quote, transactionId, plan === undefined ? undefined : pendingOf(plan, at));
  return timer === undefined ? { events: [decided] } : { events: [decided], timer };
}

/** What a payment into an internal account adds to the intake: a pull takes in T and credits R; a conversion credits R; a same-currency move nothing. */
function creditsOf(quote: Quote, pull: boolean): Array<{ currency: string; amount: number }> {
  const p = quote.price;
  if (pull) {
    return [
      { currency: p.sendingCurrency, amount: p.totalSendingAmount },
      { currency: p.receivingCurrency, amount: p.totalReceivingAmount },
    ];
  }
  return isConverted(quote) ? [{ currency: p.receivingCurrency, amount: p.totalReceivingAmount }] : [];
}

function isConverted(quote: Quote): boolean {
  const p = quote.price;
  return p.sendingCurrency !== p.receivingCurrency || p.principal !== p.totalReceivingAmount;
}

/** The state an execution's records are derived from when its `payment.decided` applies. */
export interface ExecutionState {
  readonly envs: { get(id: string): PlatformEnv | undefined };
  readonly quotes: { get(id: string): Quote | undefined };
  readonly customers: { get(id: string): Customer | undefined };
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
  readonly externalAccounts: { get(id: string): ExternalAccount | undefined };
}

/**
 * What `payment.decided` changes: its `payment.recorded`, derived from the decided facts,
 * the quote and its parties as the state holds them where the entry applies (the same
 * state the decision read, so first apply and replay make the same records and ids).
 */
export function executionRecorded(decided: PaymentDecided, state: ExecutionState, at: number): PaymentRecorded {
  const quoteId = idOf(decided.quoteId, 'Quote');
  const quote = state.quotes.get(quoteId);
  if (quote === undefined) throw new Error(`payment.decided for quote ${quoteId}, which does not exist`);
  const parties = partiesAt(state, quote);
  const transactionId = decided.transactionId === undefined ? executionTransactionIdOf(quoteId) : idOf(decided.transactionId, 'Transaction');
  const nextId = paymentIdsFrom(transactionId);
  const execution = executionOf(quote, parties, transactionId, at);
  const { plan } = decided;
  const { source, payee } = parties;
  const recorded =
    plan?.atExecute === 'PROCESS' && source.kind === 'PULL'
      ? // The bank has not answered yet: nothing moves until it does (and in the sandbox it refuses).
        paymentStep(execution.change('PROCESSING'), withStatus(execution.outgoing, 'PROCESSING', at, pendingChange(plan, at)), [], [], nextId('Webhook'))
      : payee.kind === 'INTERNAL'
        ? payInternally(quote, source, payee, execution, platformIdsOf(parties), parties.env, at)
        : payOut(quote, source.account.id, plan!, execution, nextId, at);
  // Into an internal account the step names its events as one DerivedStep, its ACCOUNT_STATUS events included.
  if (recorded.step !== undefined) return recorded;
  const target = payee.kind === 'INTERNAL' ? payee.account : undefined;
  return withAccountStatus([recorded], [source.kind === 'INTERNAL' ? source.account : undefined, target], () => nextId('Webhook'))[0]!;
}

/** The platform ids of a payment's parties, from the customers its parties were read with (no second lookup). */
function platformIdsOf(parties: QuoteParties): PlatformCustomerIds {
  const sender = parties.sourceCustomer;
  const receiver = parties.payee.customer;
  return (id) => (id === sender?.id ? sender.platformCustomerId : id === receiver?.id ? receiver.platformCustomerId : undefined);
}

/** A quote's parties as the state holds them, for deriving what its execution made (the decision checked them). */
function partiesAt(state: ExecutionState, quote: Quote): QuoteParties & { source: ExecutingSource } {
  const env = state.envs.get(quote.envId)!;
  const internal = state.internalAccounts.get(quote.sourceAccountId);
  const source: ExecutingSource = internal !== undefined ? { kind: 'INTERNAL', account: internal } : { kind: 'PULL', account: state.externalAccounts.get(quote.sourceAccountId)!, customerId: quote.sourceCustomerId };
  const customer = (id: string | null): Customer | undefined => (id === null || id === '' ? undefined : state.customers.get(id));
  const payeeAccount = quote.payeeAccountId === undefined ? undefined : state.internalAccounts.get(quote.payeeAccountId);
  const payee: Payee =
    quote.umaTestBehaviour !== undefined && quote.destination.destinationType === 'UMA_ADDRESS'
      ? { kind: 'UMA_TEST', umaAddress: quote.destination.umaAddress, currency: quote.price.receivingCurrency, behaviour: quote.umaTestBehaviour, customer: undefined }
      : payeeAccount !== undefined
        ? { kind: 'INTERNAL', account: payeeAccount, customer: customer(payeeAccount.customerId) }
        : externalPayee(state.externalAccounts.get(quote.payeeAccountId!)!, customer);
  return { env, source, sourceCustomer: customer(quote.sourceCustomerId), payee };
}

function externalPayee(account: ExternalAccount, customer: (id: string | null) => Customer | undefined): Payee {
  return { kind: 'EXTERNAL', account, customer: customer(account.customerId) };
}

/** A quote's source once it is known to execute (not REALTIME_FUNDING, which executes as its money arrives). */
type ExecutingSource = Exclude<QuoteParties['source'], { kind: 'FUNDING' }>;

/**
 * Refuses a quote that cannot execute now: expired, executed, a party gone, funded from
 * outside, or a balance short of the total. Returns the source it executes from.
 */
function checkExecutable(quote: Quote, parties: QuoteParties, at: number): ExecutingSource {
  if (quote.status === 'EXPIRED' || (quote.status === 'PENDING' && at >= quote.expiresAt)) {
    throw new DomainError('QUOTE_EXPIRED', `quote ${quote.id} expired at ${isoTime(quote.expiresAt)}`);
  }
  if (quote.status !== 'PENDING') throw new DomainError('QUOTE_ALREADY_EXECUTED', `quote ${quote.id} was executed already (it is ${quote.status})`);
  assertPartiesActive(parties);
  const { source } = parties;
  if (source.kind === 'FUNDING') throw invalidField('source.sourceType', `quote ${quote.id} is REALTIME_FUNDING: it executes when its money arrives (POST /sandbox/send)`);
  const total = quote.price.totalSendingAmount;
  if (source.kind === 'INTERNAL' && source.account.balance < total) {
    const balance = source.account.balance;
    throw new DomainError('INSUFFICIENT_BALANCE', `the source account holds ${balance} ${source.account.currency}; the quote needs ${total}`, [
      { field: 'source.accountId', message: 'insufficient balance', balance, required: total },
    ]);
  }
  return source;
}

/** What every way of executing a quote shares: its outgoing transaction, the quote as executed, its fees. */
interface Execution {
  readonly outgoing: Transaction;
  readonly fees: LedgerDelta;
  /** The quote's new status (and its transaction, and which of its transactions it derives) as the payment step records it. */
  change(status: QuoteStatus, transactionsDerived?: number): QuoteChange;
}

function executionOf(quote: Quote, parties: QuoteParties & { source: ExecutingSource }, txId: string, at: number): Execution {
  const { source, sourceCustomer } = parties;
  const own: { -readonly [K in keyof OwnFields]: OwnFields[K] } = {
    id: txId,
    envId: quote.envId,
    type: 'OUTGOING',
    status: 'PENDING',
    accountId: source.account.id,
    customerId: quote.sourceCustomerId,
    platformCustomerId: sourceCustomer?.platformCustomerId ?? '',
    source: { sourceType: 'ACCOUNT', accountId: source.account.id },
    reference: paymentReference(txId),
    createdAt: at,
    updatedAt: at,
  };
  if (quote.counterpartyInformation !== undefined) own.counterpartyInformation = quote.counterpartyInformation;
  const outgoing = quotedTransaction(own, quote);
  return {
    outgoing,
    fees: ledgerDelta(quote.envId, quote.price.sendingCurrency, 0, quote.price.feesIncluded),
    change: (status, transactionsDerived) => (transactionsDerived === undefined ? { id: quote.id, status, transactionId: txId } : { id: quote.id, status, transactionId: txId, transactionsDerived }),
  };
}

/** The payout's outcome timer, when it plays out later: keyed by the transaction id, held by the quote's owner. */
function timerOf(quote: Quote, txId: string, pending: PendingOutcome | undefined): ExecuteDecision<PaymentDecided>['timer'] {
  return pending === undefined ? undefined : payoutTimer(txId, pending.due, quote.ownerId);
}

/**
 * Into an internal account: completes at once, the receiver (when another party) with an
 * INCOMING transaction of its own. Its webhook events are one DerivedStep, made here where
 * the payment is derived rather than listed one by one and gathered again by the outbox:
 * the ids paymentIdsFrom would give them are the bytes after the transaction's, the
 * outgoing event 01, the receiver's transaction 02 and its event 03, then an ACCOUNT_STATUS
 * event for each account whose balance a posting changes (withAccountStatus's rule), in
 * the postings' order.
 */
function payInternally(
  quote: Quote,
  source: ExecutingSource,
  payee: Extract<QuoteParties['payee'], { kind: 'INTERNAL' }>,
  execution: Execution,
  platformIds: PlatformCustomerIds,
  env: PlatformEnv,
  at: number,
): PaymentRecorded {
  const p = quote.price;
  const target = payee.account;
  const converted = isConverted(quote);
  const out = withStatus(execution.outgoing, 'COMPLETED', at);
  let transactions = [out];
  let gaps = 0;
  // Another party receives it: the receiver sees an INCOMING transaction of its own.
  if (target.customerId !== '' && target.customerId !== quote.sourceCustomerId) {
    // Its counterparty is the sender (when the quote names one), not the receiver.
    const sender = quote.senderCustomerInfo;
    transactions = [out, receivedSide(out, paymentIdAt(out.id, 'Transaction', 2), target, payee.customer?.platformCustomerId ?? '', sender)];
    // The byte 02 (the second after the first event's 01) is the receiver's transaction's.
    gaps = 1 << 1;
  }
  const postings =
    source.kind === 'PULL'
      ? [posting(target.id, p.totalReceivingAmount, p.totalReceivingAmount, 0)]
      : [posting(source.account.id, -p.totalSendingAmount, 0, converted ? p.principal : 0), posting(target.id, p.totalReceivingAmount, converted ? p.totalReceivingAmount : 0, 0)];
  const accountIds = balanceChangedIds(postings);
  const quoteChange = execution.change('COMPLETED', transactionsDerivedFrom(quote, transactions, platformIds));
  const webhookStep = out.id === executionTransactionIdOf(quote.id) ? derivedStepFacts(quote, source, target, postings, accountIds, transactions.length === 2, env, at) : undefined;
  if (webhookStep !== undefined) quoteChange.webhookStep = webhookStep;
  return {
    type: 'payment.recorded',
    quoteChange,
    // Derived when the entry applies, never logged: the records themselves, not their logged form.
    transactions,
    postings,
    ledger: nonZero([source.kind === 'PULL' ? ledgerDelta(quote.envId, p.sendingCurrency, 0, p.feesIncluded, p.totalSendingAmount, p.principal) : execution.fees]),
    webhooks: [],
    step: { stem: paymentStemOf(out.id, 'Webhook'), first: 1, gaps, transactions, accountIds },
  };
}

/**
 * What the quote keeps of its immediate execution's webhook step so that the step needs no
 * record (Quote.webhookStep; the outbox checks it against the step it would store). Only
 * for a quote and payment that share one UUID (the caller checks) and one time, in an
 * environment that makes FLAT events, whose step's ACCOUNT_STATUS events report the source
 * account, then the payee's: two accounts of the quote's environment without a privacy
 * setting. Undefined: the step is stored, as any other.
 */
function derivedStepFacts(
  quote: Quote,
  source: ExecutingSource,
  target: InternalAccount,
  postings: readonly Posting[],
  accountIds: readonly string[],
  receiver: boolean,
  env: PlatformEnv,
  at: number,
): DerivedStepFacts | undefined {
  // The step's time is read from the quote's id (derivedStepOf).
  if (at !== quote.createdAt || at !== idTimeOf(quote.id) || env.config.webhookFormat === 'ENVELOPE' || source.kind !== 'INTERNAL') return undefined;
  const from = source.account;
  const [paid, credited] = postings;
  if (postings.length !== 2 || paid!.accountId !== from.id || credited!.accountId !== target.id || accountIds.length !== 2 || accountIds[0] !== from.id || accountIds[1] !== target.id) return undefined;
  if (from.id !== quote.sourceAccountId || target.id !== quote.payeeAccountId || from.id === target.id) return undefined;
  if (from.envId !== quote.envId || target.envId !== quote.envId || from.privateEnabled !== undefined || target.privateEnabled !== undefined) return undefined;
  return [receiver ? 1 : 0, from.balance + paid!.balance, from.inflow + paid!.inflow, from.outflow + paid!.outflow, target.balance + credited!.balance, target.inflow + credited!.inflow, target.outflow + credited!.outflow];
}

/**
 * Which of an internal payment's transactions its quote derives (Quote.transactionsDerived):
 * when the quote was executed as it was made (they share one UUID), those exactly as
 * derivedTransaction gives them back. Undefined: none, as for any other execution.
 */
function transactionsDerivedFrom(quote: Quote, transactions: readonly Transaction[], platformIds: PlatformCustomerIds): number | undefined {
  const outgoing = transactions[0]!;
  if (outgoing.id !== executionTransactionIdOf(quote.id)) return undefined;
  // What the outgoing transaction's reference must be (executionOf makes it from its id), and the receiver's with it.
  const reference = paymentReference(outgoing.id);
  let derived = 0;
  for (const tx of transactions) if (derivesFromQuote(tx, quote, outgoing.id, reference, platformIds)) derived |= tx === outgoing ? TRANSACTION_DERIVED.outgoing : TRANSACTION_DERIVED.received;
  return derived === 0 ? undefined : derived;
}

/** Out of the service (a bank payout or a test UMA address): only from an internal account (decideCreateQuote refuses a pull to anywhere else). */
function payOut(quote: Quote, sourceId: string, plan: PayoutPlan, execution: Execution, nextId: (kind: 'Webhook') => string, at: number): PaymentRecorded {
  const p = quote.price;
  if (plan.atExecute === 'FAIL') {
    const failed = withStatus(execution.outgoing, 'FAILED', at, { failureReason: plan.failureReason ?? 'QUOTE_EXECUTION_FAILED' });
    return paymentStep(execution.change('FAILED'), failed, [], [], nextId('Webhook'));
  }
  if (plan.atExecute === 'COMPLETE') {
    const done = withStatus(execution.outgoing, 'COMPLETED', at, pendingChange(plan, at));
    return paymentStep(execution.change('COMPLETED'), done, [posting(sourceId, -p.totalSendingAmount, 0, p.principal)], nonZero([execution.fees]), nextId('Webhook'));
  }
  const inFlight = withStatus(execution.outgoing, 'PROCESSING', at, pendingChange(plan, at));
  return paymentStep(execution.change('PROCESSING'), inFlight, [posting(sourceId, -p.totalSendingAmount, 0, 0)], nonZero([ledgerDelta(quote.envId, p.sendingCurrency, p.principal, p.feesIncluded)]), nextId('Webhook'));
}

/** The transaction's pending outcome under `plan`, as a change to it (none when nothing plays out later). */
function pendingChange(plan: PayoutPlan, at: number): Partial<Transaction> {
  const pending = pendingOf(plan, at);
  return pending !== undefined ? { pending } : {};
}

/** Money sent from outside for a REALTIME_FUNDING quote (POST /sandbox/send). */
export interface FundingReceived {
  readonly currency: string;
  /** Omitted: the quote's total. */
  readonly amount?: number;
}

/**
 * The money of a PENDING REALTIME_FUNDING quote arrives: it enters the service (inflow)
 * and is paid to the quote's internal destination in the same entry, which makes one
 * INCOMING transaction for the credited account. Ledger: destination +R (inflow +R);
 * fees +F, and T in with its principal P converted out (ledger inflow +T, outflow +P), as
 * for a direct pull. The caller holds the quote's owner, the destination account and
 * its customer.
 */
export function decideFundQuote(quote: Quote, parties: QuoteParties, sent: FundingReceived, intake: Intake, at: number): QuoteFundingDecided {
  if (quote.fundingReference === undefined) throw invalidField('quoteId', `quote ${quote.id} is not a REALTIME_FUNDING quote: execute it instead`);
  if (quote.status === 'EXPIRED' || (quote.status === 'PENDING' && at >= quote.expiresAt)) {
    throw new DomainError('QUOTE_EXPIRED', `quote ${quote.id} expired at ${isoTime(quote.expiresAt)}`);
  }
  if (quote.status !== 'PENDING') throw new DomainError('QUOTE_ALREADY_EXECUTED', `quote ${quote.id} was funded already (it is ${quote.status})`);
  assertPartiesActive(parties);
  const p = quote.price;
  if (sent.currency !== p.sendingCurrency) throw invalidField('currencyCode', `quote ${quote.id} is funded in ${p.sendingCurrency}, not ${sent.currency}`);
  if (sent.amount !== undefined && sent.amount !== p.totalSendingAmount) {
    throw invalidField('currencyAmount', `quote ${quote.id} needs exactly ${p.totalSendingAmount} ${p.sendingCurrency}, not ${sent.amount}`);
  }
  const payee = parties.payee;
  if (payee.kind !== 'INTERNAL') throw new Error(`funding quote ${quote.id} pays ${payee.kind}`);
  assertIntakeRoom(
    intake,
    quote.envId,
    [
      { currency: p.sendingCurrency, amount: p.totalSendingAmount },
      { currency: p.receivingCurrency, amount: p.totalReceivingAmount },
    ],
    'currencyAmount',
  );
  return { type: 'quoteFunding.decided', quoteId: loggedId(quote.id, 'Quote'), transactionId: loggedId(newPaymentTransactionId(at), 'Transaction') };
}

/** The state a funded quote's records are derived from when its `quoteFunding.decided` applies. */
export interface QuoteFundingState {
  readonly quotes: { get(id: string): Quote | undefined };
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
  readonly customers: { get(id: string): Customer | undefined };
}

/**
 * What `quoteFunding.decided` changes: the quote COMPLETED, one INCOMING transaction for
 * the credited account, its posting and the ledger's totals, and the INCOMING_PAYMENT and
 * ACCOUNT_STATUS events, their ids derived from the transaction's; all from the quote and
 * its destination as the state holds them where the entry applies.
 */
export function quoteFundingRecorded(event: QuoteFundingDecided, state: QuoteFundingState, at: number): PaymentRecorded {
  const quoteId = idOf(event.quoteId, 'Quote');
  const quote = state.quotes.get(quoteId);
  const target = quote?.payeeAccountId === undefined ? undefined : state.internalAccounts.get(quote.payeeAccountId);
  if (quote === undefined || target === undefined) throw new Error(`quoteFunding.decided for quote ${quoteId}, which does not exist or pays no internal account`);
  const p = quote.price;
  const txId = idOf(event.transactionId, 'Transaction');
  const own: { -readonly [K in keyof OwnFields]: OwnFields[K] } = {
    id: txId,
    envId: quote.envId,
    type: 'INCOMING',
    status: 'COMPLETED',
    accountId: target.id,
    customerId: target.customerId,
    platformCustomerId: target.customerId === '' ? '' : (state.customers.get(target.customerId)?.platformCustomerId ?? ''),
    source: { sourceType: 'REALTIME_FUNDING', currency: p.sendingCurrency },
    reference: quote.fundingReference!,
    settledAt: at,
    createdAt: at,
    updatedAt: at,
  };
  if (quote.senderCustomerInfo !== undefined) own.counterpartyInformation = quote.senderCustomerInfo;
  const incoming = quotedTransaction(own, quote);
  const nextId = paymentIdsFrom(txId);
  const step = paymentStep(
    { id: quote.id, status: 'COMPLETED', transactionId: txId },
    incoming,
    [posting(target.id, p.totalReceivingAmount, p.totalReceivingAmount, 0)],
    nonZero([ledgerDelta(quote.envId, p.sendingCurrency, 0, p.feesIncluded, p.totalSendingAmount, p.principal)]),
    nextId('Webhook'),
  );
  return withAccountStatus([step], [target], () => nextId('Webhook'))[0]!;
}

/**
 * Simulated funding of an internal account (POST /sandbox/internal-accounts/{id}/fund):
 * checks the intake and decides the transaction's id, the facts of its `funding.decided`.
 * What it makes is derived when the event applies (fundingRecorded). The caller holds the
 * account and its customer.
 */
export function decideSandboxFund(account: InternalAccount, amount: number, intake: Intake, at: number): FundingDecided[] {
  assertIntakeRoom(intake, account.envId, [{ currency: account.currency, amount }], 'amount');
  return [{ type: 'funding.decided', transactionId: loggedId(newPaymentTransactionId(at), 'Transaction'), internalAccount: loggedId(account.id, 'InternalAccount'), amount }];
}

/** The state a sandbox funding's records are derived from when its `funding.decided` applies. */
export interface FundingState {
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
  readonly customers: { get(id: string): Customer | undefined };
}

/**
 * What `funding.decided` changes: the money enters the service through the account
 * (inflow), reported like any arriving money by a COMPLETED INCOMING transaction whose
 * source is `SANDBOX_FUNDING` (no account, quote or sender is behind it), with its
 * INCOMING_PAYMENT event and then the account's ACCOUNT_STATUS, their ids derived from the
 * transaction's. `platformCustomerId` is the owning customer's ('' for the platform).
 */
export function fundingRecorded(event: FundingDecided, state: FundingState, at: number): PaymentRecorded {
  const accountId = idOf(event.internalAccount, 'InternalAccount');
  const account = state.internalAccounts.get(accountId);
  if (account === undefined) throw new Error(`funding.decided for ${accountId}, which does not exist`);
  const id = idOf(event.transactionId, 'Transaction');
  const { amount } = event;
  const incoming: Transaction = {
    id,
    envId: account.envId,
    type: 'INCOMING',
    status: 'COMPLETED',
    accountId: account.id,
    customerId: account.customerId,
    platformCustomerId: account.customerId === '' ? '' : (state.customers.get(account.customerId)?.platformCustomerId ?? ''),
    source: { sourceType: 'SANDBOX_FUNDING' },
    destination: { destinationType: 'ACCOUNT', accountId: account.id },
    ...unquotedAmounts(id, account.currency, amount),
    settledAt: at,
    createdAt: at,
    updatedAt: at,
  };
  const nextId = paymentIdsFrom(id);
  const step = paymentStep(undefined, incoming, [posting(account.id, amount, amount, 0)], [], nextId('Webhook'));
  return withAccountStatus([step], [account], () => nextId('Webhook'))[0]!;
}

/**
 * The outcome timer of an external payout or a transfer: decides that the transaction's
 * pending outcome plays out now (`outcome.decided`: the transaction and the id its webhook
 * events derive theirs from), or nothing when it has played out already. `quote` is the
 * quote that made the transaction; a transfer has none.
 */
export function decidePayoutOutcome(tx: Transaction | undefined, quote: Quote | undefined, at: number): OutcomeDecided[] {
  if (tx === undefined || tx.pending === undefined || (quote === undefined && tx.quoteId !== '')) return [];
  return [{ type: 'outcome.decided', transactionId: loggedId(tx.id, 'Transaction'), webhookId: loggedId(newDerivingId('Webhook', at), 'Webhook') }];
}

/** The state an outcome's records are derived from when its `outcome.decided` applies. */
export interface OutcomeState {
  readonly transactions: { get(id: string): Transaction | undefined };
  readonly quotes: { get(id: string): Quote | undefined };
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
}

/**
 * The transaction whose pending outcome `event` plays out or cancels, its quote, and the
 * webhook ids the step takes from the logged one.
 */
function pendingOutcome(event: OutcomeDecided | CancelDecided, state: OutcomeState): { tx: Transaction; pending: NonNullable<Transaction['pending']>; quote: Quote | undefined; nextId: () => string } {
  const id = idOf(event.transactionId, 'Transaction');
  const tx = state.transactions.get(id);
  if (tx?.pending === undefined) throw new Error(`${event.type} for transaction ${id}, which has no pending outcome`);
  const quote = tx.quoteId === '' ? undefined : state.quotes.get(tx.quoteId);
  return { tx, pending: tx.pending, quote, nextId: idsStartingAt(idOf(event.webhookId, 'Webhook'), 'Webhook') };
}

/**
 * What `outcome.decided` changes: the steps of the transaction's pending outcome (one, or
 * a failure and its refund), with the ACCOUNT_STATUS of a balance they change, derived
 * from the transaction and its quote as the state holds them where the entry applies.
 */
export function outcomeRecorded(event: OutcomeDecided, state: OutcomeState, at: number): PaymentRecorded[] {
  const { tx, pending, quote, nextId } = pendingOutcome(event, state);
  return withAccountStatus(outcomeSteps(tx, pending, quote, at, nextId), [state.internalAccounts.get(tx.accountId)], nextId);
}

/** The steps of `tx`'s pending outcome; `nextId` gives their webhook events' ids. */
function outcomeSteps(tx: Transaction, pending: PendingOutcome, quote: Quote | undefined, at: number, nextId: () => string): PaymentRecorded[] {
  const { outcome, failureReason } = pending;
  const P = tx.principal;
  const F = tx.feesIncluded;
  const T = tx.sentAmount;
  const currency = tx.sendingCurrency;
  const reason: Partial<Transaction> = failureReason !== undefined ? { failureReason } : {};
  const quoteIs = (status: QuoteStatus): QuoteChange | undefined => (quote === undefined ? undefined : changeOf(quote, status));
  const step = (q: QuoteChange | undefined, next: Transaction, postings: Posting[], ledger: LedgerDelta[]): PaymentRecorded => paymentStep(q, next, postings, ledger, nextId());
  switch (outcome) {
    case 'SETTLE':
      return [step(quoteIs('COMPLETED'), withStatus(tx, 'COMPLETED', at), [posting(tx.accountId, 0, 0, P)], [ledgerDelta(tx.envId, currency, -P, 0)])];
    case 'FAIL_LOST':
      return [step(quoteIs('FAILED'), withStatus(tx, 'FAILED', at, reason), [posting(tx.accountId, 0, 0, P)], [ledgerDelta(tx.envId, currency, -P, 0)])];
    case 'FAIL_REFUND':
    case 'REJECT_REFUND': {
      const failed = withStatus(tx, outcome === 'REJECT_REFUND' ? 'REJECTED' : 'FAILED', at, reason);
      const refund = inFlightRefund(tx);
      return [step(quoteIs('FAILED'), failed, [], []), step(undefined, withStatus(failed, 'REFUNDED', at), refund.postings, refund.ledger)];
    }
    case 'PULL_REJECTED':
      return [step(quoteIs('FAILED'), withStatus(tx, 'REJECTED', at, reason), [], [])];
    case 'PULL_FAILED':
      return [step(quoteIs('FAILED'), withStatus(tx, 'FAILED', at, reason), [], [])];
    case 'RETURN_REFUND': {
      const failed = withStatus(tx, 'FAILED', at, reason);
      return [
        step(quoteIs('FAILED'), failed, [], []),
        // The payout's outflow +P is cancelled, not matched by new inflow: the money comes back,
        // nothing new enters, so a return never adds to the intake (and never needs room).
        step(undefined, withStatus(failed, 'REFUNDED', at), [posting(tx.accountId, T, 0, -P)], nonZero([ledgerDelta(tx.envId, currency, 0, -F)])),
      ];
    }
  }
}

/**
 * The money of a payout or transfer-out still in flight going back to its source: the
 * whole amount sent, fees included, leaves in transit and the fee ledger for the source's
 * balance (in transit -P, fees -F, source +T).
 */
function inFlightRefund(tx: Transaction): { postings: Posting[]; ledger: LedgerDelta[] } {
  return { postings: [posting(tx.accountId, tx.sentAmount, 0, 0)], ledger: nonZero([ledgerDelta(tx.envId, tx.sendingCurrency, -tx.principal, -tx.feesIncluded)]) };
}

/** The pending outcomes of money sent out to a bank and not yet settled: a cancel stops them (not a pull's, nor a return's). */
const CANCELLABLE_OUTCOMES: ReadonlySet<PayoutOutcome> = new Set<PayoutOutcome>(['SETTLE', 'FAIL_REFUND', 'REJECT_REFUND', 'FAIL_LOST']);

/**
 * Why `tx` cannot be cancelled at `at`, or undefined when it can: only an outgoing payout
 * (or transfer-out) to a bank account (`destination`, the external account it pays; not a
 * Spark wallet, an UMA address or an internal account), still PENDING or PROCESSING with
 * its outcome not yet due. An outcome due but not yet played out (its timer late) has
 * happened at the bank already.
 */
function whyNotCancellable(tx: Transaction, destination: ExternalAccount | undefined, at: number): string | undefined {
  if (tx.type !== 'OUTGOING' || destination === undefined) return 'only a payout to a bank account can be cancelled';
  if (destination.accountInfo.accountType === 'SPARK_WALLET') return 'a payout to a Spark wallet is not a bank transfer';
  const pending = tx.pending;
  if ((tx.status !== 'PENDING' && tx.status !== 'PROCESSING') || pending === undefined || !CANCELLABLE_OUTCOMES.has(pending.outcome)) return `it is ${tx.status}, past the point of cancelling`;
  if (at >= pending.due) return `its outcome was due at ${isoTime(pending.due)}`;
  return undefined;
}

/**
 * POST /transactions/{id}/cancel: decides that a bank payout still in flight fails as
 * CANCELLED and is refunded (`cancel.decided`, played by cancelRecorded), else 409
 * TRANSACTION_NOT_CANCELLABLE. `destination` is the external account the transaction pays,
 * if it pays one. The caller cancels the outcome timer in the same entry.
 */
export function decideCancelPayout(tx: Transaction, destination: ExternalAccount | undefined, at: number): CancelDecided[] {
  const why = whyNotCancellable(tx, destination, at);
  if (why !== undefined) throw new DomainError('TRANSACTION_NOT_CANCELLABLE', `transaction ${tx.id} cannot be cancelled: ${why}`);
  return [{ type: 'cancel.decided', transactionId: loggedId(tx.id, 'Transaction'), webhookId: loggedId(newDerivingId('Webhook', at), 'Webhook') }];
}

/**
 * What `cancel.decided` changes: one step, the transaction FAILED with `CANCELLED` (its
 * quote FAILED) and its money back with its fees as a failed payout's refund moves it,
 * with the OUTGOING_PAYMENT and ACCOUNT_STATUS events; derived from the transaction and
 * its quote as the state holds them where the entry applies.
 */
export function cancelRecorded(event: CancelDecided, state: OutcomeState, at: number): PaymentRecorded[] {
  const { tx, quote, nextId } = pendingOutcome(event, state);
  const refund = inFlightRefund(tx);
  const failed = withStatus(tx, 'FAILED', at, { failureReason: 'CANCELLED' });
  const step = paymentStep(quote === undefined ? undefined : changeOf(quote, 'FAILED'), failed, refund.postings, refund.ledger, nextId());
  return withAccountStatus([step], [state.internalAccounts.get(tx.accountId)], nextId);
}

/**
 * One step of a payment's transaction (and its quote, if any), with the webhook event that
 * reports it. Every step is derived when a decided event applies, never logged: it carries
 * the transaction itself, and its webhook's id comes from the logged ones.
 */
export function paymentStep(quoteChange: QuoteChange | undefined, tx: Transaction, postings: Posting[], ledger: LedgerDelta[], webhookId: string): PaymentRecorded {
  const webhook = transactionWebhook(tx, tx.type === 'INCOMING' ? 'INCOMING_PAYMENT' : 'OUTGOING_PAYMENT', webhookId);
  const event: PaymentRecorded = { type: 'payment.recorded', transactions: [tx], postings, ledger, webhooks: [webhook] };
  if (quoteChange !== undefined) event.quoteChange = quoteChange;
  return event;
}

/**
 * A quote's new status in a later payment step, with the transaction it made: every step
 * changes only those, and `updatedAt` to the entry's time.
 */
function changeOf(quote: Quote, status: QuoteStatus): QuoteChange {
  return quote.transactionId === undefined ? { id: quote.id, status } : { id: quote.id, status, transactionId: quote.transactionId };
}


function posting(accountId: string, balance: number, inflow: number, outflow: number): Posting {
  return { accountId, balance, inflow, outflow };
}

function ledgerDelta(envId: string, currency: string, inTransit: number, fees: number, inflow = 0, outflow = 0): LedgerDelta {
  return { envId, currency, inTransit, fees, inflow, outflow };
}

function nonZero(deltas: LedgerDelta[]): LedgerDelta[] {
  return deltas.filter((d) => d.inTransit !== 0 || d.fees !== 0 || d.inflow !== 0 || d.outflow !== 0);
}

function pendingOf(plan: PayoutPlan, at: number): PendingOutcome | undefined {
  const later = plan.later;
  if (later === undefined) return undefined;
  return { outcome: later.outcome, due: at + later.afterMs, ...(later.failureReason !== undefined ? { failureReason: later.failureReason } : {}) };
}

