// Incoming UMA payment commands (actors/incoming.ts): the sandbox simulation that records
// one, and the platform's approve and reject after answering its webhook 202. (The webhook
// answer that also decides is the delivery worker's, src/webhooks/delivery.ts.)
import { idOf } from '../../src/engine/ids.js';
import { cancelTimer } from '../../src/engine/state-machine.js';
import { assertActive, type Customer } from '../customer.js';
import { invalidField, notFound } from '../errors.js';
import { approvalTimerKey, decideReceive, decideSettleIncoming, type IncomingInput, type IncomingOutcome } from '../incoming.js';
import { SANDBOX_UMA_DOMAIN } from '../platform.js';
import type { Transaction } from '../transaction.js';
import type { DomainCommand, World } from '../world.js';
import { receivingAccount, receivingActors } from './receiving-account.js';

/** A simulated payment from a sandbox UMA address to a customer, named by UMA address or id. */
export interface SimulatedPayment extends IncomingInput {
  receiverUmaAddress?: string;
  customerId?: string;
}

/** The customer the payment is for, as the state has it now: a 404 names the field that named it. */
function receiverOf(world: World, envId: string, payment: SimulatedPayment): Customer {
  if (payment.receiverUmaAddress === undefined && payment.customerId === undefined) {
    throw invalidField('receiverUmaAddress', 'receiverUmaAddress or customerId is required');
  }
  if (!payment.senderUmaAddress.toLowerCase().endsWith(`@${SANDBOX_UMA_DOMAIN}`)) {
    throw invalidField('senderUmaAddress', `must be a sandbox address (@${SANDBOX_UMA_DOMAIN})`);
  }
  const customerId = payment.customerId ?? world.customers.umaOwner(envId, payment.receiverUmaAddress!);
  const customer = customerId === undefined ? undefined : world.customers.inEnv(envId, customerId);
  if (customer === undefined || (payment.receiverUmaAddress !== undefined && customer.umaAddress !== payment.receiverUmaAddress)) {
    throw payment.receiverUmaAddress !== undefined ? notFound('receiverUmaAddress', 'receiver', payment.receiverUmaAddress) : notFound('customerId', 'receiver', payment.customerId ?? '');
  }
  assertActive(customer);
  return customer;
}

/**
 * Records the payment (and approves it at once when the environment has no webhook
 * endpoint to ask). Holds the environment (its UMA address index and configuration), the
 * receiving customer and its accounts, one of which receives the payment and owns the
 * transaction; its default UMA deposit account is the customer's record.
 */
export const receiveUmaPayment: DomainCommand<{ envId: string; payment: SimulatedPayment }, Transaction> = {
  name: 'incoming.receive',
  actors: ({ envId, payment }, world) => [envId, ...receivingActors(world, receiverOf(world, envId, payment).id)],
  decide: ({ envId, payment }, world, at) => {
    const customer = receiverOf(world, envId, payment);
    const account = receivingAccount(world, customer.id, payment.receivingCurrencyCode);
    if (account === undefined) throw invalidField('receivingCurrencyCode', `customer ${customer.id} has no ${payment.receivingCurrencyCode} account`);
    const deposit = world.externalAccounts.defaultDepositAccount(customer.id);
    const events = decideReceive(payment, world.envs.get(envId)!, account, deposit, world, at);
    const txId = idOf(events[0]!.transactionId, 'Transaction');
    return { events, reply: () => world.transactions.get(txId)! };
  },
};

function transactionIn(world: World, envId: string, id: string): Transaction {
  const tx = world.transactions.inEnv(envId, id);
  if (tx === undefined) throw notFound('transactionId', 'transaction', id);
  return tx;
}

/**
 * The platform approves or rejects a pending incoming payment, which cancels its approval
 * timer. Holds the transaction's actor and the account an approval credits (for an
 * incoming payment the account is the transaction's actor; a transaction of another kind
 * is refused).
 */
export const settleIncomingPayment: DomainCommand<{ envId: string; transactionId: string; outcome: IncomingOutcome }, Transaction> = {
  name: 'incoming.settle',
  actors: ({ envId, transactionId }, world) => {
    const tx = transactionIn(world, envId, transactionId);
    return [world.transactions.actorOf(tx), tx.accountId];
  },
  decide: ({ envId, transactionId, outcome }, world, at) => {
    const tx = transactionIn(world, envId, transactionId);
    const events = decideSettleIncoming(tx, world.internalAccounts.get(tx.accountId), outcome, at);
    return { events: [...events, cancelTimer(approvalTimerKey(transactionId))], reply: () => world.transactions.get(transactionId)! };
  },
};
