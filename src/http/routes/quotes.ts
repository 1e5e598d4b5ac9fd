// Quotes (SERVICE_SPEC part 4, CONTRACT.md "Money"): create (optionally executing at once),
// read, execute (from an EMBEDDED_WALLET: with a stamp over the quote's payloadToSign,
// checked inside the decision). A quote's decisions hold its source account (the quote's owner), the
// destination account when it is credited, and both parties' customers (whose deletion
// stops new payments). The platform configuration is read, not held: it is one immutable
// record, and a quote priced against the bounds in force when it is decided is ordered
// before any later PATCH /config.
import { Type, type Static } from '@sinclair/typebox';
import type { Customer } from '../../../actors/customer.js';
import { LOCKED_AMOUNT_LIMIT } from '../../../actors/fx.js';
import { decideExecuteQuote, type ExecuteDecision } from '../../../actors/payment.js';
import { decideUseLookup, type LookupUsed } from '../../../actors/lookup.js';
import type { PlatformEnv } from '../../../actors/platform.js';
import {
  decideCreateQuote,
  LOCKED_SIDES,
  ownerOf,
  PURPOSES_OF_PAYMENT,
  renderQuote,
  type Payee,
  type Payer,
  type Quote,
  type QuoteParties,
} from '../../../actors/quote.js';
import type { DomainEvent, TimerMessage } from '../../../actors/world.js';
import type { EngineEvent } from '../../engine/state-machine.js';
import type { Services } from '../../services.js';
import { verifyWalletStamp } from '../../wallet/signed-request.js';
import { invalidField, notFound } from '../../../actors/errors.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { CurrencyCode, IdOf, UmaAddress } from '../schemas/resources.js';
import { QuoteView } from '../schemas/payments.js';
import { Obj, Str, StringEnum, validator } from '../validation.js';

const AccountRef = Str({ minLength: 1, maxLength: 64, description: 'InternalAccount:<id> or ExternalAccount:<id>' });

const CreateQuote = Obj({
  source: Obj({
    sourceType: Type.Optional(StringEnum(['ACCOUNT', 'REALTIME_FUNDING'] as const)),
    accountId: Type.Optional(AccountRef),
    currency: Type.Optional(CurrencyCode),
    customerId: Type.Optional(IdOf('Customer')),
  }),
  destination: Obj({
    destinationType: StringEnum(['ACCOUNT', 'UMA_ADDRESS'] as const),
    accountId: Type.Optional(AccountRef),
    umaAddress: Type.Optional(UmaAddress),
    currency: Type.Optional(CurrencyCode),
    paymentRail: Type.Optional(Str({ pattern: '^[A-Z][A-Z0-9_]{1,31}$', description: 'for example ACH, WIRE' })),
  }),
  lookupId: Type.Optional(IdOf('Lookup')),
  lockedCurrencySide: StringEnum(LOCKED_SIDES),
  lockedCurrencyAmount: Type.Integer({ minimum: 1, maximum: LOCKED_AMOUNT_LIMIT }),
  description: Type.Optional(Str({ maxLength: 1024 })),
  purposeOfPayment: Type.Optional(StringEnum(PURPOSES_OF_PAYMENT)),
  senderCustomerInfo: Type.Optional(Type.Record(Str({ minLength: 1, maxLength: 64 }), Str(), { maxProperties: 50 })),
  immediatelyExecute: Type.Optional(Type.Boolean()),
});
type CreateQuoteBody = Static<typeof CreateQuote>;

const QuoteIdParam = validator(Obj({ quoteId: IdOf('Quote') }));

/** Bank accounts the service can debit through the bank (direct pull): a customer's US account in USD. */
const PULL_ACCOUNT_TYPES: ReadonlySet<string> = new Set(['USD_ACCOUNT', 'US_ACCOUNT']);

/** The quote's source: an internal account of this environment, or a customer's US bank account (direct pull). */
function sourceOf(services: Services, env: PlatformEnv, id: string): Payer {
  const external = services.world.externalAccounts.get(id);
  if (external !== undefined && external.envId === env.id) {
    if (external.customerId === null || !PULL_ACCOUNT_TYPES.has(external.accountInfo.accountType) || external.currency !== 'USD') {
      throw invalidField('source.accountId', "a direct pull takes a customer's US bank account (USD_ACCOUNT or US_ACCOUNT) in USD");
    }
    return { kind: 'PULL', account: external, customerId: external.customerId };
  }
  const account = services.world.internalAccounts.inEnv(env.id, id);
  if (account === undefined) throw notFound('source.accountId', 'account', id);
  return { kind: 'INTERNAL', account };
}

