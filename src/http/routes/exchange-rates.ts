// GET /exchange-rates (CONTRACT.md "Money"; docs/money.md "Exchange rates and fees"): the
// shipped rate table priced for a sending amount, with the sendable range per pair.
import { Type, type Static } from '@sinclair/typebox';
import { FX_TABLE_UPDATED_AT, LOCKED_AMOUNT_LIMIT, priceTransfer, priceableSendingRange } from '../../../actors/fx.js';
import { CURRENCIES } from '../../../actors/reference.js';
import type { SupportedCurrency } from '../../../actors/platform.js';
import { invalidField } from '../../../actors/errors.js';
import { route, type Route } from '../route.js';
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

type ExchangeRate = Static<typeof ExchangeRateView>;

/** The sendable interval of a pair: the platform's bounds for the source, narrowed to what can be priced. */
function sendableRange(source: SupportedCurrency, destination: string): { min: number; max: number } {
  const priceable = priceableSendingRange(source.currencyCode, destination);
  return { min: Math.max(source.minAmount, priceable.min), max: Math.min(source.maxAmount, priceable.max) };
}

function rateRow(source: string, destination: string, sendingAmount: number, range: { min: number; max: number }): ExchangeRate {
  const priced = priceTransfer(source, destination, 'SENDING', sendingAmount);
  return {
    sourceCurrency: source,
    destinationCurrency: destination,
    sendingAmount,
    receivingAmount: priced.totalReceivingAmount,
    exchangeRate: priced.exchangeRate,
    fees: { fixed: priced.rateDetails.counterpartyFixedFee + priced.rateDetails.serviceApiFixedFee, total: priced.feesIncluded },
    minSendingAmount: range.min,
    maxSendingAmount: range.max,
    updatedAt: FX_TABLE_UPDATED_AT,
  };
}

export const exchangeRateRoutes: Route[] = [
  route<undefined, Static<typeof ExchangeRatesQuery>>({
    method: 'GET',
    path: '/exchange-rates',
    operationId: 'listExchangeRates',
    summary: 'Exchange rates and fees of the shipped table, priced for a sending amount',
    tag: 'Exchange rates',
    query: validator(ExchangeRatesQuery, { coerce: true }),
    response: ExchangeRatesResponse,
    status: 200,
    handle: async ({ services, env, query }) => {
      await services.engine.settled();
      const supported = services.world.envs.get(env.id)!.config.supportedCurrencies;
      const { sourceCurrency, destinationCurrency, sendingAmount } = query;
      if (sendingAmount !== undefined && sourceCurrency === undefined) throw invalidField('sendingAmount', 'requires sourceCurrency: the amount is in its smallest unit');
      let sources: readonly SupportedCurrency[] = supported;
      if (sourceCurrency !== undefined) {
        if (!CURRENCIES.has(sourceCurrency)) throw invalidField('sourceCurrency', `${sourceCurrency} is not a supported currency`);
        const source = supported.find((c) => c.currencyCode === sourceCurrency);
        if (source === undefined) throw invalidField('sourceCurrency', `${sourceCurrency} is not in this platform's supportedCurrencies`);
        sources = [source];
      }
      destinationCurrency?.forEach((code, i) => {
        if (!CURRENCIES.has(code)) throw invalidField(`destinationCurrency.${i}`, `${code} is not a supported currency`);
      });
      const explicit = destinationCurrency === undefined ? undefined : [...new Set(destinationCurrency)];

      const data: ExchangeRate[] = [];
      for (const source of sources) {
        const destinations = explicit ?? [...CURRENCIES.keys()].filter((code) => code !== source.currencyCode);
        for (const destination of destinations) {
          const range = sendableRange(source, destination);
          if (range.min > range.max) {
            // Listing everything skips a pair nothing can be sent on; asking for it is an error.
            if (explicit === undefined) continue;
            throw invalidField(
              `destinationCurrency.${destinationCurrency!.indexOf(destination)}`,
              `no amount of ${source.currencyCode} within the platform's minAmount ${source.minAmount} and maxAmount ${source.maxAmount} can be sent to ${destination}`,
            );
          }
          if (sendingAmount !== undefined && (sendingAmount < range.min || sendingAmount > range.max)) {
            throw invalidField(
              'sendingAmount',
              sendingAmount < range.min
                ? `below the minimum ${range.min} for ${source.currencyCode} to ${destination}`
                : `above the maximum ${range.max} for ${source.currencyCode} to ${destination}`,
            );
          }
          const oneMajorUnit = 10 ** CURRENCIES.get(source.currencyCode)!.decimals;
          data.push(rateRow(source.currencyCode, destination, sendingAmount ?? Math.min(Math.max(oneMajorUnit, range.min), range.max), range));
        }
      }
      return { status: 200, body: { data } };
    },
  }),
];
