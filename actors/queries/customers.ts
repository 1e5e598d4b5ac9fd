// Reads of customers: one by id (deleted ones stay readable), and the list with its filters.
import type { Customer, CustomerType } from '../customer.js';
import { customerIn } from '../commands/customers.js';
import { paginate, paginateAll, type Page, type PageRequest } from '../page.js';
import type { DomainQuery } from '../world.js';

/** What a list of customers selects; time bounds are epoch ms, inclusive, and an absent one is open. */
export interface CustomerFilter {
  platformCustomerId?: string;
  /** Lower case: UMA addresses are stored so. */
  umaAddress?: string;
  /** Compared case aside. */
  email?: string;
  region?: string;
  customerType?: CustomerType;
  currency?: string;
  createdFrom: number;
  createdTo: number;
  updatedFrom: number;
  updatedTo: number;
  /** Only deleted (true), only live (false), or both (undefined). */
  deleted: boolean | undefined;
}

function selects(filter: CustomerFilter): (c: Customer) => boolean {
  const email = filter.email?.toLowerCase();
  return (c) =>
    (filter.platformCustomerId === undefined || c.platformCustomerId === filter.platformCustomerId) &&
    (filter.umaAddress === undefined || c.umaAddress === filter.umaAddress) &&
    (email === undefined || c.email?.toLowerCase() === email) &&
    (filter.region === undefined || c.region === filter.region) &&
    (filter.customerType === undefined || c.customerType === filter.customerType) &&
    (filter.currency === undefined || c.currencies.includes(filter.currency)) &&
    c.createdAt >= filter.createdFrom &&
    c.createdAt <= filter.createdTo &&
    c.updatedAt >= filter.updatedFrom &&
    c.updatedAt <= filter.updatedTo &&
    (filter.deleted === undefined || c.isDeleted === filter.deleted);
}

/** Whether `filter` selects every customer that is not deleted (a list without filters). */
function livesOnly(filter: CustomerFilter): boolean {
  const { platformCustomerId, umaAddress, email, region, customerType, currency } = filter;
  const open = [platformCustomerId, umaAddress, email, region, customerType, currency].every((value) => value === undefined);
  return open && filter.deleted === false && filter.createdFrom === -Infinity && filter.createdTo === Infinity && filter.updatedFrom === -Infinity && filter.updatedTo === Infinity;
}

/** One page of the environment's customers, newest first. */
export const customerPage: DomainQuery<{ envId: string; filter: CustomerFilter; page: PageRequest }, Page<Customer>> = ({ envId, filter, page }, world) => {
  const customers = world.customers;
  // Without filters a page reads only its own customers (after a restart, most are still in their snapshot chunks).
  if (livesOnly(filter)) return paginateAll(customers.liveIdsIn(envId), page, (id) => customers.get(id)!, (c) => c);
  const selected = selects(filter);
  return paginate(customers.idsIn(envId), page, (id) => {
    const c = customers.get(id)!;
    return selected(c) ? c : undefined;
  }, (c) => c);
};

export const customer: DomainQuery<{ envId: string; customerId: string }, Customer> = ({ envId, customerId }, world) => customerIn(world, envId, customerId);
