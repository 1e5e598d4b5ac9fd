// Reads of transactions: one by id, and the list with its filters (newest first unless asc).
import type { Transaction, TransactionStatus, TransactionType } from '../transaction.js';
import { customerIn } from '../commands/customers.js';
import { notFound } from '../errors.js';
import { paginate, paginateAll, type Page, type PageRequest } from '../page.js';
import type { DomainQuery } from '../world.js';

/** What a list of transactions selects; `from` and `to` are epoch ms, inclusive. */
export interface TransactionFilter {
  customerId?: string;
  platformCustomerId?: string;
  status?: TransactionStatus;
  type?: TransactionType;
  reference?: string;
  from?: number;
  to?: number;
}

/** One page of the environment's (or a customer's) transactions; an unknown customer is a 404 naming customerId. */
export const transactionPage: DomainQuery<{ envId: string; filter: TransactionFilter; page: PageRequest; order: 'asc' | 'desc' }, Page<Transaction>> = (input, world) => {
  const { envId, filter, page, order } = input;
  if (filter.customerId !== undefined) customerIn(world, envId, filter.customerId);
  const transactions = world.transactions;
  const ids = transactions.idsIn(envId, filter.customerId);
  const { platformCustomerId, status, type, reference, from, to } = filter;
  const filtered = [platformCustomerId, status, type, reference, from, to].some((value) => value !== undefined);
  if (!filtered) return paginateAll(ids, page, (id) => transactions.get(id)!, (tx) => tx, order);
  const select = (id: string): Transaction | undefined => {
    const tx = transactions.get(id)!;
    if (platformCustomerId !== undefined && tx.platformCustomerId !== platformCustomerId) return undefined;
    if (status !== undefined && tx.status !== status) return undefined;
    if (type !== undefined && tx.type !== type) return undefined;
    if (reference !== undefined && tx.reference !== reference) return undefined;
    if (from !== undefined && tx.createdAt < from) return undefined;
    if (to !== undefined && tx.createdAt > to) return undefined;
    return tx;
  };
  return paginate(ids, page, select, (tx) => tx, order);
};

export const transaction: DomainQuery<{ envId: string; transactionId: string }, Transaction> = ({ envId, transactionId }, world) => {
  const tx = world.transactions.inEnv(envId, transactionId);
  if (tx === undefined) throw notFound('transactionId', 'transaction', transactionId);
  return tx;
};
