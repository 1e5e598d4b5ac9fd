// Incoming UMA payments (actors/incoming.ts): the sandbox simulation that starts one, and
// the platform's approve and reject. The webhook answer that also decides is handled by
// the delivery worker (src/webhooks/delivery.ts).
import { Type, type Static } from '@sinclair/typebox';
import { approvalTimerKey, decideReceive, decideSettleIncoming, type IncomingOutcome } from '../../../actors/incoming.js';
import { assertActive } from '../../../actors/customer.js';
import { DomainError, invalidField, notFound } from '../../../actors/errors.js';
import { SANDBOX_UMA_DOMAIN } from '../../../actors/platform.js';
import { renderTransaction } from '../../../actors/transaction.js';
import type { DomainEvent } from '../../../actors/world.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { TransactionView } from '../schemas/payments.js';
import { CurrencyCode, IdOf, UmaAddress } from '../schemas/resources.js';
import { Obj, validator } from '../validation.js';

const Receive = Obj({
  senderUmaAddress: UmaAddress,
  receivingCurrencyCode: CurrencyCode,
  receivingCurrencyAmount: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'smallest unit of the currency' }),
  receiverUmaAddress: Type.Optional(UmaAddress),
  customerId: Type.Optional(IdOf('Customer')),
});
type ReceiveBody = Static<typeof Receive>;
const TransactionIdParam = validator(Obj({ transactionId: IdOf('Transaction') }));

function receive(ctx: RouteContext<ReceiveBody, undefined>): Promise<Reply> {
  const { services, env, body } = ctx;
  if (body.receiverUmaAddress === undefined && body.customerId === undefined) {
    throw invalidField('receiverUmaAddress', 'receiverUmaAddress or customerId is required');
  }
  if (!body.senderUmaAddress.toLowerCase().endsWith(`@${SANDBOX_UMA_DOMAIN}`)) {
    throw invalidField('senderUmaAddress', `must be a sandbox address (@${SANDBOX_UMA_DOMAIN})`);
  }
  const world = services.world;
  /** The receiver and its account of the currency, as the state has them now. */
  const resolve = (): { customerId: string; accountId: string } => {
    const customerId = body.customerId ?? world.customers.umaOwner(env.id, body.receiverUmaAddress!);
    const customer = customerId === undefined ? undefined : world.customers.inEnv(env.id, customerId);
    if (customer === undefined || (body.receiverUmaAddress !== undefined && customer.umaAddress !== body.receiverUmaAddress)) {
      throw body.receiverUmaAddress !== undefined ? notFound('receiverUmaAddress', 'receiver', body.receiverUmaAddress) : notFound('customerId', 'receiver', body.customerId ?? '');
    }
    assertActive(customer);
    const accountId = world.internalAccounts.idsOwnedBy(customer.id).find((id) => world.internalAccounts.get(id)!.currency === body.receivingCurrencyCode);
    if (accountId === undefined) throw invalidField('receivingCurrencyCode', `customer ${customer.id} has no ${body.receivingCurrencyCode} account`);
    return { customerId: customer.id, accountId };
  };
  const first = resolve();
  // The environment (its UMA address index), the customer, and the receiving account that
  // will own the transaction. Resolved again once held: an address may have moved meanwhile.
  return ctx.exec([env.id, first.customerId, first.accountId], (at) => {
    const { customerId, accountId } = resolve();
    if (customerId !== first.customerId || accountId !== first.accountId) throw new DomainError('CONFLICT', 'the receiver changed while the payment was recorded; try again');
    const approveNow = world.envs.get(env.id)!.config.webhookEndpoint === '';
    const deposit = world.externalAccounts.defaultDepositAccount(customerId);
    const events = decideReceive(body, world.internalAccounts.get(accountId)!, world.customers.get(customerId)!, deposit, approveNow, world, at);
    const txId = events[0]!.transactions[0]!.id;
    return { events, reply: () => ({ status: 201, body: renderTransaction(world.transactions.get(txId)!) }) };
  });
}

function settle(outcome: IncomingOutcome) {
  return async (ctx: RouteContext<undefined, undefined>): Promise<Reply> => {
    const { services, env } = ctx;
    const { transactionId } = TransactionIdParam.parse(ctx.params);
    const world = services.world;
    const owner = world.transactions.inEnv(env.id, transactionId)?.accountId;
    if (owner === undefined) throw notFound('transactionId', 'transaction', transactionId);
    return ctx.exec([owner], (at) => {
      const tx = world.transactions.get(transactionId)!;
      const events: DomainEvent[] = decideSettleIncoming(tx, world.internalAccounts.get(owner)!, outcome, at);
      return {
        events: [...events, services.engine.cancelTimer(approvalTimerKey(transactionId))],
        reply: () => ({ status: 200, body: renderTransaction(world.transactions.get(transactionId)!) }),
      };
    });
  };
}

export const incomingRoutes: Route[] = [
  route<ReceiveBody>({
    method: 'POST',
    path: '/sandbox/uma/receive',
    summary: 'Simulate an incoming UMA payment from a sandbox address (sandbox only); the platform approves it',
    tag: 'Sandbox',
    body: validator(Receive),
    response: TransactionView,
    status: 201,
    sandboxOnly: true,
    idempotent: true,
    handle: receive,
  }),
  route({
    method: 'POST',
    path: '/transactions/{transactionId}/approve',
    summary: 'Approve a pending incoming payment (after answering its webhook 202)',
    tag: 'Transactions',
    response: TransactionView,
    status: 200,
    idempotent: true,
    handle: settle({ kind: 'APPROVE' }),
  }),
  route({
    method: 'POST',
    path: '/transactions/{transactionId}/reject',
    summary: 'Reject a pending incoming payment (after answering its webhook 202)',
    tag: 'Transactions',
    response: TransactionView,
    status: 200,
    idempotent: true,
    handle: settle({ kind: 'REJECT' }),
  }),
];
