// Look-ups (CONTRACT.md "Today's clients, second wave"; docs/api.md "Look-ups"), served from
// the service's own tables and the operator's settings, none of them logging anything:
// GET /discoveries (the bank rails external accounts are created on), GET /uma-providers
// (actors/queries/uma-providers.ts), GET /vasps and GET /customers/end-user-terms (the
// operator's VASPS and END_USER_TERMS_*, src/config.ts), and
// POST /crypto/estimate-withdrawal-fee (actors/queries/withdrawal-fee.ts).
import { Type, type Static } from '@sinclair/typebox';
import { LOCKED_AMOUNT_LIMIT } from '../../../actors/fx.js';
import { ACCOUNT_CURRENCIES } from '../../../actors/identifiers.js';
import { paginateAll } from '../../../actors/page.js';
import { isCrypto, regionsOf } from '../../../actors/reference.js';
import { umaProviderPage, type UmaProvider } from '../../../actors/queries/uma-providers.js';
import { withdrawalFee, type WithdrawalFeeEstimate } from '../../../actors/queries/withdrawal-fee.js';
import type { EndUserTerms, Vasp } from '../../config.js';
import { PageQuery } from '../pagination.js';
import { route, type Route } from '../route.js';
import { AccountInfoSchema } from '../schemas/account-info.js';
import { CurrencyCode, CurrencyView, IdOf, ListOf } from '../schemas/resources.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { Country, List, Obj, Str, StringEnum, Text, validator } from '../validation.js';

const TAG = 'Look-ups';

const DiscoveryView = Obj(
  {
    bankName: Str({ description: 'The rail, as the accountType of an external account on it (what POST /customers/external-accounts takes as bankName)' }),
    displayName: Str(),
    country: Country(),
    currency: CurrencyCode,
  },
  { $id: 'Discovery' },
);
type Discovery = Static<typeof DiscoveryView>;
const DiscoveryList = Obj({ data: List(DiscoveryView, { maxItems: 1000 }) }, { $id: 'DiscoveryList' });
const DiscoveryQuery = Obj({ country: Type.Optional(Country()), currency: Type.Optional(CurrencyCode) });

/**
 * Every bank rail external accounts are created on (the accountInfo variants), once for each
 * region of each fiat currency it carries (identifiers.ts ACCOUNT_CURRENCIES, regions.json),
 * named by the variant's own description. Wallets have no country: they are not corridors.
 */
const DISCOVERIES: readonly Discovery[] = AccountInfoSchema.anyOf
  .flatMap((variant): Discovery[] => {
    const accountType = variant.properties.accountType.const;
    return ACCOUNT_CURRENCIES[accountType]
      .filter((currency) => !isCrypto(currency))
      .flatMap((currency) => regionsOf([currency]).map((country) => ({ bankName: accountType, displayName: variant.description ?? accountType, country, currency })));
  })
  .sort((a, b) => a.country.localeCompare(b.country) || a.currency.localeCompare(b.currency) || a.bankName.localeCompare(b.bankName));

const UmaProviderView = Obj(
  {
    name: Str(),
    domain: Str({ description: 'The domain of the UMA addresses this provider serves' }),
    supportedRegions: List(Country(), { maxItems: 300 }),
    supportedCurrencies: List(CurrencyView),
    allowListStatus: Type.Boolean({ description: 'Always true: the service keeps no allowlist' }),
  },
  { $id: 'UmaProvider' },
);
const UmaProviderQuery = Obj({
  countryCode: Type.Optional(Country()),
  currencyCode: Type.Optional(CurrencyCode),
  hasBlockedProviders: Type.Optional(Type.Boolean({ description: 'false lists only allowlisted providers (every one: none is blocked)' })),
  sortOrder: Type.Optional(StringEnum(['asc', 'desc'] as const)),
  ...PageQuery,
});

const VaspView = Obj({ vaspName: Str(), url: Type.Optional(Str({ description: 'An http or https URL' })) }, { $id: 'Vasp' });
const VaspQuery = Obj({ ...PageQuery });

const EndUserTermsView = Obj(
  { version: Str({ description: 'END_USER_TERMS_VERSION' }), url: Str({ description: 'END_USER_TERMS_URL: where this version is published, an http or https URL' }) },
  { $id: 'EndUserTerms' },
);