function payeeOf(services: Services, env: PlatformEnv, id: string): Payee {
  const internal = services.world.internalAccounts.inEnv(env.id, id);
  if (internal !== undefined) return { kind: 'INTERNAL', account: internal, customer: customer(services, internal.customerId) };
  const external = services.world.externalAccounts.get(id);
  if (external !== undefined && external.envId === env.id) return { kind: 'EXTERNAL', account: external, customer: customer(services, external.customerId ?? '') };
  throw notFound('destination.accountId', 'account', id);
}

function customer(services: Services, id: string): Customer | undefined {
  return id === '' ? undefined : services.world.customers.get(id);
}

/**
 * The payer a quote body names: `{sourceType: ACCOUNT, accountId}` (sourceType may be
 * omitted), or money sent from outside: `{sourceType: REALTIME_FUNDING, currency,
 * customerId?}` or the spec's `{customerId, currency}`. A funding quote of a customer
 * belongs to the customer's actor, the platform's to the environment's.
 */
function payerOfBody(services: Services, env: PlatformEnv, source: CreateQuoteBody['source']): Payer {
  const funding = source.sourceType === 'REALTIME_FUNDING' || (source.sourceType === undefined && source.accountId === undefined);
  if (!funding) {
    if (source.accountId === undefined) throw invalidField('source.accountId', 'is required for an ACCOUNT source');
    if (source.currency !== undefined) throw invalidField('source.currency', 'an ACCOUNT source pays in its account currency');
    if (source.customerId !== undefined) throw invalidField('source.customerId', 'an ACCOUNT source names its account only');
    return sourceOf(services, env, source.accountId);
  }
  if (source.accountId !== undefined) throw invalidField('source.accountId', 'a REALTIME_FUNDING source names no account');
  if (source.currency === undefined) throw invalidField('source.currency', 'is required for a REALTIME_FUNDING source');
  if (source.sourceType === undefined && source.customerId === undefined) throw invalidField('source.customerId', 'a source without sourceType is {customerId, currency}');
  if (source.customerId === undefined) return { kind: 'FUNDING', currency: source.currency, customerId: '', ownerId: env.id };
  if (services.world.customers.inEnv(env.id, source.customerId) === undefined) throw notFound('source.customerId', 'customer', source.customerId);
  return { kind: 'FUNDING', currency: source.currency, customerId: source.customerId, ownerId: source.customerId };
}

/** The payer of an existing quote. */
export function payerOfQuote(services: Services, env: PlatformEnv, quote: Quote): Payer {
  if (quote.fundingReference !== undefined) return { kind: 'FUNDING', currency: quote.price.sendingCurrency, customerId: quote.sourceCustomerId, ownerId: quote.ownerId };
  return sourceOf(services, env, quote.sourceAccountId);
}

export function partiesOf(env: PlatformEnv, services: Services, source: Payer, payee: Payee): QuoteParties {
  const customerId = source.kind === 'INTERNAL' ? source.account.customerId : source.customerId;
  return { env, source, sourceCustomer: customer(services, customerId), payee };
}

/**
 * The payee of a new quote. An UMA address is paid through its receiver lookup, which the
 * quote uses up (the lookup is the environment actor's record): a local customer is paid
 * into its internal account of the chosen currency, a sandbox test address as it scripts.
 */
