// The exchange-rate rules (CONTRACT.md "Money"; docs/money.md "Exchange rates and fees"):
// which pairs a platform may price, the sendable range of each (the platform's bounds for
// the source narrowed to what the shipped table can price), and the table priced for a
// sending amount within it.
import { FX_TABLE_UPDATED_AT, priceTransfer, priceableSendingRange } from '../fx.js';
import { CURRENCIES } from '../reference.js';
import type { SupportedCurrency } from '../platform.js';
import { invalidField } from '../errors.js';
import type { DomainQuery } from '../world.js';

/** One priced pair as GET /exchange-rates lists it. */
export interface ExchangeRate {
  sourceCurrency: string;
  destinationCurrency: string;
  sendingAmount: number;
  receivingAmount: number;
  /** Source major units per destination major unit. */
  exchangeRate: number;
  fees: { fixed: number; total: number };
  minSendingAmount: number;
  maxSendingAmount: number;
  updatedAt: string;
}

/** Which pairs to price: by default every supported source to every other currency of the table, one major unit each. */
export interface ExchangeRatesInput {
  envId: string;
  sourceCurrency?: string;
  destinationCurrency?: readonly string[];
  sendingAmount?: number;
}

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

/** The sources a request prices: the one it names (a 400 unless known and supported by the platform), else all the platform supports. */
function sourcesOf(supported: readonly SupportedCurrency[], input: ExchangeRatesInput): readonly SupportedCurrency[] {
  const { sourceCurrency, sendingAmount } = input;
  if (sendingAmount !== undefined && sourceCurrency === undefined) throw invalidField('sendingAmount', 'requires sourceCurrency: the amount is in its smallest unit');
  if (sourceCurrency === undefined) return supported;
  if (!CURRENCIES.has(sourceCurrency)) throw invalidField('sourceCurrency', `${sourceCurrency} is not a supported currency`);
  const source = supported.find((c) => c.currencyCode === sourceCurrency);
  if (source === undefined) throw invalidField('sourceCurrency', `${sourceCurrency} is not in this platform's supportedCurrencies`);
  return [source];
}

/** The priced pairs of the request; a pair it names that nothing can be sent on, or an amount outside a pair's range, is a 400. */
export const exchangeRates: DomainQuery<ExchangeRatesInput, ExchangeRate[]> = (input, world) => {
  const sources = sourcesOf(world.envs.get(input.envId)!.config.supportedCurrencies, input);
  const { destinationCurrency, sendingAmount } = input;
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
          sendingAmount < range.min ? `below the minimum ${range.min} for ${source.currencyCode} to ${destination}` : `above the maximum ${range.max} for ${source.currencyCode} to ${destination}`,
        );
      }
      const oneMajorUnit = 10 ** CURRENCIES.get(source.currencyCode)!.decimals;
      data.push(rateRow(source.currencyCode, destination, sendingAmount ?? Math.min(Math.max(oneMajorUnit, range.min), range.max), range));
    }
  }
  return data;
};