const EstimateRequest = Obj(
  {
    internalAccountId: IdOf('InternalAccount'),
    currency: CurrencyCode,
    cryptoNetwork: Text({ minLength: 1, maxLength: 64, description: 'A network family (SOLANA, ETHEREUM, BASE, SPARK, LIGHTNING) or one network (SOLANA_DEVNET)' }),
    amount: Type.Integer({ minimum: 1, maximum: LOCKED_AMOUNT_LIMIT, description: 'Smallest units of currency leaving the account, fees included' }),
    destinationAddress: Text({ minLength: 1, maxLength: 512 }),
  },
  { $id: 'EstimateCryptoWithdrawalFeeRequest' },
);
const Amount = Type.Integer({ minimum: 0, maximum: LOCKED_AMOUNT_LIMIT });
const EstimateView = Obj(
  {
    networkFee: Type.Integer({ minimum: 0, description: 'In networkFeeAsset: 0, the service pays no network fee of its own' }),
    networkFeeAsset: Str(),
    applicationFee: Amount,
    totalFee: Amount,
    netAmount: Amount,
  },
  { $id: 'WithdrawalFeeEstimate' },
);

/** The vasps' names (their positions) and each by name, made once per settings. */
const vaspIndexes = new WeakMap<readonly Vasp[], { names: string[]; byName: Map<string, Vasp> }>();
function vaspIndex(vasps: readonly Vasp[]): { names: string[]; byName: Map<string, Vasp> } {
  let index = vaspIndexes.get(vasps);
  if (index === undefined) {
    index = { names: vasps.map((v) => v.vaspName), byName: new Map(vasps.map((v) => [v.vaspName, v])) };
    vaspIndexes.set(vasps, index);
  }
  return index;
}

export const lookupRoutes: Route[] = [
  route<undefined, Static<typeof DiscoveryQuery>>({
    method: 'GET',
    path: '/discoveries',
    permission: 'VIEW',
    operationId: 'getDiscoveries',
    summary: 'The bank rails external accounts can be created on, by country and currency',
    tag: TAG,
    query: validator(DiscoveryQuery, { coerce: true }),
    response: DiscoveryList,
    status: 200,
    handle: async ({ query }) => ({
      status: 200,
      body: { data: DISCOVERIES.filter((d) => (query.country === undefined || d.country === query.country) && (query.currency === undefined || d.currency === query.currency)) },
    }),
  }),
  route<undefined, Static<typeof UmaProviderQuery>>({
    method: 'GET',
    path: '/uma-providers',
    permission: 'VIEW',
    operationId: 'getAvailableUmaProviders',
    summary: "The UMA providers this environment's senders can pay: its own domain, and in the sandbox the test addresses' domain",
    tag: TAG,
    query: validator(UmaProviderQuery, { coerce: true }),
    response: ListOf(UmaProviderView),
    status: 200,
    handle: async ({ read, env, query }) => {
      const { limit, cursor, ...filter } = query;
      return { status: 200, body: await read(umaProviderPage, { envId: env.id, filter, page: { limit, cursor } }) };
    },
  }),
  route<undefined, Static<typeof VaspQuery>>({
    method: 'GET',
    path: '/vasps',
    permission: 'VIEW',
    operationId: 'listVasps',
    summary: "The operator's directory of VASPs (VASPS), by name",
    tag: TAG,
    query: validator(VaspQuery, { coerce: true }),
    response: ListOf(VaspView),
    status: 200,
    handle: async ({ ports, query }) => {
      const { names, byName } = vaspIndex(ports.lookups.vasps);
      return { status: 200, body: paginateAll(names, query, (name) => byName.get(name)!, (vasp) => vasp, 'asc') };
    },
  }),
  route({
    method: 'GET',
    path: '/customers/end-user-terms',
    permission: 'VIEW',
    operationId: 'getEndUserTerms',
    summary: 'The End User Terms in force: their version and where they are published (END_USER_TERMS_*)',
    tag: TAG,
    response: EndUserTermsView,
    status: 200,
    handle: async ({ ports }) => ({ status: 200, body: ports.lookups.endUserTerms }),
  }),
  route<Static<typeof EstimateRequest>>({
    method: 'POST',
    path: '/crypto/estimate-withdrawal-fee',
    permission: 'VIEW',
    operationId: 'estimateCryptoWithdrawalFee',
    summary: 'What a withdrawal from a crypto internal account to a blockchain address would cost, priced as its quote would be; nothing is created',
    tag: TAG,
    body: validator(EstimateRequest),
    response: EstimateView,
    status: 200,
    handle: async ({ read, env, body }) => ({ status: 200, body: await read(withdrawalFee, { envId: env.id, ...body }) }),
  }),
];

/** Fail to compile when a published view and what the service answers with drift apart. */
export type LookupViewChecks = [
  Holds<Same<Static<typeof UmaProviderView>, UmaProvider>>,
  Holds<Same<Static<typeof VaspView>, Vasp>>,
  Holds<Same<Static<typeof EndUserTermsView>, EndUserTerms>>,
  Holds<Same<Static<typeof EstimateView>, WithdrawalFeeEstimate>>,
];
