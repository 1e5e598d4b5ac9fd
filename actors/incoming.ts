// Incoming UMA payments (CONTRACT.md "Webhooks", SERVICE_SPEC parts 3 and 4): a payment
// from a sandbox UMA address to a customer is recorded as an INCOMING transaction PENDING,
// with an INCOMING_PAYMENT webhook event that asks the platform to approve it. The
// answer to that one delivery decides (src/webhooks/delivery.ts): 200 approves, 403
// rejects, 202 leaves five seconds (a durable timer) for POST /transactions/{id}/approve or
// /reject, anything else or no answer fails it. An approved payment is paid out to the
// customer's default UMA deposit account of the currency, or else credited to its internal
// account of the currency, and reported COMPLETED by a second INCOMING_PAYMENT. The
// transaction belongs to that internal account; its actor decides each step.
import { idOf, loggedId } from '../src/engine/ids.js';
import { setTimer, type EngineEvent } from '../src/engine/state-machine.js';
import { DomainError } from './errors.js';
import type { Customer } from './customer.js';
import type { ExternalAccount } from './external-account.js';
import type { InternalAccount } from './internal-account.js';
import type { PlatformEnv } from './platform.js';
import { assertIntakeRoom, type Intake } from './ledger.js';
import type { ApprovalDecided, IncomingDecided, PaymentRecorded } from './payment-recorded.js';
import { idsStartingAt, newDerivingId, newPaymentTransactionId, paymentIdsFrom } from './derived-ids.js';
import { unquotedAmounts, withStatus, type FailureReason, type Transaction } from './transaction.js';
import { transactionWebhook, withAccountStatus } from './webhook-event.js';

/** How long the platform has to approve or reject after answering 202. */
export const APPROVAL_WINDOW_MS = 5_000;

/**
 * The timer that fails an incoming payment the platform did not decide in time. Its key
 * names the transaction (approvalTimerKey), and the engine hands `onTimer` the key, so the
 * message does not repeat it. (Timers set before issue 38 also carry it as `transactionId`:
 * every approval timer was keyed so.)
 */
export type ApprovalTimer = { type: 'incoming.approval-timeout' };

const APPROVAL_TIMER_PREFIX = 'approval:';

/** The key of a transaction's approval timer (approve and reject cancel it). */
export function approvalTimerKey(transactionId: string): string {
  return `${APPROVAL_TIMER_PREFIX}${transactionId}`;
}

/** The transaction an approval timer's key names. */
export function approvalTimerTransaction(key: string): string {
  if (!key.startsWith(APPROVAL_TIMER_PREFIX)) throw new Error(`approval timer ${key} is not keyed by its transaction`);
  return key.slice(APPROVAL_TIMER_PREFIX.length);
}

export interface IncomingInput {
  senderUmaAddress: string;
  receivingCurrencyCode: string;
  receivingCurrencyAmount: number;
}

export type IncomingOutcome = { kind: 'APPROVE' } | { kind: 'REJECT' } | { kind: 'FAIL'; reason: FailureReason };

/** What the platform's answer to the approval webhook means; AWAIT: it will call approve or reject. */
export type ApprovalAnswer = IncomingOutcome | { kind: 'AWAIT' };

function approvalAnswer(statusCode: number): ApprovalAnswer {
  switch (statusCode) {
    case 200:
      return { kind: 'APPROVE' };
    case 403:
      return { kind: 'REJECT' };
    case 202:
      return { kind: 'AWAIT' };
    default:
      return { kind: 'FAIL', reason: 'PAYMENT_APPROVAL_WEBHOOK_ERROR' };
  }
}

/**
 * What the answer to a pending payment's approval webhook decides, in the entry that logs
 * the answer: approve, reject or fail it, or (202) give the platform APPROVAL_WINDOW_MS to
 * call approve or reject, after which its timer fails it. A payment settled meanwhile
 * (approve raced the answer) is left as it is.
 */
export function decideApprovalAnswer(
  tx: Transaction | undefined,
  account: InternalAccount | undefined,
  statusCode: number,
  at: number,
): Array<ApprovalDecided | EngineEvent<ApprovalTimer>> {
  if (tx === undefined || account === undefined || tx.status !== 'PENDING') return [];
  const answer = approvalAnswer(statusCode);
  if (answer.kind !== 'AWAIT') return decideSettleIncoming(tx, account, answer, at);
  const message: ApprovalTimer = { type: 'incoming.approval-timeout' };
  return [setTimer(at + APPROVAL_WINDOW_MS, [tx.accountId], message, at, approvalTimerKey(tx.id))];
}

/**
 * Records the incoming payment PENDING with its approval webhook; when the environment
 * has no webhook endpoint there is nobody to ask, and it is approved in the same entry.
 * Its amount counts in the environment's intake from now on (reserved while it awaits
 * approval, see Intake), so it is checked here, and approving it later, however much
 * money arrived meanwhile, cannot pass the bound: money that would have is refused instead.
 * The decision is its facts (`incoming.decided`); the records are derived when it applies
 * (incomingRecorded).
 */
export function decideReceive(
  input: IncomingInput,
  env: PlatformEnv,
  account: InternalAccount,
  deposit: ExternalAccount | undefined,
  intake: Intake,
  at: number,
): Array<IncomingDecided | ApprovalDecided> {
  const amount = input.receivingCurrencyAmount;
  assertIntakeRoom(intake, account.envId, [{ currency: account.currency, amount }], 'receivingCurrencyAmount');
  const id = newPaymentTransactionId(at);
  const decided: IncomingDecided = {
    type: 'incoming.decided',
    transactionId: loggedId(id, 'Transaction'),
    internalAccount: loggedId(account.id, 'InternalAccount'),
    senderUmaAddress: input.senderUmaAddress,
    amount,
  };
  // Paid out to the customer's default UMA deposit account of the currency, if any, else kept in its internal account.
  if (deposit !== undefined && deposit.currency === account.currency) decided.depositAccount = loggedId(deposit.id, 'ExternalAccount');
  const approveNow = env.config.webhookEndpoint === '';
  return approveNow ? [decided, approvalDecided(id, { kind: 'APPROVE' }, at)] : [decided];
}

