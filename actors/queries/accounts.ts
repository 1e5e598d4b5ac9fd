// Reads of internal and external accounts: one by id, and the lists with their filters.
import type { ExternalAccount } from '../external-account.js';
import type { AccountSummary, InternalAccount } from '../internal-account.js';
import { customerIn } from '../commands/customers.js';
import { externalAccountIn, internalAccountIn, type ExternalAccountScope } from '../commands/accounts.js';
import { paginate, type Page, type PageRequest } from '../page.js';
import type { DomainQuery } from '../world.js';

/** Which internal accounts a list shows: whose (any, customers' or the platform's), and of what. */
export interface InternalAccountFilter {
  owner: 'any' | 'customers' | 'platform';
  customerId?: string;
  currency?: string;
  type?: string;
}

/** One page of the environment's internal accounts; an unknown customer is a 404 naming customerId. */
export const internalAccountPage: DomainQuery<{ envId: string; filter: InternalAccountFilter; page: PageRequest }, Page<InternalAccount>> = ({ envId, filter, page }, world) => {
  if (filter.customerId !== undefined) customerIn(world, envId, filter.customerId);
  const accounts = world.internalAccounts;
  const matches = (a: AccountSummary): boolean =>
    !(filter.owner === 'customers' && a.customerId === '') &&
    !(filter.owner === 'platform' && a.customerId !== '') &&
    (filter.currency === undefined || a.currency === filter.currency) &&
    (filter.type === undefined || a.type === filter.type);
  // Filtered on summaries; only the page's accounts are built in full (a customer's
  // provisioned accounts are derived from it, see InternalAccounts).
  const built = (id: string): InternalAccount => accounts.get(id)!;
  return filter.customerId !== undefined
    ? paginate(accounts.idsOwnedBy(filter.customerId), page, (id) => (matches(accounts.summary(id)!) ? id : undefined), built)
    : paginate(accounts.idsIn(envId), page, (id, summary) => (matches(summary) ? id : undefined), built);
};

export const internalAccount: DomainQuery<{ envId: string; accountId: string }, InternalAccount> = ({ envId, accountId }, world) =>
  internalAccountIn(world, envId, accountId, 'id');

/** Which external accounts a list shows: the platform's only, or one customer's, and of which currency. */
export interface ExternalAccountFilter {
  platformOnly: boolean;
  customerId?: string;
  currency?: string;
}

/** One page of the environment's live external accounts; an unknown customer is a 404 naming customerId. */
export const externalAccountPage: DomainQuery<{ envId: string; filter: ExternalAccountFilter; page: PageRequest }, Page<ExternalAccount>> = ({ envId, filter, page }, world) => {
  if (filter.customerId !== undefined) customerIn(world, envId, filter.customerId);
  const select = (id: string): ExternalAccount | undefined => {
    const a = world.externalAccounts.get(id)!;
    if (filter.platformOnly && a.customerId !== null) return undefined;
    if (filter.currency !== undefined && a.currency !== filter.currency) return undefined;
    return a;
  };
  return paginate(world.externalAccounts.idsIn(envId, filter.customerId), page, select, (a) => a);
};

export const externalAccount: DomainQuery<{ envId: string; accountId: string; scope: ExternalAccountScope }, ExternalAccount> = ({ envId, accountId, scope }, world) =>
  externalAccountIn(world, envId, accountId, scope, 'id');
