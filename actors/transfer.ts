// Transfers between a customer's (or the platform's) external bank account and an internal
// account of the same currency (CONTRACT.md "Money"): no quote, no conversion, no fees.
//
// Ledger (per environment and currency; sum(balances) + in transit + fees = inflow - outflow):
//   transfer-in, completes:             destination +A (inflow +A)
//   transfer-in, rejected or failed:    nothing had moved
//   transfer-out, completes at once:    source -A (outflow +A)
//   transfer-out, in flight:            source -A, in transit +A
//     rejected or failed, refunded:     in transit -A, source +A
//
// A transfer's transaction belongs to its internal account (INCOMING for a transfer-in,
// OUTGOING for a transfer-out) and its later sandbox outcome is played by the payout
// outcome timer (decidePayoutOutcome in payment.ts), keyed by the transaction id.
import { newId } from '../src/engine/ids.js';
import { assertActive, type Customer } from './customer.js';
import { DomainError, invalidField } from './errors.js';
import type { ExternalAccount } from './external-account.js';
import { primaryIdentifier, sandboxSuffix } from './identifiers.js';
import type { InternalAccount } from './internal-account.js';
import { assertIntakeRoom, type Intake } from './ledger.js';
import { paymentStep, type ExecuteDecision } from './payment.js';
import type { PaymentRecorded } from './payment-recorded.js';
import { withAccountStatus } from './webhook-event.js';
import type { Environment } from './platform.js';
import { BANK_RETURN_MS, SHORT_OUTCOME_MS, unquotedAmounts, type PayoutOutcome, type Transaction, type TransactionStatus } from './transaction.js';

/** A transfer's decision: its steps are logged whole (`payment.recorded`). */
type PaymentDecision = ExecuteDecision<PaymentRecorded>;

export interface TransferParties {
  readonly environment: Environment;
  readonly internal: InternalAccount;
  readonly external: ExternalAccount;
  /** The customer owning both accounts; undefined when they are the platform's. */
  readonly customer: Customer | undefined;
}

export interface TransferInInput {
  readonly amount: number;
}

export interface TransferOutInput {
  /** Omitted: the whole balance. */
  readonly amount?: number;
  readonly paymentRail?: string;
  readonly remittanceInformation?: string;
}

/** How a transfer's bank plays out when it does not complete at once. */
interface TransferWait {
  readonly status: TransactionStatus;
  readonly afterMs: number;
  readonly outcome: PayoutOutcome;
}

/**
 * The sandbox rows of CONTRACT.md for transfers, by the last 3 digits of the external
 * account's primary identifier: 002 and 003 refuse at once (nothing is made); 004 is
 * REJECTED after ~5 s; 005 stays PENDING ~30 s, then FAILED; money a transfer-out had
 * sent comes back. Anything else, and production, completes at once.
 */
function transferWait(environment: Environment, account: ExternalAccount, direction: 'IN' | 'OUT', field: string): TransferWait | undefined {
  if (environment === 'production') return undefined;
  switch (sandboxSuffix(primaryIdentifier(account.accountInfo))) {
    case '002':
      throw new DomainError('INSUFFICIENT_FUNDS', `the bank account ${account.id} has insufficient funds (sandbox suffix 002)`, [{ field, message: 'insufficient funds' }]);
    case '003':
      throw new DomainError('ACCOUNT_CLOSED', `the bank account ${account.id} is closed (sandbox suffix 003)`, [{ field, message: 'account closed' }]);
    case '004':
      return { status: 'PROCESSING', afterMs: SHORT_OUTCOME_MS, outcome: direction === 'IN' ? 'PULL_REJECTED' : 'REJECT_REFUND' };
    case '005':
      return { status: 'PENDING', afterMs: BANK_RETURN_MS, outcome: direction === 'IN' ? 'PULL_FAILED' : 'FAIL_REFUND' };
    default:
      return undefined;
  }
}

/** Both accounts usable together: one owner, one currency, nobody deleted, the bank account active. */
function checkParties(parties: TransferParties, externalField: string): void {
  const { internal, external, customer } = parties;
  if (customer !== undefined) assertActive(customer);
  if ((external.customerId ?? '') !== internal.customerId) {
    throw invalidField(externalField, `the external account ${external.id} and the internal account ${internal.id} belong to different owners`);
  }
  if (external.status === 'INACTIVE') throw invalidField(externalField, `the external account ${external.id} is inactive`);
  if (external.currency !== internal.currency) {
    throw invalidField('destination.accountId', `the external account holds ${external.currency} and the internal account ${internal.currency}: a transfer moves one currency`);
  }
}

