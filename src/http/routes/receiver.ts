// Receiver lookup (SERVICE_SPEC part 4; CONTRACT.md "Money"): GET /receiver/uma/{address},
// its older spelling GET /receiver/{address}, and GET /receiver/external-account/{id}. Each
// answer is a new durable Lookup (actors/lookup.ts) that a quote then uses, so the GET
// runs a command (actors/commands/receiver.ts).
import { Type, type Static } from '@sinclair/typebox';
import { renderLookup, type Lookup, type LookupView } from '../../../actors/lookup.js';
import { lookUpReceiver, type LookupTarget } from '../../../actors/commands/receiver.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { CurrencyView, IdOf, UmaAddress } from '../schemas/resources.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { List, Obj, Str, validator, type Parsed } from '../validation.js';

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
const UmaLookupView = Obj({ ...lookupProperties, receiverUmaAddress: UmaAddress }, { $id: 'UmaReceiverLookup' });
const AccountLookupView = Obj({ ...lookupProperties, accountId: IdOf('ExternalAccount') }, { $id: 'ExternalAccountReceiverLookup' });

const lookupReply = (lookup: Lookup): Reply => ({ status: 200, body: renderLookup(lookup) });

/** Records a lookup of `target` for the sender the query names (actors/commands/receiver.ts). */
function lookUp(ctx: RouteContext<undefined, LookupQueryValue, unknown>, target: LookupTarget): Promise<Reply> {
  const { customerId, senderUmaAddress } = ctx.query;
  const input = {
    envId: ctx.env.id,
    target,
    ...(customerId !== undefined ? { senderCustomerId: customerId } : {}),
    ...(senderUmaAddress !== undefined ? { senderUmaAddress } : {}),
  };
  return ctx.run(lookUpReceiver, input, lookupReply);
}

function umaLookup(ctx: RouteContext<undefined, LookupQueryValue, Parsed<typeof UmaParam>>): Promise<Reply> {
  return lookUp(ctx, { umaAddress: ctx.params.receiverUmaAddress });
}

const umaRoute = (path: string, operationId: string, summary: string) =>
  route<undefined, LookupQueryValue, Parsed<typeof UmaParam>>({
    method: 'GET',
    path,
    operationId,
    summary,
    tag: 'Receiver lookup',
    permission: 'VIEW',
    query: validator(LookupQuery, { coerce: true }),
    params: UmaParam,
    response: UmaLookupView,
    status: 200,
    handle: umaLookup,
  });

export const receiverRoutes: Route[] = [
  umaRoute(
    '/receiver/uma/{receiverUmaAddress}',
    'lookUpUmaReceiver',
    'Look up an UMA receiver: a customer of this environment or, in the sandbox, a test address; valid for one quote within 5 minutes',
  ),
  umaRoute('/receiver/{receiverUmaAddress}', 'lookUpUmaReceiverByOlderPath', 'Look up an UMA receiver (the older path of GET /receiver/uma/{receiverUmaAddress})'),
  route<undefined, LookupQueryValue, Parsed<typeof AccountParam>>({
    method: 'GET',
    path: '/receiver/external-account/{accountId}',
    operationId: 'lookUpExternalAccountReceiver',
    summary: 'Look up an external account of this environment as a receiver',
    tag: 'Receiver lookup',
    permission: 'VIEW',
    query: validator(LookupQuery, { coerce: true }),
    params: AccountParam,
    response: AccountLookupView,
    status: 200,
    handle: (ctx) => lookUp(ctx, { accountId: ctx.params.accountId }),
  }),
];

/** Fails to compile when the published views and the domain's drift apart. */
export type LookupViewCheck = Holds<Same<Static<typeof UmaLookupView> | Static<typeof AccountLookupView>, LookupView>>;
