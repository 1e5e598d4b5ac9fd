// Where money for a customer lands when it names no account (an UMA address, an incoming
// UMA payment): the customer's internal account of the currency. Picking it reads the
// currency of each of the customer's accounts, so a decision that picks holds them all.
import type { InternalAccount } from '../internal-account.js';
import type { World } from '../world.js';

/** The actors picking an account of `customerId` reads: the customer and each of its accounts. */
export function receivingActors(world: World, customerId: string): string[] {
  return [customerId, ...world.internalAccounts.idsOwnedBy(customerId)];
}

/** The customer's internal account of `currency`, or undefined when it holds none. */
export function receivingAccount(world: World, customerId: string, currency: string): InternalAccount | undefined {
  for (const id of world.internalAccounts.idsOwnedBy(customerId)) {
    const account = world.internalAccounts.get(id)!;
    if (account.currency === currency) return account;
  }
  return undefined;
}
