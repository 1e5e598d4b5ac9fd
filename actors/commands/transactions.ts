// What the platform does to a transaction after it is made (CONTRACT.md "Today's clients,
// second wave"): cancel a bank payout still in flight, and confirm that a receipt reached
// its customer. Both hold the transaction's actor (its quote's owner, or its account).
import { cancelTimer } from '../../src/engine/state-machine.js';
import { loggedId } from '../../src/engine/ids.js';
import { notFound } from '../errors.js';
import type { ExternalAccount } from '../external-account.js';
import { decideCancelPayout } from '../payment.js';
import type { Transaction } from '../transaction.js';
import type { DomainCommand, World } from '../world.js';

export interface TransactionInput {
  envId: string;
  transactionId: string;
}

function transactionIn(world: World, envId: string, id: string): Transaction {
  const tx = world.transactions.inEnv(envId, id);
  if (tx === undefined) throw notFound('transactionId', 'transaction', id);
  return tx;
}

/** The external account `tx` pays, if it pays one (deleted ones too: a payout under way still goes to it). */
function payeeAccount(world: World, tx: Transaction): ExternalAccount | undefined {
  return tx.destination.destinationType === 'ACCOUNT' ? world.externalAccounts.get(tx.destination.accountId) : undefined;
}

/**
 * POST /transactions/{id}/cancel: the payout fails as CANCELLED and is refunded with its
 * fees, and its outcome timer is cancelled, all in one entry; else 409. Holds the
 * transaction's actor, the account refunded, and the payee account's actor (its customer or
 * environment), read to tell a bank account from a Spark wallet.
 */
export const cancelTransaction: DomainCommand<TransactionInput, Transaction> = {
  name: 'transaction.cancel',
  actors: ({ envId, transactionId }, world) => {
    const tx = transactionIn(world, envId, transactionId);
    const payee = payeeAccount(world, tx);
    return payee === undefined ? [world.transactions.actorOf(tx), tx.accountId] : [world.transactions.actorOf(tx), tx.accountId, world.externalAccounts.actorOf(payee)];
  },
  decide: ({ envId, transactionId }, world, at) => {
    const tx = transactionIn(world, envId, transactionId);
    const events = decideCancelPayout(tx, payeeAccount(world, tx), at);
    // The outcome timer is keyed by the transaction (payoutTimer): it must not play out after the cancel.
    return { events: [...events, cancelTimer(transactionId)], reply: () => world.transactions.get(transactionId)! };
  },
};

export interface ConfirmReceiptInput extends TransactionInput {
  /** When the receipt was delivered; absent: the entry's time. */
  confirmedAt?: number;
}

/** POST /transactions/{id}/confirm: records when the receipt was delivered (again: overwrites). Holds the transaction's actor. */
export const confirmReceiptDelivery: DomainCommand<ConfirmReceiptInput, Transaction> = {
  name: 'transaction.confirm-receipt',
  actors: ({ envId, transactionId }, world) => [world.transactions.actorOf(transactionIn(world, envId, transactionId))],
  decide: ({ envId, transactionId, confirmedAt }, world, at) => {
    transactionIn(world, envId, transactionId);
    const confirmed = { type: 'receipt.confirmed' as const, transactionId: loggedId(transactionId, 'Transaction'), confirmedAt: confirmedAt ?? at };
    return { events: [confirmed], reply: () => world.transactions.get(transactionId)! };
  },
};
