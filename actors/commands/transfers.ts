// Transfer commands (CONTRACT.md "Money"): POST /transfer-in moves money from an external
// bank account into an internal account, POST /transfer-out the other way; same currency,
// no quote. A decision holds the internal account (which owns the transaction), the
// owning customer (whose deletion stops transfers) and the bank account's owner (the
// customer's record, or the environment's for the platform's own); the result is the
// transaction. The environment comes with the input (its kind picks the sandbox's rails).
import type { Decision } from '../../src/engine/state-machine.js';
import { notFound } from '../errors.js';
import { assertNotDeleted } from '../external-account.js';
import { executionEvents, type ExecuteDecision } from '../payment.js';
import type { TransferDecided } from '../payment-recorded.js';
import { idOf } from '../../src/engine/ids.js';
import type { PlatformEnv } from '../platform.js';
import type { Transaction } from '../transaction.js';
import { decideTransferIn, decideTransferOut, type TransferParties } from '../transfer.js';
import type { DomainCommand, DomainEvent, World } from '../world.js';

export interface TransferInRequest {
  source: { accountId: string };
  destination: { accountId: string };
  amount: number;
}

export interface TransferOutRequest {
  source: { accountId: string };
  destination: { accountId: string; paymentRail?: string };
  /** Omitted: the whole balance. */
  amount?: number;
  remittanceInformation?: string;
}

/** The internal account and bank account a transfer moves between; 404s name the request's fields. */
function partiesOf(world: World, env: PlatformEnv, internal: { id: string; field: string }, external: { id: string; field: string }): TransferParties {
  const account = world.internalAccounts.inEnv(env.id, internal.id);
  if (account === undefined) throw notFound(internal.field, 'internal account', internal.id);
  const bank = world.externalAccounts.get(external.id);
  if (bank === undefined || bank.envId !== env.id) throw notFound(external.field, 'external account', external.id);
  assertNotDeleted(bank, external.field);
  const customer = account.customerId === '' ? undefined : world.customers.get(account.customerId);
  return { environment: env.environment, internal: account, external: bank, customer };
}

/** Every actor a transfer between these parties reads or writes. */
function actorsOf(world: World, parties: TransferParties): string[] {
  const bankOwner = world.externalAccounts.actorOf(parties.external);
  const actors = [parties.internal.id, bankOwner];
  if (parties.customer !== undefined && parties.customer.id !== bankOwner) actors.push(parties.customer.id);
  return actors;
}

function inParties(world: World, env: PlatformEnv, request: TransferInRequest): TransferParties {
  return partiesOf(world, env, { id: request.destination.accountId, field: 'destination.accountId' }, { id: request.source.accountId, field: 'source.accountId' });
}

function outParties(world: World, env: PlatformEnv, request: TransferOutRequest): TransferParties {
  return partiesOf(world, env, { id: request.source.accountId, field: 'source.accountId' }, { id: request.destination.accountId, field: 'destination.accountId' });
}

/** The transfer's entry, answered with its transaction. */
function transferred(world: World, decision: ExecuteDecision<TransferDecided>, at: number): Decision<DomainEvent, Transaction> {
  const txId = idOf(decision.events[0]!.transactionId, 'Transaction');
  return { events: executionEvents(decision, at), reply: () => world.transactions.get(txId)! };
}

export const transferIn: DomainCommand<{ env: PlatformEnv; request: TransferInRequest }, Transaction> = {
  name: 'transfer.in',
  actors: ({ env, request }, world) => actorsOf(world, inParties(world, env, request)),
  decide: ({ env, request }, world, at) => transferred(world, decideTransferIn(inParties(world, env, request), { amount: request.amount }, world, at), at),
};

export const transferOut: DomainCommand<{ env: PlatformEnv; request: TransferOutRequest }, Transaction> = {
  name: 'transfer.out',
  actors: ({ env, request }, world) => actorsOf(world, outParties(world, env, request)),
  decide: ({ env, request }, world, at) => {
    const input = { amount: request.amount, paymentRail: request.destination.paymentRail, remittanceInformation: request.remittanceInformation };
    return transferred(world, decideTransferOut(outParties(world, env, request), input, at), at);
  },
};
