// GET /exchange-rates (CONTRACT.md "Money"; docs/money.md "Exchange rates and fees"): the
// shipped rate table priced for a sending amount, with the sendable range per pair; the
// rules are actors/queries/exchange-rates.ts.
import { Type, type Static } from '@sinclair/typebox';
import { LOCKED_AMOUNT_LIMIT } from '../../../actors/fx.js';
import { exchangeRates, type ExchangeRate } from '../../../actors/queries/exchange-rates.js';
import { route, type Route } from '../route.js';
import type { Holds, Same } from '../schemas/same-shape.js';
import { CurrencyCode } from '../schemas/resources.js';
import { List, Obj, Str, validator } from '../validation.js';

const Amount = Type.Integer({ minimum: 1, maximum: LOCKED_AMOUNT_LIMIT });

const ExchangeRatesQuery = Obj({
  sourceCurrency: Type.Optional(Str({ pattern: CurrencyCode.pattern, description: "Default: every currency of the platform's supportedCurrencies" })),
  destinationCurrency: Type.Optional(
    List(CurrencyCode, { minItems: 1, maxItems: 20, description: 'Repeatable. Default: every currency of the rate table other than the source' }),
  ),
  sendingAmount: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: LOCKED_AMOUNT_LIMIT,
      description: 'Smallest units of sourceCurrency (needs sourceCurrency). Default per pair: one major unit, raised to minSendingAmount or lowered to maxSendingAmount',
    }),
  ),
});

const ExchangeRateView = Obj(
  {
    sourceCurrency: CurrencyCode,
    destinationCurrency: CurrencyCode,
    sendingAmount: Amount,
    receivingAmount: Amount,
    exchangeRate: Type.Number({ minimum: 0, description: 'Source major units per destination major unit' }),
    fees: Obj({
      fixed: Type.Integer({ minimum: 0, maximum: LOCKED_AMOUNT_LIMIT }),
      total: Type.Integer({ minimum: 0, maximum: LOCKED_AMOUNT_LIMIT }),
    }),
    minSendingAmount: Amount,
    maxSendingAmount: Amount,
    updatedAt: Str({ format: 'date-time' }),
  },
  { $id: 'ExchangeRate' },
);

const ExchangeRatesResponse = Obj({ data: List(ExchangeRateView) }, { $id: 'ExchangeRateList' });

export const exchangeRateRoutes: Route[] = [
  route<undefined, Static<typeof ExchangeRatesQuery>>({
    method: 'GET',
    path: '/exchange-rates',
    operationId: 'listExchangeRates',
    summary: 'Exchange rates and fees of the shipped table, priced for a sending amount',
    tag: 'Exchange rates',
    permission: 'VIEW',
    query: validator(ExchangeRatesQuery, { coerce: true }),
    response: ExchangeRatesResponse,
    status: 200,
    handle: async ({ read, env, query }) => ({ status: 200, body: { data: await read(exchangeRates, { envId: env.id, ...query }) } }),
  }),
];

/** Fails to compile when the published rate and the domain's drift apart. */
export type ExchangeRateViewCheck = Holds<Same<Static<typeof ExchangeRateView>, ExchangeRate>>;