function transferTransaction(
  parties: TransferParties,
  type: 'INCOMING' | 'OUTGOING',
  amount: number,
  at: number,
  extra: { paymentRail?: string; description?: string },
): Transaction {
  const { internal, external, customer } = parties;
  const id = newId('Transaction', at);
  const [from, to] = type === 'INCOMING' ? [external.id, internal.id] : [internal.id, external.id];
  return {
    id,
    envId: internal.envId,
    type,
    status: 'PENDING',
    accountId: internal.id,
    customerId: internal.customerId,
    platformCustomerId: customer?.platformCustomerId ?? '',
    source: { sourceType: 'ACCOUNT', accountId: from },
    destination: extra.paymentRail !== undefined ? { destinationType: 'ACCOUNT', accountId: to, paymentRail: extra.paymentRail } : { destinationType: 'ACCOUNT', accountId: to },
    ...unquotedAmounts(id, internal.currency, amount),
    ...(extra.description !== undefined ? { description: extra.description } : {}),
    createdAt: at,
    updatedAt: at,
  };
}

function waiting(tx: Transaction, wait: TransferWait, at: number): Transaction {
  return { ...tx, status: wait.status, pending: { outcome: wait.outcome, due: at + wait.afterMs }, updatedAt: at };
}

function timerOf(tx: Transaction, wait: TransferWait | undefined, at: number): PaymentDecision['timer'] {
  return wait === undefined ? undefined : { due: at + wait.afterMs, actorIds: [tx.accountId], message: { type: 'payout.outcome', transactionId: tx.id }, key: tx.id };
}

/** The transfer's entry: its step, with the internal account's ACCOUNT_STATUS when its balance moves now. */
function decision(internal: InternalAccount, events: PaymentDecision['events'], timer: PaymentDecision['timer'], at: number): PaymentDecision {
  const reported = withAccountStatus(events, [internal], at);
  return timer === undefined ? { events: reported } : { events: reported, timer };
}

/** Money from a bank account into an internal account: inflow once the bank delivers. */
export function decideTransferIn(parties: TransferParties, input: TransferInInput, intake: Intake, at: number): PaymentDecision {
  checkParties(parties, 'source.accountId');
  const { internal } = parties;
  // Checked whatever the sandbox bank will do: in production every transfer-in completes at once.
  assertIntakeRoom(intake, internal.envId, [{ currency: internal.currency, amount: input.amount }], 'amount');
  const wait = transferWait(parties.environment, parties.external, 'IN', 'source.accountId');
  const tx = transferTransaction(parties, 'INCOMING', input.amount, at, {});
  if (wait !== undefined) {
    return decision(internal, [paymentStep(undefined, waiting(tx, wait, at), [], [], at)], timerOf(tx, wait, at), at);
  }
  const done: Transaction = { ...tx, status: 'COMPLETED', settledAt: at };
  return decision(internal, [paymentStep(undefined, done, [{ accountId: internal.id, balance: input.amount, inflow: input.amount, outflow: 0 }], [], at)], undefined, at);
}

/** Money from an internal account to a bank account: in transit until the bank settles it. */
export function decideTransferOut(parties: TransferParties, input: TransferOutInput, at: number): PaymentDecision {
  checkParties(parties, 'destination.accountId');
  const { internal } = parties;
  const amount = input.amount ?? internal.balance;
  if (amount === 0) throw new DomainError('INSUFFICIENT_BALANCE', `the account ${internal.id} holds nothing to transfer`, [{ field: 'amount', message: 'the balance is 0' }]);
  if (amount > internal.balance) {
    throw new DomainError('INSUFFICIENT_BALANCE', `the account ${internal.id} holds ${internal.balance} ${internal.currency}; the transfer needs ${amount}`, [
      { field: 'amount', message: 'insufficient balance', balance: internal.balance, required: amount },
    ]);
  }
  const wait = transferWait(parties.environment, parties.external, 'OUT', 'destination.accountId');
  const tx = transferTransaction(parties, 'OUTGOING', amount, at, {
    ...(input.paymentRail !== undefined ? { paymentRail: input.paymentRail } : {}),
    ...(input.remittanceInformation !== undefined ? { description: input.remittanceInformation } : {}),
  });
  if (wait !== undefined) {
    const ledger = [{ envId: internal.envId, currency: internal.currency, inTransit: amount, fees: 0, inflow: 0, outflow: 0 }];
    return decision(internal, [paymentStep(undefined, waiting(tx, wait, at), [{ accountId: internal.id, balance: -amount, inflow: 0, outflow: 0 }], ledger, at)], timerOf(tx, wait, at), at);
  }
  const done: Transaction = { ...tx, status: 'COMPLETED', settledAt: at };
  return decision(internal, [paymentStep(undefined, done, [{ accountId: internal.id, balance: -amount, inflow: 0, outflow: amount }], [], at)], undefined, at);
}