/** The state an incoming payment's records are derived from when its events apply. */
export interface IncomingState {
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
  readonly customers: { get(id: string): Customer | undefined };
  readonly transactions: { get(id: string): Transaction | undefined };
}

/** What `incoming.decided` records: the INCOMING transaction PENDING and its approval webhook (its id derived from the transaction's). */
export function incomingRecorded(event: IncomingDecided, state: IncomingState, at: number): PaymentRecorded {
  const accountId = idOf(event.internalAccount, 'InternalAccount');
  const account = state.internalAccounts.get(accountId);
  if (account === undefined) throw new Error(`incoming.decided for ${accountId}, which does not exist`);
  const id = idOf(event.transactionId, 'Transaction');
  const tx: Transaction = {
    id,
    envId: account.envId,
    type: 'INCOMING',
    status: 'PENDING',
    accountId: account.id,
    customerId: account.customerId,
    platformCustomerId: state.customers.get(account.customerId)?.platformCustomerId ?? '',
    source: { sourceType: 'UMA_ADDRESS', umaAddress: event.senderUmaAddress },
    destination: { destinationType: 'ACCOUNT', accountId: event.depositAccount === undefined ? account.id : idOf(event.depositAccount, 'ExternalAccount') },
    ...unquotedAmounts(id, account.currency, event.amount),
    createdAt: at,
    updatedAt: at,
  };
  const webhookId = paymentIdsFrom(id)('Webhook');
  return { type: 'payment.recorded', transactions: [tx], postings: [], ledger: [], webhooks: [transactionWebhook(tx, 'INCOMING_PAYMENT', webhookId, true)] };
}

/**
 * Approves, rejects or fails a PENDING incoming payment; anything else is 409
 * TRANSACTION_NOT_PENDING. `account` is the internal account of the transaction (undefined
 * when its accountId names none, which only a transaction of another kind does).
 */
export function decideSettleIncoming(tx: Transaction, account: InternalAccount | undefined, outcome: IncomingOutcome, at: number): ApprovalDecided[] {
  if (tx.type !== 'INCOMING' || tx.status !== 'PENDING') {
    throw new DomainError('TRANSACTION_NOT_PENDING', `transaction ${tx.id} is not a pending incoming payment (it is ${tx.type} ${tx.status})`);
  }
  if (account === undefined) throw new Error(`incoming payment ${tx.id} names ${tx.accountId}, which is no internal account`);
  return [approvalDecided(tx.id, outcome, at)];
}

function approvalDecided(transactionId: string, outcome: IncomingOutcome, at: number): ApprovalDecided {
  const event: ApprovalDecided = {
    type: 'approval.decided',
    transactionId: loggedId(transactionId, 'Transaction'),
    outcome: outcome.kind,
    webhookId: loggedId(newDerivingId('Webhook', at), 'Webhook'),
  };
  if (outcome.kind === 'FAIL') event.failureReason = outcome.reason;
  return event;
}

/**
 * What `approval.decided` changes: the payment COMPLETED (its money in, and paid out to
 * the deposit account it names, if any), REJECTED or FAILED, with its INCOMING_PAYMENT and
 * the ACCOUNT_STATUS of a balance it changes, their ids from the event's first.
 */
export function approvalRecorded(event: ApprovalDecided, state: IncomingState, at: number): PaymentRecorded[] {
  const id = idOf(event.transactionId, 'Transaction');
  const tx = state.transactions.get(id);
  const account = tx === undefined ? undefined : state.internalAccounts.get(tx.accountId);
  if (tx === undefined || account === undefined) throw new Error(`approval.decided for ${id}, which is no incoming payment`);
  const nextId = idsStartingAt(idOf(event.webhookId, 'Webhook'), 'Webhook');
  switch (event.outcome) {
    case 'APPROVE': {
      const done = withStatus(tx, 'COMPLETED', at);
      const amount = tx.receivedAmount;
      // Paid out to the default UMA deposit account, the money passes through the internal
      // account (in and out, balance unchanged) and leaves the service at once.
      const paidOut = tx.destination.destinationType === 'ACCOUNT' && tx.destination.accountId !== account.id;
      const approved: PaymentRecorded = {
        type: 'payment.recorded',
        transactions: [done],
        postings: [{ accountId: account.id, balance: paidOut ? 0 : amount, inflow: amount, outflow: paidOut ? amount : 0 }],
        ledger: [],
        webhooks: [transactionWebhook(done, 'INCOMING_PAYMENT', nextId())],
      };
      return withAccountStatus([approved], [account], nextId);
    }
    case 'REJECT':
      return [settled(withStatus(tx, 'REJECTED', at), at, nextId())];
    case 'FAIL':
      return [settled(withStatus(tx, 'FAILED', at, event.failureReason === undefined ? {} : { failureReason: event.failureReason }), at, nextId())];
  }
}

function settled(tx: Transaction, at: number, webhookId: string): PaymentRecorded {
  return { type: 'payment.recorded', transactions: [tx], postings: [], ledger: [], webhooks: [transactionWebhook(tx, 'INCOMING_PAYMENT', webhookId)] };
}
