// Transactions (CONTRACT.md "HTTP surface" and "Money"): the list with its filters, and
// one transaction. Reads only.
import { Type, type Static } from '@sinclair/typebox';
import type { PlatformEnv } from '../../../actors/platform.js';
import { renderTransaction, TRANSACTION_STATUSES, TRANSACTION_TYPES, type Transaction } from '../../../actors/transaction.js';
import type { Services } from '../../services.js';
import { customerIn } from '../../../actors/commands/customers.js';
import { invalidField, notFound } from '../../../actors/errors.js';
import { paginate, paginateAll, PageQuery } from '../pagination.js';
import { route, type Reply, type Route } from '../route.js';
import { IdOf, ListOf } from '../schemas/resources.js';
import { TransactionView } from '../schemas/payments.js';
import { DateTime, instant, Obj, StringEnum, Text, validator } from '../validation.js';

const ListTransactions = Obj({
  customerId: Type.Optional(IdOf('Customer')),
  platformCustomerId: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
  status: Type.Optional(StringEnum(TRANSACTION_STATUSES)),
  type: Type.Optional(StringEnum(TRANSACTION_TYPES)),
  reference: Type.Optional(Text({ minLength: 1, maxLength: 64 })),
  startDate: Type.Optional(DateTime),
  endDate: Type.Optional(DateTime),
  sortOrder: Type.Optional(StringEnum(['asc', 'desc'] as const)),
  ...PageQuery,
});
type ListQuery = Static<typeof ListTransactions>;

const TransactionIdParam = validator(Obj({ transactionId: IdOf('Transaction') }));

async function listTransactions(services: Services, env: PlatformEnv, query: ListQuery): Promise<Reply> {
  const from = instant('startDate', query.startDate);
  const to = instant('endDate', query.endDate);
  if (from !== undefined && to !== undefined && from > to) throw invalidField('endDate', 'must not be before startDate');
  await services.engine.settled();
  if (query.customerId !== undefined) customerIn(services.world, env.id, query.customerId);
  const ids = services.world.transactions.idsIn(env.id, query.customerId);
  const order = query.sortOrder ?? 'desc';
  const filtered = [query.platformCustomerId, query.status, query.type, query.reference, from, to].some((value) => value !== undefined);
  if (!filtered) return { status: 200, body: paginateAll(ids, query, (id) => services.world.transactions.get(id)!, renderTransaction, order) };
  const select = (id: string): Transaction | undefined => {
    const tx = services.world.transactions.get(id)!;
    if (query.platformCustomerId !== undefined && tx.platformCustomerId !== query.platformCustomerId) return undefined;
    if (query.status !== undefined && tx.status !== query.status) return undefined;
    if (query.type !== undefined && tx.type !== query.type) return undefined;
    if (query.reference !== undefined && tx.reference !== query.reference) return undefined;
    if (from !== undefined && tx.createdAt < from) return undefined;
    if (to !== undefined && tx.createdAt > to) return undefined;
    return tx;
  };
  return { status: 200, body: paginate(ids, query, select, renderTransaction, order) };
}

export const transactionRoutes: Route[] = [
  route<undefined, ListQuery>({
    method: 'GET',
    path: '/transactions',
    operationId: 'listTransactions',
    summary: 'List transactions (newest first unless sortOrder=asc)',
    tag: 'Transactions',
    query: validator(ListTransactions, { coerce: true }),
    response: ListOf(TransactionView),
    status: 200,
    handle: ({ services, env, query }) => listTransactions(services, env, query),
  }),
  route({
    method: 'GET',
    path: '/transactions/{transactionId}',
    operationId: 'getTransaction',
    summary: 'Read a transaction',
    tag: 'Transactions',
    response: TransactionView,
    status: 200,
    handle: async ({ services, env, params }) => {
      const { transactionId } = TransactionIdParam.parse(params);
      await services.engine.settled();
      const tx = services.world.transactions.inEnv(env.id, transactionId);
      if (tx === undefined) throw notFound('transactionId', 'transaction', transactionId);
      return { status: 200, body: renderTransaction(tx) };
    },
  }),
];
