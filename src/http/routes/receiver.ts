// Receiver lookup (SERVICE_SPEC part 4; CONTRACT.md "Money"): GET /receiver/uma/{address},
// its older spelling GET /receiver/{address}, and GET /receiver/external-account/{id}. Each
// answer is a new durable Lookup (actors/lookup.ts) that a quote then uses, so the GET
// decides under the environment actor, which owns the UMA index and the lookups.
import { Type, type Static } from '@sinclair/typebox';
import type { Customer } from '../../../actors/customer.js';
import {
  decideCreateLookup,
  externalAccountReceiver,
  LOOKUP_TTL_MS,
  MAX_LOOKUPS_PER_ENV,
  renderLookup,
  resolveUmaReceiver,
  sendingCurrencyFor,
  type LookupReceiver,
  type LookupView,
} from '../../../actors/lookup.js';
import type { PlatformEnv } from '../../../actors/platform.js';
import type { Services } from '../../services.js';
import { notFound, rateLimited } from '../../../actors/errors.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { CurrencyView, IdOf, UmaAddress } from '../schemas/resources.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { List, Obj, Str, validator } from '../validation.js';
import { customerOf } from './customers.js';

const LookupQuery = Obj({
  customerId: Type.Optional(IdOf('Customer')),
  senderUmaAddress: Type.Optional(UmaAddress),
});
type LookupQueryValue = Static<typeof LookupQuery>;

const UmaParam = validator(Obj({ receiverUmaAddress: UmaAddress }));
const AccountParam = validator(Obj({ accountId: IdOf('ExternalAccount') }));

const PayerDataField = Obj({ name: Str(), mandatory: Type.Boolean() });
const LookupCurrencyView = Obj({
  currency: CurrencyView,
  estimatedExchangeRate: Type.Optional(
    Type.Number({ description: "Sending major units per receiving major unit (as a quote's exchangeRate), from the sender's default currency; an estimate, not a locked rate" }),
  ),
  min: Type.Integer({ description: "Smallest amount the receiver takes, in the receiving currency's smallest unit" }),
  max: Type.Integer({ description: "Largest amount the receiver takes, in the receiving currency's smallest unit" }),
});
const lookupProperties = {
  lookupId: IdOf('Lookup'),
  supportedCurrencies: List(LookupCurrencyView, { minItems: 1 }),
  requiredPayerDataFields: List(PayerDataField, {
    description: "Payer data the receiver asks for; a quote's senderCustomerInfo must carry every mandatory one",
  }),
  expiresAt: Str({ format: 'date-time', description: 'The lookup serves one quote made before this time (5 minutes)' }),
};
const UmaLookupView = Obj({ ...lookupProperties, receiverUmaAddress: UmaAddress });
const AccountLookupView = Obj({ ...lookupProperties, accountId: IdOf('ExternalAccount') });

/** The sending customer named by the query, if any: it must be a customer of this environment. */
function senderOf(services: Services, env: PlatformEnv, query: LookupQueryValue): Customer | undefined {
  return query.customerId === undefined ? undefined : customerOf(services, env, query.customerId);
}

/**
 * Records a lookup of the receiver `find` resolves (undefined: 404) under the environment
 * actor. Refuses with 429 when the environment holds MAX_LOOKUPS_PER_ENV lookups.
 */
async function lookUp(
  ctx: RouteContext<undefined, LookupQueryValue>,
  field: string,
  what: string,
  find: () => { receiver: LookupReceiver; currencies: readonly string[] } | undefined,
): Promise<Reply> {
  const { services, env, query } = ctx;
  await services.engine.settled();
  senderOf(services, env, query);
  return ctx.exec([env.id], (at) => {
    const current = services.world.envs.get(env.id)!;
    const found = find();
    if (found === undefined) throw notFound(field, 'receiver', what);
    const lookups = services.world.lookups;
    if (lookups.heldAfterPrune(env.id, at) >= MAX_LOOKUPS_PER_ENV) {
      const freedAt = lookups.oldestPrunedAt(env.id) ?? at + LOOKUP_TTL_MS;
      throw rateLimited(`this environment holds ${MAX_LOOKUPS_PER_ENV} receiver lookups`, Math.max(1, Math.ceil((freedAt - at) / 1000)));
    }
    const event = decideCreateLookup(
      current,
      {
        ...found,
        sendingCurrency: sendingCurrencyFor(current, senderOf(services, env, query)),
        ...(query.customerId !== undefined ? { senderCustomerId: query.customerId } : {}),
        ...(query.senderUmaAddress !== undefined ? { senderUmaAddress: query.senderUmaAddress } : {}),
      },
      at,
    );
    const id = event.lookup.id;
    return { events: [event], reply: () => ({ status: 200, body: renderLookup(services.world.lookups.inEnv(env.id, id)!) }) };
  });
}

function umaLookup(ctx: RouteContext<undefined, LookupQueryValue>): Promise<Reply> {
  const { receiverUmaAddress } = UmaParam.parse(ctx.params);
  return lookUp(ctx, 'receiverUmaAddress', receiverUmaAddress, () => resolveUmaReceiver(ctx.services.world.envs.get(ctx.env.id)!, receiverUmaAddress, ctx.services.world.customers));
}

const umaRoute = (path: string, summary: string) =>
  route<undefined, LookupQueryValue>({
    method: 'GET',
    path,
    summary,
    tag: 'Receiver lookup',
    query: validator(LookupQuery, { coerce: true }),
    response: UmaLookupView,
    status: 200,
    handle: umaLookup,
  });

export const receiverRoutes: Route[] = [
  umaRoute(
    '/receiver/uma/{receiverUmaAddress}',
    'Look up an UMA receiver: a customer of this environment or, in the sandbox, a test address; valid for one quote within 5 minutes',
  ),
  umaRoute('/receiver/{receiverUmaAddress}', 'Look up an UMA receiver (the older path of GET /receiver/uma/{receiverUmaAddress})'),
  route<undefined, LookupQueryValue>({
    method: 'GET',
    path: '/receiver/external-account/{accountId}',
    summary: 'Look up an external account of this environment as a receiver',
    tag: 'Receiver lookup',
    query: validator(LookupQuery, { coerce: true }),
    response: AccountLookupView,
    status: 200,
    handle: (ctx) => {
      const { accountId } = AccountParam.parse(ctx.params);
      return lookUp(ctx, 'accountId', accountId, () => {
        const account = ctx.services.world.externalAccounts.get(accountId);
        return account?.envId === ctx.env.id ? externalAccountReceiver(account) : undefined;
      });
    },
  }),
];

/** Fails to compile when the published views and the domain's drift apart. */
export type LookupViewCheck = Holds<Same<Static<typeof UmaLookupView> | Static<typeof AccountLookupView>, LookupView>>;
