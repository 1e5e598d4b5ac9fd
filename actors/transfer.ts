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
// outcome timer (decidePayoutOutcome in payment.ts), keyed by the transaction id. A
// transfer logs `transfer.decided`, its facts; its records are derived when it applies.
import { idOf, loggedId } from '../src/engine/ids.js';
import { assertActive, type Customer } from './customer.js';
import { DomainError, invalidField } from './errors.js';
import type { ExternalAccount } from './external-account.js';
import { primaryIdentifier, sandboxSuffix } from './identifiers.js';
import type { InternalAccount, Posting } from './internal-account.js';
import { assertIntakeRoom, type Intake } from './ledger.js';
import { paymentStep, type ExecuteDecision } from './payment.js';
import type { PaymentRecorded, TransferDecided, TransferWait } from './payment-recorded.js';
import { newPaymentTransactionId, paymentIdsFrom } from './derived-ids.js';
import { withAccountStatus } from './webhook-event.js';
import type { Environment } from './platform.js';
import { BANK_RETURN_MS, payoutTimer, SHORT_OUTCOME_MS, unquotedAmounts, type Transaction } from './transaction.js';

/** A transfer's decision: its facts (`transfer.decided`), and its outcome timer when the bank holds it. */
type PaymentDecision = ExecuteDecision<TransferDecided>;

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

/** The facts of a transfer between `parties`, with its outcome timer when the sandbox bank holds it. */
function decided(parties: TransferParties, direction: 'IN' | 'OUT', amount: number, wait: TransferWait | undefined, at: number, extra: TransferExtra = {}): PaymentDecision {
  const transactionId = newPaymentTransactionId(at);
  const event: TransferDecided = {
    type: 'transfer.decided',
    direction,
    transactionId: loggedId(transactionId, 'Transaction'),
    internalAccount: loggedId(parties.internal.id, 'InternalAccount'),
    externalAccount: loggedId(parties.external.id, 'ExternalAccount'),
    amount,
    ...extra,
  };
  if (wait === undefined) return { events: [event] };
  const timer = payoutTimer(transactionId, at + wait.afterMs, parties.internal.id);
  return { events: [{ ...event, wait }], timer };
}

/** Money from a bank account into an internal account: inflow once the bank delivers. */
export function decideTransferIn(parties: TransferParties, input: TransferInInput, intake: Intake, at: number): PaymentDecision {
  checkParties(parties, 'source.accountId');
  const { internal } = parties;
  // Checked whatever the sandbox bank will do: in production every transfer-in completes at once.
  assertIntakeRoom(intake, internal.envId, [{ currency: internal.currency, amount: input.amount }], 'amount');
  return decided(parties, 'IN', input.amount, transferWait(parties.environment, parties.external, 'IN', 'source.accountId'), at);
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
  return decided(parties, 'OUT', amount, wait, at, {
    ...(input.paymentRail !== undefined ? { paymentRail: input.paymentRail } : {}),
    ...(input.remittanceInformation !== undefined ? { description: input.remittanceInformation } : {}),
  });
}

/** The state a transfer's records are derived from when its `transfer.decided` applies. */
export interface TransferState {
  readonly internalAccounts: { get(id: string): InternalAccount | undefined };
  readonly externalAccounts: { get(id: string): ExternalAccount | undefined };
  readonly customers: { get(id: string): Customer | undefined };
}

/**
 * What `transfer.decided` changes: its `payment.recorded`, derived from the decided facts
 * and the accounts as the state holds them where the entry applies (the state the decision
 * read, so first apply and replay make the same records and ids).
 */
export function transferRecorded(event: TransferDecided, state: TransferState, at: number): PaymentRecorded {
  const internal = state.internalAccounts.get(idOf(event.internalAccount, 'InternalAccount'));
  const external = state.externalAccounts.get(idOf(event.externalAccount, 'ExternalAccount'));
  const id = idOf(event.transactionId, 'Transaction');
  if (internal === undefined || external === undefined) throw new Error(`transfer ${id} names an account that does not exist`);
  const customer = internal.customerId === '' ? undefined : state.customers.get(internal.customerId);
  const { amount, wait, direction } = event;
  const extra: TransferExtra = { ...(event.paymentRail !== undefined ? { paymentRail: event.paymentRail } : {}), ...(event.description !== undefined ? { description: event.description } : {}) };
  const tx = transferTransaction({ internal, external, customer }, id, direction, amount, at, extra);
  const nextId = paymentIdsFrom(id);
  const account = (balance: number, inflow: number, outflow: number): Posting => ({ accountId: internal.id, balance, inflow, outflow });
  let step: PaymentRecorded;
  if (wait === undefined) {
    step = paymentStep(undefined, { ...tx, status: 'COMPLETED', settledAt: at }, [direction === 'IN' ? account(amount, amount, 0) : account(-amount, 0, amount)], [], nextId('Webhook'));
  } else if (direction === 'IN') {
    // The bank has not delivered: nothing moves until it does (and in the sandbox it will not).
    step = paymentStep(undefined, waiting(tx, wait, at), [], [], nextId('Webhook'));
  } else {
    const ledger = [{ envId: internal.envId, currency: internal.currency, inTransit: amount, fees: 0, inflow: 0, outflow: 0 }];
    step = paymentStep(undefined, waiting(tx, wait, at), [account(-amount, 0, 0)], ledger, nextId('Webhook'));
  }
  return withAccountStatus([step], [internal], () => nextId('Webhook'))[0]!;
}

/** What a transfer-out adds to its transaction: the rail it names, its remittanceInformation as the description. */
type TransferExtra = { paymentRail?: string; description?: string };

function transferTransaction(parties: Pick<TransferParties, 'internal' | 'external' | 'customer'>, id: string, direction: 'IN' | 'OUT', amount: number, at: number, extra: TransferExtra): Transaction {
  const { internal, external, customer } = parties;
  const [from, to] = direction === 'IN' ? [external.id, internal.id] : [internal.id, external.id];
  return {
    id,
    envId: internal.envId,
    type: direction === 'IN' ? 'INCOMING' : 'OUTGOING',
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
