// Incoming UMA payments (CONTRACT.md "Webhooks", SERVICE_SPEC parts 3 and 4): a payment
// from a sandbox UMA address to a customer is recorded as an INCOMING transaction PENDING,
// with an INCOMING_PAYMENT webhook event that asks the platform to approve it. The
// answer to that one delivery decides (src/webhooks/delivery.ts): 200 approves, 403
// rejects, 202 leaves five seconds (a durable timer) for POST /transactions/{id}/approve or
// /reject, anything else or no answer fails it. An approved payment is paid out to the
// customer's default UMA deposit account of the currency, or else credited to its internal
// account of the currency, and reported COMPLETED by a second INCOMING_PAYMENT. The
// transaction belongs to that internal account; its actor decides each step.
import { newId } from '../src/engine/ids.js';
import { setTimer, type EngineEvent } from '../src/engine/state-machine.js';
import { DomainError } from './errors.js';
import type { Customer } from './customer.js';
import type { ExternalAccount } from './external-account.js';
import type { InternalAccount } from './internal-account.js';
import type { PlatformEnv } from './platform.js';
import { assertIntakeRoom, type Intake } from './ledger.js';
import type { PaymentRecorded } from './payment-recorded.js';
import { unquotedAmounts, withStatus, type FailureReason, type Transaction } from './transaction.js';
import { transactionWebhook, withAccountStatus } from './webhook-event.js';

/** How long the platform has to approve or reject after answering 202. */
export const APPROVAL_WINDOW_MS = 5_000;

export type ApprovalTimer = { type: 'incoming.approval-timeout'; transactionId: string };

/** The key of a transaction's approval timer (approve and reject cancel it). */
export function approvalTimerKey(transactionId: string): string {
  return `approval:${transactionId}`;
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
): Array<PaymentRecorded | EngineEvent<ApprovalTimer>> {
  if (tx === undefined || account === undefined || tx.status !== 'PENDING') return [];
  const answer = approvalAnswer(statusCode);
  if (answer.kind !== 'AWAIT') return decideSettleIncoming(tx, account, answer, at);
  const message: ApprovalTimer = { type: 'incoming.approval-timeout', transactionId: tx.id };
  return [setTimer(at + APPROVAL_WINDOW_MS, [tx.accountId], message, at, approvalTimerKey(tx.id))];
}

/**
 * Records the incoming payment PENDING with its approval webhook; when the environment
 * has no webhook endpoint there is nobody to ask, and it is approved in the same entry.
 * Its amount counts in the environment's intake from now on (reserved while it awaits
 * approval, see Intake), so it is checked here, and approving it later, however much
 * money arrived meanwhile, cannot pass the bound: money that would have is refused instead.
 */
export function decideReceive(
  input: IncomingInput,
  env: PlatformEnv,
  account: InternalAccount,
  customer: Customer,
  deposit: ExternalAccount | undefined,
  intake: Intake,
  at: number,
): PaymentRecorded[] {
  const amount = input.receivingCurrencyAmount;
  assertIntakeRoom(intake, account.envId, [{ currency: account.currency, amount }], 'receivingCurrencyAmount');
  const id = newId('Transaction', at);
  const tx: Transaction = {
    id,
    envId: account.envId,
    type: 'INCOMING',
    status: 'PENDING',
    accountId: account.id,
    customerId: customer.id,
    platformCustomerId: customer.platformCustomerId,
    source: { sourceType: 'UMA_ADDRESS', umaAddress: input.senderUmaAddress },
    // The customer's default UMA deposit account of the currency, if any, else its internal account.
    destination: { destinationType: 'ACCOUNT', accountId: deposit !== undefined && deposit.currency === account.currency ? deposit.id : account.id },
    ...unquotedAmounts(id, input.receivingCurrencyCode, amount),
    createdAt: at,
    updatedAt: at,
  };
  const created: PaymentRecorded = { type: 'payment.recorded', transactions: [tx], postings: [], ledger: [], webhooks: [transactionWebhook(tx, 'INCOMING_PAYMENT', at, true)] };
  const approveNow = env.config.webhookEndpoint === '';
  return approveNow ? [created, ...decideSettleIncoming(tx, account, { kind: 'APPROVE' }, at)] : [created];
}

/**
 * Approves, rejects or fails a PENDING incoming payment; anything else is 409
 * TRANSACTION_NOT_PENDING. `account` is the internal account of the transaction (undefined
 * when its accountId names none, which only a transaction of another kind does).
 */
export function decideSettleIncoming(tx: Transaction, account: InternalAccount | undefined, outcome: IncomingOutcome, at: number): PaymentRecorded[] {
  if (tx.type !== 'INCOMING' || tx.status !== 'PENDING') {
    throw new DomainError('TRANSACTION_NOT_PENDING', `transaction ${tx.id} is not a pending incoming payment (it is ${tx.type} ${tx.status})`);
  }
  if (account === undefined) throw new Error(`incoming payment ${tx.id} names ${tx.accountId}, which is no internal account`);
  switch (outcome.kind) {
    case 'APPROVE': {
      const done = withStatus(tx, 'COMPLETED', at);
      const amount = tx.receivedAmount;
      // Paid out to the default UMA deposit account, the money passes through the internal
      // account (in and out, balance unchanged) and leaves the service at once.
      const paidOut = tx.destination.destinationType === 'ACCOUNT' && tx.destination.accountId !== account.id;
      const event: PaymentRecorded = {
        type: 'payment.recorded',
        transactions: [done],
        postings: [{ accountId: account.id, balance: paidOut ? 0 : amount, inflow: amount, outflow: paidOut ? amount : 0 }],
        ledger: [],
        webhooks: [transactionWebhook(done, 'INCOMING_PAYMENT', at)],
      };
      return withAccountStatus([event], [account], at);
    }
    case 'REJECT':
      return [settled(withStatus(tx, 'REJECTED', at), at)];
    case 'FAIL':
      return [settled(withStatus(tx, 'FAILED', at, { failureReason: outcome.reason }), at)];
  }
}

function settled(tx: Transaction, at: number): PaymentRecorded {
  return { type: 'payment.recorded', transactions: [tx], postings: [], ledger: [], webhooks: [transactionWebhook(tx, 'INCOMING_PAYMENT', at)] };
}

