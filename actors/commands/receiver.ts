// Receiver lookup commands (SERVICE_SPEC part 4; CONTRACT.md "Money"): each GET
// /receiver/... records a Lookup, the environment's record, that a quote then uses. It
// holds the environment (its UMA index and lookups), the sending customer when one is
// named (its default currency prices the estimate) and whoever owns the receiver: the
// customer holding the UMA address, or the owner of the external account.
import { notFound } from '../errors.js';
import type { ExternalAccount } from '../external-account.js';
import { decideCreateLookup, externalAccountReceiver, resolveUmaReceiver, sendingCurrencyFor, type Lookup, type LookupReceiver } from '../lookup.js';
import type { PlatformEnv } from '../platform.js';
import type { DomainCommand, World } from '../world.js';
import { customerIn } from './customers.js';

/** What is looked up: an UMA address, or an external account of the environment. */
export type LookupTarget = { readonly umaAddress: string } | { readonly accountId: string };

export interface LookUpReceiverInput {
  envId: string;
  target: LookupTarget;
  senderCustomerId?: string;
  senderUmaAddress?: string;
}

/** The external account `accountId` of environment `envId`; a 404 names accountId. */
function receivingAccount(world: World, envId: string, accountId: string): ExternalAccount {
  const account = world.externalAccounts.get(accountId);
  if (account?.envId !== envId || account.deletedAt !== undefined) throw notFound('accountId', 'receiver', accountId);
  return account;
}

/** The actor that owns the receiver's record, if the target names one. */
function receiverActor(world: World, envId: string, target: LookupTarget): string | undefined {
  if ('accountId' in target) {
    const account = receivingAccount(world, envId, target.accountId);
    return account.customerId ?? envId;
  }
  return world.customers.umaOwner(envId, target.umaAddress);
}

/** Who the target names, with the currencies it receives; a 404 names the path parameter. */
function findReceiver(world: World, env: PlatformEnv, target: LookupTarget): { receiver: LookupReceiver; currencies: readonly string[] } {
  if ('accountId' in target) return externalAccountReceiver(receivingAccount(world, env.id, target.accountId));
  const found = resolveUmaReceiver(env, target.umaAddress, world.customers);
  if (found === undefined) throw notFound('receiverUmaAddress', 'receiver', target.umaAddress);
  return found;
}

export const lookUpReceiver: DomainCommand<LookUpReceiverInput, Lookup> = {
  name: 'lookup.create',
  actors: ({ envId, target, senderCustomerId }, world) => {
    const actors = [envId];
    if (senderCustomerId !== undefined) actors.push(customerIn(world, envId, senderCustomerId).id);
    const owner = receiverActor(world, envId, target);
    if (owner !== undefined) actors.push(owner);
    return actors;
  },
  decide: ({ envId, target, senderCustomerId, senderUmaAddress }, world, at) => {
    const env = world.envs.get(envId)!;
    const found = findReceiver(world, env, target);
    const sender = senderCustomerId === undefined ? undefined : customerIn(world, envId, senderCustomerId);
    const input = {
      ...found,
      sendingCurrency: sendingCurrencyFor(env, sender),
      ...(senderCustomerId !== undefined ? { senderCustomerId } : {}),
      ...(senderUmaAddress !== undefined ? { senderUmaAddress } : {}),
    };
    const event = decideCreateLookup(env, input, world.lookups, at);
    return { events: [event], reply: () => world.lookups.inEnv(envId, event.lookup.id)! };
  },
};