function payeeOfBody(services: Services, env: PlatformEnv, body: CreateQuoteBody, at: number): { payee: Payee; lookupUsed?: LookupUsed } {
  const d = body.destination;
  if (d.destinationType === 'ACCOUNT') {
    if (d.umaAddress !== undefined) throw invalidField('destination.umaAddress', 'only an UMA_ADDRESS destination takes an umaAddress');
    if (d.accountId === undefined) throw invalidField('destination.accountId', 'is required for an ACCOUNT destination');
    return { payee: payeeOf(services, env, d.accountId) };
  }
  if (d.accountId !== undefined) throw invalidField('destination.accountId', 'an UMA_ADDRESS destination names no account');
  if (d.umaAddress === undefined) throw invalidField('destination.umaAddress', 'is required for an UMA_ADDRESS destination');
  if (body.lookupId === undefined) throw invalidField('lookupId', 'is required for an UMA_ADDRESS destination: look the receiver up first (GET /receiver/uma/{address})');
  const used = decideUseLookup(
    services.world.lookups.inEnv(env.id, body.lookupId),
    {
      lookupId: body.lookupId,
      umaAddress: d.umaAddress,
      ...(d.currency !== undefined ? { currency: d.currency } : {}),
      ...(body.senderCustomerInfo !== undefined ? { senderCustomerInfo: body.senderCustomerInfo } : {}),
      // The quote's id is only known once it is decided; the route sets it on the event.
      quoteId: '',
    },
    at,
  );
  const currency = used.currency.currency;
  const receiver = used.receiver;
  if (receiver.kind === 'SANDBOX_TEST_ADDRESS') {
    return { payee: { kind: 'UMA_TEST', umaAddress: receiver.umaAddress, currency, behaviour: receiver.behaviour, customer: undefined }, lookupUsed: used.event };
  }
  if (receiver.kind !== 'CUSTOMER') throw invalidField('destination.umaAddress', 'the lookup is not for an UMA address');
  const accounts = services.world.internalAccounts;
  const accountId = accounts.idsOwnedBy(receiver.customerId).find((id) => accounts.get(id)?.currency === currency);
  if (accountId === undefined) throw invalidField('destination.currency', `${receiver.umaAddress} holds no ${currency} account`);
  return { payee: { kind: 'INTERNAL', account: accounts.get(accountId)!, customer: customer(services, receiver.customerId) }, lookupUsed: used.event };
}

/** The payee of an existing quote. */
export function payeeOfQuote(services: Services, env: PlatformEnv, quote: Quote): Payee {
  if (quote.umaTestBehaviour !== undefined && quote.destination.destinationType === 'UMA_ADDRESS') {
    return { kind: 'UMA_TEST', umaAddress: quote.destination.umaAddress, currency: quote.price.receivingCurrency, behaviour: quote.umaTestBehaviour, customer: undefined };
  }
  return payeeOf(services, env, quote.payeeAccountId!);
}

/** Every actor a decision about these parties reads or writes. */
export function actorsOf(parties: QuoteParties, crediting: boolean): string[] {
  const actors = [ownerOf(parties.source)];
  if (parties.sourceCustomer !== undefined && !actors.includes(parties.sourceCustomer.id)) actors.push(parties.sourceCustomer.id);
  if (parties.payee.customer !== undefined && !actors.includes(parties.payee.customer.id)) actors.push(parties.payee.customer.id);
  if (crediting && parties.payee.kind === 'INTERNAL' && !actors.includes(parties.payee.account.id)) actors.push(parties.payee.account.id);
  return actors;
}

/**
 * An EMBEDDED_WALLET pays only on a stamp over the quote's payloadToSign by one of its live
 * sessions (SERVICE_SPEC 5.6). Called inside the decision that holds the source account,
 * which is the wallet's actor, so no session revocation or expiry lands between the check
 * and the payment.
 */
async function checkWalletSignature(ctx: RouteContext<unknown, unknown>, quote: Quote, parties: QuoteParties, at: number): Promise<void> {
  if (parties.source.kind !== 'INTERNAL' || parties.source.account.type !== 'EMBEDDED_WALLET') return;
  if (quote.payloadToSign === undefined) throw new Error(`quote ${quote.id} from EMBEDDED_WALLET ${quote.sourceAccountId} has no payloadToSign`);
  await verifyWalletStamp(ctx.services, ctx.env.environment, quote.sourceAccountId, ctx.headers.walletSignature, quote.payloadToSign, at);
}

function engineEventsOf(services: Services, quote: Quote, decision: ExecuteDecision, at: number): Array<DomainEvent | EngineEvent<TimerMessage>> {
  const events: Array<DomainEvent | EngineEvent<TimerMessage>> = [services.engine.cancelTimer(quote.id), ...decision.events];
  const t = decision.timer;
  if (t !== undefined) events.push(services.engine.timer(t.due, t.actorIds, t.message, at, t.key));
  return events;
}

