// Account commands (SERVICE_SPEC parts 2, 4, 8; CONTRACT.md): an external account for a
// customer or the platform, and sandbox funding of an internal account.
import { assertActive } from '../customer.js';
import { notFound } from '../errors.js';
import { decideCreateExternalAccount, decideDeleteExternalAccount, type ExternalAccount, type ExternalAccountInput } from '../external-account.js';
import type { InternalAccount } from '../internal-account.js';
import { decideSandboxFund } from '../payment.js';
import type { Environment } from '../platform.js';
import type { DomainCommand, World } from '../world.js';
import { customerIn } from './customers.js';

/** The internal account `id` of environment `envId`; a 404 names `field`, where the request gave the id. */
export function internalAccountIn(world: World, envId: string, id: string, field: string): InternalAccount {
  const account = world.internalAccounts.inEnv(envId, id);
  if (account === undefined) throw notFound(field, 'internal account', id);
  return account;
}

/**
 * Whose external accounts a route reaches: /customers/external-accounts reaches the
 * environment's (customers' and platform's, as its list does), /platform/... only the
 * platform's.
 */
export type ExternalAccountScope = 'environment' | 'platform';

/** The live external account `id` within `scope`; a deleted one, or one outside it, is a 404 naming `field`. */
export function externalAccountIn(world: World, envId: string, id: string, scope: ExternalAccountScope, field: string): ExternalAccount {
  const account = world.externalAccounts.get(id);
  if (account === undefined || account.envId !== envId || account.deletedAt !== undefined || (scope === 'platform' && account.customerId !== null)) {
    throw notFound(field, 'external account', id);
  }
  return account;
}

export interface CreateExternalAccountInput {
  envId: string;
  /** The environment's kind (fixed at its creation): the sandbox simulates beneficiary checks. */
  environment: Environment;
  account: ExternalAccountInput;
}

/**
 * A customer's external accounts change while the customer's actor is held (at most one is its
 * default UMA deposit account), the platform's under its environment's.
 */
export const createExternalAccount: DomainCommand<CreateExternalAccountInput, ExternalAccount> = {
  name: 'externalAccount.create',
  actors: ({ envId, account }, world) => [account.customerId === undefined ? envId : customerIn(world, envId, account.customerId).id],
  decide: ({ envId, environment, account }, world, at) => {
    const { customerId } = account;
    let currentDefault: ExternalAccount | undefined;
    if (customerId !== undefined) {
      assertActive(customerIn(world, envId, customerId));
      currentDefault = world.externalAccounts.defaultDepositAccount(customerId);
    }
    const events = decideCreateExternalAccount(envId, environment, account, currentDefault, at);
    const id = events[0]!.account.id;
    return { events, reply: () => world.externalAccounts.get(id)! };
  },
};

export interface DeleteExternalAccountInput {
  envId: string;
  accountId: string;
  scope: ExternalAccountScope;
}

/** Held by the actor that created the account: its customer's, or the environment's for the platform's. */
export const deleteExternalAccount: DomainCommand<DeleteExternalAccountInput, undefined> = {
  name: 'externalAccount.delete',
  actors: ({ envId, accountId, scope }, world) => [world.externalAccounts.actorOf(externalAccountIn(world, envId, accountId, scope, 'id'))],
  decide: ({ envId, accountId, scope }, world) => ({
    events: decideDeleteExternalAccount(externalAccountIn(world, envId, accountId, scope, 'id')),
    reply: () => undefined,
  }),
};

/**
 * Simulated funding (sandbox only). The transaction shows the owner's platformCustomerId,
 * so a customer's account is funded holding its customer too.
 */
export const fundSandboxAccount: DomainCommand<{ envId: string; accountId: string; amount: number }, InternalAccount> = {
  name: 'internalAccount.sandbox-fund',
  actors: ({ envId, accountId }, world) => {
    const owner = internalAccountIn(world, envId, accountId, 'accountId').customerId;
    return owner === '' ? [accountId] : [accountId, owner];
  },
  decide: ({ envId, accountId, amount }, world, at) => {
    const account = internalAccountIn(world, envId, accountId, 'accountId');
    // A customer's account is funded only while its customer is there (the transaction names its platformCustomerId).
    if (account.customerId !== '') customerIn(world, envId, account.customerId);
    return { events: decideSandboxFund(account, amount, world, at), reply: () => world.internalAccounts.get(accountId)! };
  },
};
