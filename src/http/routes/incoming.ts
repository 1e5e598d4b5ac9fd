// Incoming UMA payments (actors/incoming.ts): the sandbox simulation that starts one, and
// the platform's approve and reject; the commands are in actors/commands/incoming.ts. The
// webhook answer that also decides is handled by the delivery worker (src/webhooks/delivery.ts).
import { Type, type Static } from '@sinclair/typebox';
import { receiveUmaPayment, settleIncomingPayment } from '../../../actors/commands/incoming.js';
import type { IncomingOutcome } from '../../../actors/incoming.js';
import type { Transaction } from '../../../actors/transaction.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { recordReply } from '../record-reply.js';
import { TransactionView } from '../schemas/payments.js';
import { CurrencyCode, IdOf, UmaAddress } from '../schemas/resources.js';
import { Obj, validator, type Parsed } from '../validation.js';

const Receive = Obj(
  {
    senderUmaAddress: UmaAddress,
    receivingCurrencyCode: CurrencyCode,
    receivingCurrencyAmount: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'smallest unit of the currency' }),
    receiverUmaAddress: Type.Optional(UmaAddress),
    customerId: Type.Optional(IdOf('Customer')),
  },
  { $id: 'ReceiveSandboxUmaPaymentRequest' },
);
type ReceiveBody = Static<typeof Receive>;
const TransactionIdParam = validator(Obj({ transactionId: IdOf('Transaction') }));

const settled = (tx: Transaction): Reply => recordReply(200, 'Transaction', tx);

function settle(outcome: IncomingOutcome) {
  return (ctx: RouteContext<undefined, undefined, Parsed<typeof TransactionIdParam>>): Promise<Reply> =>
    ctx.run(settleIncomingPayment, { envId: ctx.env.id, transactionId: ctx.params.transactionId, outcome }, settled);
}

export const incomingRoutes: Route[] = [
  route<ReceiveBody>({
    method: 'POST',
    path: '/sandbox/uma/receive',
    operationId: 'receiveSandboxUmaPayment',
    summary: 'Simulate an incoming UMA payment from a sandbox address (sandbox only); the platform approves it',
    tag: 'Sandbox',
    permission: 'TRANSACT',
    body: validator(Receive),
    response: TransactionView,
    status: 201,
    sandboxOnly: true,
    idempotent: true,
    handle: (ctx) => ctx.run(receiveUmaPayment, { envId: ctx.env.id, payment: ctx.body }, (tx) => recordReply(201, 'Transaction', tx)),
  }),
  route({
    method: 'POST',
    path: '/transactions/{transactionId}/approve',
    operationId: 'approveTransaction',
    summary: 'Approve a pending incoming payment (after answering its webhook 202)',
    tag: 'Transactions',
    permission: 'TRANSACT',
    params: TransactionIdParam,
    response: TransactionView,
    status: 200,
    idempotent: true,
    handle: settle({ kind: 'APPROVE' }),
  }),
  route({
    method: 'POST',
    path: '/transactions/{transactionId}/reject',
    operationId: 'rejectTransaction',
    summary: 'Reject a pending incoming payment (after answering its webhook 202)',
    tag: 'Transactions',
    permission: 'TRANSACT',
    params: TransactionIdParam,
    response: TransactionView,
    status: 200,
    idempotent: true,
    handle: settle({ kind: 'REJECT' }),
  }),
];
