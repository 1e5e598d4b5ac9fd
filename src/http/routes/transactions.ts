// Transactions (CONTRACT.md "HTTP surface" and "Money"): the list with its filters, and
// one transaction. Reads only.
import { Type, type Static } from '@sinclair/typebox';
import { renderTransaction, TRANSACTION_STATUSES, TRANSACTION_TYPES } from '../../../actors/transaction.js';
import { transaction, transactionPage } from '../../../actors/queries/transactions.js';
import { invalidField } from '../../../actors/errors.js';
import { PageQuery } from '../pagination.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
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

async function listTransactions(ctx: RouteContext<undefined, ListQuery>): Promise<Reply> {
  const { query } = ctx;
  const from = instant('startDate', query.startDate);
  const to = instant('endDate', query.endDate);
  if (from !== undefined && to !== undefined && from > to) throw invalidField('endDate', 'must not be before startDate');
  const { customerId, platformCustomerId, status, type, reference } = query;
  const filter = { customerId, platformCustomerId, status, type, reference, from, to };
  const page = await ctx.read(transactionPage, { envId: ctx.env.id, filter, page: query, order: query.sortOrder ?? 'desc' });
  return { status: 200, body: { ...page, data: page.data.map(renderTransaction) } };
}

export const transactionRoutes: Route[] = [
  route<undefined, ListQuery>({
    method: 'GET',
    path: '/transactions',
    operationId: 'listTransactions',
    summary: 'List transactions (newest first unless sortOrder=asc)',
    tag: 'Transactions',
    permission: 'VIEW',
    query: validator(ListTransactions, { coerce: true }),
    response: ListOf(TransactionView),
    status: 200,
    handle: listTransactions,
  }),
  route({
    method: 'GET',
    path: '/transactions/{transactionId}',
    operationId: 'getTransaction',
    summary: 'Read a transaction',
    tag: 'Transactions',
    permission: 'VIEW',
    params: TransactionIdParam,
    response: TransactionView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderTransaction(await read(transaction, { envId: env.id, transactionId: params.transactionId })) }),
  }),
];