function createQuote(ctx: RouteContext<CreateQuoteBody, undefined>): Promise<Reply> {
  const { services, env, body } = ctx;
  const known = partiesOf(env, services, payerOfBody(services, env, body.source), payeeOfBody(services, env, body, services.engine.clock.now()).payee);
  const execute = body.immediatelyExecute === true;
  const actors = actorsOf(known, execute);
  // A quote to an UMA address uses up its lookup, a record of the environment actor.
  if (body.destination.destinationType === 'UMA_ADDRESS') actors.push(env.id);
  return ctx.exec(actors, (at) => {
    // Read again now that the actors are held.
    const { payee, lookupUsed } = payeeOfBody(services, env, body, at);
    const parties = partiesOf(env, services, payerOfBody(services, env, body.source), payee);
    const quote = decideCreateQuote(parties, body, at);
    const events: Array<DomainEvent | EngineEvent<TimerMessage>> = [{ type: 'quote.created', quote }];
    if (lookupUsed !== undefined) events.push({ ...lookupUsed, quoteId: quote.id });
    if (execute) {
      const decision = decideExecuteQuote(quote, parties, services.world, at);
      events.push(...decision.events);
      const t = decision.timer;
      if (t !== undefined) events.push(services.engine.timer(t.due, t.actorIds, t.message, at, t.key));
    } else {
      events.push(services.engine.timer(quote.expiresAt, [quote.ownerId], { type: 'quote.expire', quoteId: quote.id }, at, quote.id));
    }
    return { events, reply: () => ({ status: 201, body: renderQuote(services.world.quotes.get(quote.id)!) }) };
  });
}

/** The quote `id` of this environment; a 404 names `field`, where the request gave the id. */
export function quoteOf(services: Services, env: PlatformEnv, id: string, field = 'quoteId'): Quote {
  const quote = services.world.quotes.inEnv(env.id, id);
  if (quote === undefined) throw notFound(field, 'quote', id);
  return quote;
}

function executeQuote(ctx: RouteContext<undefined, undefined>): Promise<Reply> {
  const { services, env } = ctx;
  const { quoteId } = QuoteIdParam.parse(ctx.params);
  const known = quoteOf(services, env, quoteId);
  const knownParties = partiesOf(env, services, payerOfQuote(services, env, known), payeeOfQuote(services, env, known));
  return ctx.exec(actorsOf(knownParties, true), async (at) => {
    const quote = quoteOf(services, env, quoteId);
    const parties = partiesOf(env, services, payerOfQuote(services, env, quote), payeeOfQuote(services, env, quote));
    await checkWalletSignature(ctx, quote, parties, at);
    // The execute checks the environment's intake, which other actors' decisions change
    // too: it decides in its last step, applied in the same run (LastStep in the engine).
    // The quote and parties are the held actors' own state: nothing else changes them.
    return () => {
      const decision = decideExecuteQuote(quote, parties, services.world, at);
      return { events: engineEventsOf(services, quote, decision, at), reply: () => ({ status: 200, body: renderQuote(services.world.quotes.get(quoteId)!) }) };
    };
  });
}

export const quoteRoutes: Route[] = [
  route<CreateQuoteBody>({
    method: 'POST',
    path: '/quotes',
    summary: 'Create a quote from an internal account to an internal or external account (immediatelyExecute: execute it at once)',
    tag: 'Quotes',
    body: validator(CreateQuote),
    response: QuoteView,
    status: 201,
    idempotent: true,
    handle: (ctx) => createQuote(ctx),
  }),
  route({
    method: 'GET',
    path: '/quotes/{quoteId}',
    summary: 'Read a quote',
    tag: 'Quotes',
    response: QuoteView,
    status: 200,
    handle: async ({ services, env, params }) => {
      const { quoteId } = QuoteIdParam.parse(params);
      await services.engine.settled();
      return { status: 200, body: renderQuote(quoteOf(services, env, quoteId)) };
    },
  }),
  route({
    method: 'POST',
    path: '/quotes/{quoteId}/execute',
    summary: 'Execute a quote: moves the money and creates its transaction (an EMBEDDED_WALLET source needs Service-Wallet-Signature over its payloadToSign)',
    tag: 'Quotes',
    response: QuoteView,
    status: 200,
    idempotent: true,
    handle: (ctx) => executeQuote(ctx),
  }),
];

