// Transfers (CONTRACT.md "Money"): POST /transfer-in moves money from an external bank
// account into an internal account, POST /transfer-out the other way; same currency, no
// quote. A decision holds the internal account (which owns the transaction) and the
// owning customer (whose deletion stops transfers); the external account is read.
import { Type, type Static } from '@sinclair/typebox';
import type { Customer } from '../../../actors/customer.js';
import { notFound } from '../../../actors/errors.js';
import { MAX_FUND_AMOUNT } from '../../../actors/internal-account.js';
import type { ExecuteDecision } from '../../../actors/payment.js';
import type { PlatformEnv } from '../../../actors/platform.js';
import { renderTransaction } from '../../../actors/transaction.js';
import { decideTransferIn, decideTransferOut, type TransferParties } from '../../../actors/transfer.js';
import type { DomainEvent, TimerMessage } from '../../../actors/world.js';
import type { EngineEvent } from '../../engine/state-machine.js';
import type { Services } from '../../services.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { TransactionView } from '../schemas/payments.js';
import { Obj, Str, validator } from '../validation.js';

const AccountId = (description: string) => Str({ minLength: 1, maxLength: 64, description });
const Amount = Type.Integer({ minimum: 1, maximum: MAX_FUND_AMOUNT, description: 'in the smallest unit of the currency' });

const TransferIn = Obj({
  source: Obj({ accountId: AccountId('ExternalAccount:<id>') }),
  destination: Obj({ accountId: AccountId('InternalAccount:<id>') }),
  amount: Amount,
});
type TransferInBody = Static<typeof TransferIn>;

const TransferOut = Obj({
  source: Obj({ accountId: AccountId('InternalAccount:<id>') }),
  destination: Obj({
    accountId: AccountId('ExternalAccount:<id>'),
    paymentRail: Type.Optional(Str({ pattern: '^[A-Z][A-Z0-9_]{1,31}$', description: 'for example ACH, WIRE' })),
  }),
  amount: Type.Optional(Amount),
  remittanceInformation: Type.Optional(Str({ maxLength: 1024 })),
});
type TransferOutBody = Static<typeof TransferOut>;

function partiesOf(services: Services, env: PlatformEnv, internalId: string, internalField: string, externalId: string, externalField: string): TransferParties {
  const world = services.world;
  const internal = world.internalAccounts.inEnv(env.id, internalId);
  if (internal === undefined) throw notFound(internalField, 'internal account', internalId);
  const external = world.externalAccounts.get(externalId);
  if (external === undefined || external.envId !== env.id) throw notFound(externalField, 'external account', externalId);
  const customer: Customer | undefined = internal.customerId === '' ? undefined : world.customers.get(internal.customerId);
  return { environment: env.environment, internal, external, customer };
}

function actorsOf(parties: TransferParties): string[] {
  return parties.customer === undefined ? [parties.internal.id] : [parties.internal.id, parties.customer.id];
}

function transfer(ctx: RouteContext<unknown, undefined>, read: () => TransferParties, decide: (parties: TransferParties, at: number) => ExecuteDecision): Promise<Reply> {
  const { services } = ctx;
  return ctx.exec(actorsOf(read()), (at) => {
    // Read again now that the actors are held.
    const d = decide(read(), at);
    const events: Array<DomainEvent | EngineEvent<TimerMessage>> = [...d.events];
    const t = d.timer;
    if (t !== undefined) events.push(services.engine.timer(t.due, t.actorIds, t.message, at, t.key));
    const txId = d.events[0]!.transactions[0]!.id;
    return { events, reply: () => ({ status: 201, body: renderTransaction(services.world.transactions.get(txId)!) }) };
  });
}

export const transferRoutes: Route[] = [
  route<TransferInBody>({
    method: 'POST',
    path: '/transfer-in',
    summary: 'Move money from an external bank account into an internal account of the same currency',
    tag: 'Transfers',
    body: validator(TransferIn),
    response: TransactionView,
    status: 201,
    idempotent: true,
    handle: (ctx) => {
      const { services, env, body } = ctx;
      const read = () => partiesOf(services, env, body.destination.accountId, 'destination.accountId', body.source.accountId, 'source.accountId');
      return transfer(ctx, read, (parties, at) => decideTransferIn(parties, { amount: body.amount }, services.world, at));
    },
  }),
  route<TransferOutBody>({
    method: 'POST',
    path: '/transfer-out',
    summary: 'Move money from an internal account to an external bank account of the same currency (amount omitted: the whole balance)',
    tag: 'Transfers',
    body: validator(TransferOut),
    response: TransactionView,
    status: 201,
    idempotent: true,
    handle: (ctx) => {
      const { services, env, body } = ctx;
      const read = () => partiesOf(services, env, body.source.accountId, 'source.accountId', body.destination.accountId, 'destination.accountId');
      const input = {
        ...(body.amount !== undefined ? { amount: body.amount } : {}),
        ...(body.destination.paymentRail !== undefined ? { paymentRail: body.destination.paymentRail } : {}),
        ...(body.remittanceInformation !== undefined ? { remittanceInformation: body.remittanceInformation } : {}),
      };
      return transfer(ctx, read, (parties, at) => decideTransferOut(parties, input, at));
    },
  }),
];
