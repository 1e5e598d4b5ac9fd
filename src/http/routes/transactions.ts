// Transactions (CONTRACT.md "HTTP surface" and "Money"): the list with its filters, one
// transaction, and what the platform does to one after it is made (CONTRACT.md "Today's
// clients, second wave"): cancel a bank payout still in flight, confirm a receipt's delivery.
import { Type, type Static } from '@sinclair/typebox';
import { cancelTransaction, confirmReceiptDelivery } from '../../../actors/commands/transactions.js';
import { renderTransaction, TRANSACTION_STATUSES, TRANSACTION_TYPES, type Transaction } from '../../../actors/transaction.js';
import { transaction, transactionPage } from '../../../actors/queries/transactions.js';
import { invalidField } from '../../../actors/errors.js';
import { PageQuery } from '../pagination.js';
import { recordReply } from '../record-reply.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { IdOf, ListOf } from '../schemas/resources.js';
import { TransactionView } from '../schemas/payments.js';
import { DateTime, instant, Obj, StringEnum, Text, validator, type Parsed } from '../validation.js';

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
type TransactionIdParams = Parsed<typeof TransactionIdParam>;

/** The platform's own note of why it cancels: accepted and not kept (the vendor's clients send it for their records). */
const CancelBody = Obj({ reason: Type.Optional(Text({ maxLength: 255 })) }, { $id: 'CancelTransactionRequest' });
const ConfirmBody = Obj({ receiptDeliveryConfirmedAt: Type.Optional(DateTime) }, { $id: 'ConfirmReceiptDeliveryRequest' });
type ConfirmRequest = Static<typeof ConfirmBody>;

const answered = (tx: Transaction): Reply => recordReply(200, 'Transaction', tx);

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
  route<Static<typeof CancelBody>, undefined, TransactionIdParams>({
    method: 'POST',
    path: '/transactions/{transactionId}/cancel',
    permission: 'TRANSACT',
    operationId: 'cancelTransaction',
    summary: 'Cancel a bank payout still in flight: it fails as CANCELLED and is refunded with its fees (else 409 TRANSACTION_NOT_CANCELLABLE)',
    tag: 'Transactions',
    params: TransactionIdParam,
    body: validator(CancelBody),
    response: TransactionView,
    status: 200,
    idempotent: true,
    handle: (ctx) => ctx.run(cancelTransaction, { envId: ctx.env.id, transactionId: ctx.params.transactionId }, answered),
  }),
  route<ConfirmRequest, undefined, TransactionIdParams>({
    method: 'POST',
    path: '/transactions/{transactionId}/confirm',
    permission: 'TRANSACT',
    operationId: 'confirmReceiptDelivery',
    summary: "Record when the transaction's receipt reached the customer (given, or now); a later call overwrites it",
    tag: 'Transactions',
    params: TransactionIdParam,
    body: validator(ConfirmBody),
    response: TransactionView,
    status: 200,
    handle: (ctx) => {
      const confirmedAt = instant('receiptDeliveryConfirmedAt', ctx.body.receiptDeliveryConfirmedAt);
      const input = { envId: ctx.env.id, transactionId: ctx.params.transactionId, ...(confirmedAt !== undefined ? { confirmedAt } : {}) };
      return ctx.run(confirmReceiptDelivery, input, answered);
    },
  }),
];
