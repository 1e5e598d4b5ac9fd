// Shipped reference tables (data/): currencies and the fiat currency of each supported
// region. Loaded once at start; the domain reads them, never writes them.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface CurrencyInfo {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
  kind: 'fiat' | 'crypto';
}

/** The Currency object of SERVICE_SPEC part 2. */
export interface Currency {
  code: string;
  name: string;
  symbol: string;
  decimals: number;
}

// Compiled files live in dist/actors/, sources in actors/: data/ is found from either.
export function dataFile(name: string): string {
  const here = fileURLToPath(new URL('.', import.meta.url));
  const root = here.includes('/dist/') ? new URL('../../', import.meta.url) : new URL('../', import.meta.url);
  return fileURLToPath(new URL(`data/${name}`, root));
}

function loadCurrencies(): ReadonlyMap<string, CurrencyInfo> {
  const raw = JSON.parse(readFileSync(dataFile('currencies.json'), 'utf8')) as Record<string, Omit<CurrencyInfo, 'code'>>;
  return new Map(Object.entries(raw).map(([code, info]) => [code, { code, ...info }]));
}

function loadRegions(): ReadonlyMap<string, string> {
  const raw = JSON.parse(readFileSync(dataFile('regions.json'), 'utf8')) as Record<string, string>;
  return new Map(Object.entries(raw));
}

export const CURRENCIES = loadCurrencies();
export const REGION_CURRENCY = loadRegions();
export const DEFAULT_REGION = 'US';

for (const [region, code] of REGION_CURRENCY) {
  if (CURRENCIES.get(code)?.kind !== 'fiat') throw new Error(`data/regions.json: ${region} maps to ${code}, not a known fiat currency`);
}

export function currencyObject(code: string): Currency {
  const info = CURRENCIES.get(code);
  if (info === undefined) throw new Error(`unknown currency ${code}`);
  return { code: info.code, name: info.name, symbol: info.symbol, decimals: info.decimals };
}

export function isCrypto(code: string): boolean {
  return CURRENCIES.get(code)?.kind === 'crypto';
}

/** Fiat currencies a customer of `region` may hold: its own currency plus USD (CONTRACT.md). */
export function allowedFiat(region: string): string[] {
  const own = REGION_CURRENCY.get(region);
  if (own === undefined) return [];
  return own === 'USD' ? ['USD'] : [own, 'USD'];
}

/** The regions whose fiat currency is one of `codes`, sorted: where holders of those currencies live. */
export function regionsOf(codes: readonly string[]): string[] {
  return [...REGION_CURRENCY].filter(([, currency]) => codes.includes(currency)).map(([region]) => region).sort();
}

/** ISO 3166-1 alpha-2 codes, for validating `country`, `nationality` and `region`. */
export const ISO_COUNTRIES: ReadonlySet<string> = new Set(
  ('AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO ' +
    'JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR ' +
    'MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO ' +
    'RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV ' +
    'TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW').split(' '),
);
