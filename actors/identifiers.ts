// Domain rules for external-account identifiers: check digits of bank numbers, which
// currency and crypto network each account type may carry, wallet address validity per
// network, and the sandbox outcome suffixes (SERVICE_SPEC part 3, "Sandbox-driven
// outcomes"). Pure functions: no HTTP, no state, no clock.
import { keccak_256 } from '@noble/hashes/sha3.js';
import type { AccountInfo, AccountType } from './account-info.js';
import type { FieldProblem } from './errors.js';

export const CRYPTO_NETWORKS = [
  'SOLANA_MAINNET',
  'SOLANA_DEVNET',
  'ETHEREUM_MAINNET',
  'ETHEREUM_TESTNET',
  'BASE_MAINNET',
  'BASE_TESTNET',
  'SPARK_MAINNET',
  'SPARK_TESTNET',
  'LIGHTNING_MAINNET',
  'LIGHTNING_REGTEST',
] as const;
export type CryptoNetwork = (typeof CRYPTO_NETWORKS)[number];

export function isCryptoNetwork(value: string): value is CryptoNetwork {
  return (CRYPTO_NETWORKS as readonly string[]).includes(value);
}

/**
 * Currencies each account type can receive. IBAN covers the fiat currencies of this
 * service whose regions use IBANs (euro area, GB, AE). USDB is issued on Spark only, so
 * EVM and Solana wallets carry USDC; Lightning moves BTC alone.
 */
export const ACCOUNT_CURRENCIES: Readonly<Record<AccountType, readonly string[]>> = {
  USD_ACCOUNT: ['USD'],
  US_ACCOUNT: ['USD'],
  BRL_ACCOUNT: ['BRL'],
  AED_ACCOUNT: ['AED'],
  CLABE: ['MXN'],
  IBAN: ['EUR', 'GBP', 'AED'],
  UPI: ['INR'],
  SPARK_WALLET: ['BTC', 'USDB'],
  LIGHTNING: ['BTC'],
  SOLANA_WALLET: ['USDC'],
  ETHEREUM_WALLET: ['USDC'],
  BASE_WALLET: ['USDC'],
};

export type WalletType = Extract<AccountInfo, { address: string }>['accountType'];

export const WALLET_NETWORKS: Readonly<Record<WalletType, readonly CryptoNetwork[]>> = {
  SOLANA_WALLET: ['SOLANA_MAINNET', 'SOLANA_DEVNET'],
  ETHEREUM_WALLET: ['ETHEREUM_MAINNET', 'ETHEREUM_TESTNET'],
  BASE_WALLET: ['BASE_MAINNET', 'BASE_TESTNET'],
  SPARK_WALLET: ['SPARK_MAINNET', 'SPARK_TESTNET'],
  LIGHTNING: ['LIGHTNING_MAINNET', 'LIGHTNING_REGTEST'],
};

// ---------------------------------------------------------------------------------------
// Bank identifiers

function digitsOf(text: string): number[] {
  return Array.from(text, (c) => c.charCodeAt(0) - 48);
}

// First two digits of a routing number name a Federal Reserve district (01-12), a thrift
// (21-32), an electronic-only institution (61-72) or traveller's cheques (80).
const ABA_PREFIX = /^(?:0[1-9]|1[0-2]|2[1-9]|3[0-2]|6[1-9]|7[0-2]|80)/;

/** ABA routing number: 9 digits, a valid district prefix and the 3-7-1 weighted checksum. */
export function isAbaRoutingNumber(value: string): boolean {
  if (!/^[0-9]{9}$/.test(value) || !ABA_PREFIX.test(value)) return false;
  const d = digitsOf(value);
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!);
  return sum % 10 === 0;
}

/** CLABE: 18 digits whose last is the weighted (3, 7, 1) mod-10 check digit of the first 17. */
export function isClabe(value: string): boolean {
  if (!/^[0-9]{18}$/.test(value)) return false;
  const d = digitsOf(value);
  const weights = [3, 7, 1];
  let sum = 0;
  for (let i = 0; i < 17; i++) sum += (d[i]! * weights[i % 3]!) % 10;
  return (10 - (sum % 10)) % 10 === d[17];
}

// SWIFT IBAN registry: total IBAN length per country code.
const IBAN_LENGTHS: ReadonlyMap<string, number> = new Map(
  ('AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BI27 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DJ27 DK18 DO28 ' +
    'EE20 EG29 ES24 FI18 FK18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HN28 HR21 HU28 IE22 IL23 IQ23 IS26 ' +
    'IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 LY25 MC27 MD24 ME22 MK19 MN20 MR27 MT31 MU30 NI28 ' +
    'NL18 NO15 OM23 PK24 PL28 PS29 PT25 QA29 RO24 RS22 RU33 SA24 SC31 SD18 SE24 SI19 SK24 SM27 SO23 ST25 ' +
    'SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20 YE30')
    .split(' ')
    .map((entry) => [entry.slice(0, 2), Number(entry.slice(2))] as const),
);

/** ISO 7064 mod 97-10 over the rearranged IBAN (letters A=10 … Z=35); valid when it is 1. */
function ibanMod97(iban: string): number {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const c of rearranged) {
    const code = c.charCodeAt(0);
    const value = code >= 65 ? code - 55 : code - 48;
    remainder = (remainder * (value >= 10 ? 100 : 10) + value) % 97;
  }
  return remainder;
}

/** Why `iban` (electronic format, upper case) is not a valid IBAN, or undefined when it is. */
export function ibanProblem(iban: string): string | undefined {
  if (!/^[A-Z]{2}[0-9]{2}[A-Z0-9]+$/.test(iban)) {
    return 'must be an IBAN in electronic format: 2-letter country code, 2 check digits, letters and digits, no spaces';
  }
  const country = iban.slice(0, 2);
  const length = IBAN_LENGTHS.get(country);
  if (length === undefined) return `country ${country} does not issue IBANs`;
  if (iban.length !== length) return `must be ${length} characters for country ${country}, got ${iban.length}`;
  if (ibanMod97(iban) !== 1) return 'check digits do not match (mod-97 check failed)';
  return undefined;
}

/** Brazilian CPF: 11 digits with two mod-11 check digits; repeated-digit numbers are invalid. */
export function isCpf(value: string): boolean {
  if (!/^[0-9]{11}$/.test(value) || /^(\d)\1{10}$/.test(value)) return false;
  const d = digitsOf(value);
  const check = (count: number): number => {
    let sum = 0;
    for (let i = 0; i < count; i++) sum += d[i]! * (count + 1 - i);
    return ((sum * 10) % 11) % 10;
  };
  return check(9) === d[9] && check(10) === d[10];
}

/** Brazilian CNPJ: 14 digits with two mod-11 check digits; repeated-digit numbers are invalid. */
export function isCnpj(value: string): boolean {
  if (!/^[0-9]{14}$/.test(value) || /^(\d)\1{13}$/.test(value)) return false;
  const d = digitsOf(value);
  const check = (count: number): number => {
    let sum = 0;
    // Weights run 2..9 from the right, wrapping: 5,4,3,2,9,8,7,6,5,4,3,2 for the first digit.
    for (let i = 0; i < count; i++) sum += d[i]! * (((count - 1 - i) % 8) + 2);
    const r = sum % 11;
    return r < 2 ? 0 : 11 - r;
  };
  return check(12) === d[12] && check(13) === d[13];
}

// ---------------------------------------------------------------------------------------
// Encodings used by wallet addresses

const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Bitcoin-alphabet base58 decode; undefined on any character outside the alphabet. */
export function base58Decode(text: string): Uint8Array | undefined {
  const littleEndian: number[] = [];
  for (const c of text) {
    let carry = BASE58_ALPHABET.indexOf(c);
    if (carry < 0) return undefined;
    for (let i = 0; i < littleEndian.length; i++) {
      carry += littleEndian[i]! * 58;
      littleEndian[i] = carry & 0xff;
      carry >>= 8;
    }
    for (; carry > 0; carry >>= 8) littleEndian.push(carry & 0xff);
  }
  // Each leading '1' stands for one leading zero byte, which the arithmetic above drops.
  let zeros = 0;
  while (text[zeros] === '1') zeros++;
  const out = new Uint8Array(zeros + littleEndian.length);
  littleEndian.forEach((byte, i) => {
    out[out.length - 1 - i] = byte;
  });
  return out;
}

const BECH32_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const BECH32_GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
const BECH32M_CONST = 0x2bc830a3;

function bech32Polymod(values: readonly number[]): number {
  let chk = 1;
  for (const v of values) {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= BECH32_GENERATOR[i]!;
  }
  return chk >>> 0;
}

export interface Bech32Decoded {
  hrp: string;
  /** 5-bit data words, checksum removed. */
  words: number[];
  encoding: 'bech32' | 'bech32m';
}

/**
 * BIP-173 / BIP-350 decode. `limit` is the maximum total length: 90 for segwit
 * addresses; Lightning invoices and Spark addresses are longer, so callers pass their own.
 * Returns undefined for mixed case, bad characters, a missing separator or a bad checksum.
 */
export function bech32Decode(text: string, limit = 90): Bech32Decoded | undefined {
  if (text.length > limit) return undefined;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 33 || code > 126) return undefined;
  }
  const lower = text.toLowerCase();
  if (text !== lower && text !== text.toUpperCase()) return undefined;
  const separator = lower.lastIndexOf('1');
  if (separator < 1 || separator + 7 > lower.length) return undefined;
  const hrp = lower.slice(0, separator);
  const words: number[] = [];
  for (const c of lower.slice(separator + 1)) {
    const word = BECH32_CHARSET.indexOf(c);
    if (word < 0) return undefined;
    words.push(word);
  }
  const expanded: number[] = [];
  for (const c of hrp) expanded.push(c.charCodeAt(0) >> 5);
  expanded.push(0);
  for (const c of hrp) expanded.push(c.charCodeAt(0) & 31);
  const residue = bech32Polymod([...expanded, ...words]);
  const encoding = residue === 1 ? 'bech32' : residue === BECH32M_CONST ? 'bech32m' : undefined;
  if (encoding === undefined) return undefined;
  return { hrp, words: words.slice(0, -6), encoding };
}

/** 5-bit words to bytes, rejecting more than 4 bits of padding or non-zero padding bits. */
export function bech32WordsToBytes(words: readonly number[]): Uint8Array | undefined {
  let acc = 0;
  let bits = 0;
  const out: number[] = [];
  for (const word of words) {
    acc = ((acc << 5) | word) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  if (bits >= 5 || ((acc << (8 - bits)) & 0xff) !== 0) return undefined;
  return Uint8Array.from(out);
}

// ---------------------------------------------------------------------------------------
// Wallet addresses. Each returns the problem as a message, or undefined when valid.
// `network` is undefined when the caller's cryptoNetwork was missing or wrong: the
// address is then checked against every network of its family.

function solanaAddressProblem(address: string): string | undefined {
  const bytes = address.length >= 32 && address.length <= 44 ? base58Decode(address) : undefined;
  if (bytes === undefined) return 'address is not a valid Solana address: must be 32 to 44 base58 characters';
  if (bytes.length !== 32) return `address is not a valid Solana address: must decode to 32 bytes, got ${bytes.length}`;
  return undefined;
}

function evmAddressProblem(address: string, chain: string): string | undefined {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) {
    return `address is not a valid ${chain} address: must be 0x followed by 40 hex digits`;
  }
  const hex = address.slice(2);
  // Single-case addresses carry no checksum; mixed case is an EIP-55 checksum and must match.
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase()) return undefined;
  const hash = keccak_256(new TextEncoder().encode(hex.toLowerCase()));
  for (let i = 0; i < 40; i++) {
    const c = hex[i]!;
    if (c >= '0' && c <= '9') continue;
    const nibble = (hash[i >> 1]! >> (i % 2 === 0 ? 4 : 0)) & 0xf;
    if ((nibble >= 8) !== (c >= 'A' && c <= 'F')) {
      return `address is not a valid ${chain} address: mixed-case EIP-55 checksum does not match`;
    }
  }
  return undefined;
}

// Both HRP generations of the Spark SDK: the original short ones and the spelled-out ones.
const SPARK_HRPS: Readonly<Record<string, CryptoNetwork>> = {
  sp: 'SPARK_MAINNET',
  spark: 'SPARK_MAINNET',
  spt: 'SPARK_TESTNET',
  sparkt: 'SPARK_TESTNET',
};

function sparkAddressProblem(address: string, network: CryptoNetwork | undefined): string | undefined {
  const decoded = bech32Decode(address, 1024);
  if (decoded === undefined) return 'address is not a valid Spark address: not a bech32m string with a valid checksum';
  if (decoded.encoding !== 'bech32m') return 'address is not a valid Spark address: uses the bech32 checksum, Spark uses bech32m';
  const addressNetwork = Object.hasOwn(SPARK_HRPS, decoded.hrp) ? SPARK_HRPS[decoded.hrp] : undefined;
  if (addressNetwork === undefined) {
    return `address is not a valid Spark address: prefix ${decoded.hrp} is not sp, spt, spark or sparkt`;
  }
  if (network !== undefined && addressNetwork !== network) {
    return `address is a ${addressNetwork} address but cryptoNetwork is ${network}`;
  }
  // The payload is a protobuf SparkAddress whose first field (tag 0x0a) is the 33-byte
  // compressed identity public key.
  const payload = bech32WordsToBytes(decoded.words);
  if (payload === undefined || payload.length < 35 || payload[0] !== 0x0a || payload[1] !== 33 || (payload[2] !== 2 && payload[2] !== 3)) {
    return 'address is not a valid Spark address: payload does not start with a 33-byte identity public key';
  }
  return undefined;
}

// LUD-16 lightning address, also in the `$user@domain` UMA spelling.
const LIGHTNING_ADDRESS =
  /^\$?[a-z0-9._+-]{1,64}@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
// BOLT11 human-readable part: `ln` + chain prefix + optional amount with multiplier.
const BOLT11_HRP = /^ln(bcrt|bc|tbs|tb)(?:[0-9]+[munp]?)?$/;
const BOLT11_NETWORKS: Readonly<Record<string, CryptoNetwork | undefined>> = {
  bc: 'LIGHTNING_MAINNET',
  bcrt: 'LIGHTNING_REGTEST',
  tb: undefined,
  tbs: undefined,
};
// A BOLT11 data part is at least a 35-bit timestamp (7 words) and a 65-byte signature (104 words).
const BOLT11_MIN_WORDS = 7 + 104;

function lightningProblem(address: string, network: CryptoNetwork | undefined): string | undefined {
  if (address.includes('@')) {
    return LIGHTNING_ADDRESS.test(address)
      ? undefined
      : 'address is not a valid lightning address: must be user@domain';
  }
  const decoded = bech32Decode(address, 1024);
  const chain = decoded === undefined ? undefined : BOLT11_HRP.exec(decoded.hrp)?.[1];
  if (decoded === undefined || decoded.encoding !== 'bech32' || chain === undefined || decoded.words.length < BOLT11_MIN_WORDS) {
    return 'address is not a valid lightning address or BOLT11 invoice (lnbc…, lnbcrt…)';
  }
  const invoiceNetwork = BOLT11_NETWORKS[chain];
  if (invoiceNetwork === undefined) {
    return `address is a BOLT11 invoice for chain ${chain}, which has no cryptoNetwork here (lnbc for LIGHTNING_MAINNET, lnbcrt for LIGHTNING_REGTEST)`;
  }
  if (network !== undefined && invoiceNetwork !== network) {
    return `address is a ${invoiceNetwork} invoice but cryptoNetwork is ${network}`;
  }
  return undefined;
}

function walletAddressProblem(type: WalletType, address: string, network: CryptoNetwork | undefined): string | undefined {
  switch (type) {
    case 'SOLANA_WALLET':
      return solanaAddressProblem(address);
    case 'ETHEREUM_WALLET':
      return evmAddressProblem(address, 'Ethereum');
    case 'BASE_WALLET':
      return evmAddressProblem(address, 'Base');
    case 'SPARK_WALLET':
      return sparkAddressProblem(address, network);
    case 'LIGHTNING':
      return lightningProblem(address, network);
  }
}

// ---------------------------------------------------------------------------------------
// Account-level rules

/**
 * Cross-field rules for an external account whose accountInfo already passed
 * `checkAccountInfo`: the currency fits the account type, and crypto wallets name a
 * cryptoNetwork of their family on which the address is valid. Bank accounts must not
 * name a cryptoNetwork.
 */
export function checkAccountSemantics(info: AccountInfo, currency: string, cryptoNetwork: string | undefined): FieldProblem[] {
  const errors: FieldProblem[] = [];
  const currencies = ACCOUNT_CURRENCIES[info.accountType];
  if (!currencies.includes(currency)) {
    errors.push({ field: 'currency', message: `${info.accountType} accounts carry ${currencies.join(' or ')}, not ${currency}` });
  }
  if (!('address' in info)) {
    if (cryptoNetwork !== undefined) {
      errors.push({ field: 'cryptoNetwork', message: `applies to crypto wallets only, not to ${info.accountType}` });
    }
    return errors;
  }
  const type = info.accountType;
  const networks = WALLET_NETWORKS[type];
  let network: CryptoNetwork | undefined;
  if (cryptoNetwork === undefined) {
    errors.push({ field: 'cryptoNetwork', message: `is required for ${type}: one of ${networks.join(', ')}` });
  } else if (!isCryptoNetwork(cryptoNetwork) || !networks.includes(cryptoNetwork)) {
    errors.push({ field: 'cryptoNetwork', message: `must be one of ${networks.join(', ')} for ${type}` });
  } else {
    network = cryptoNetwork;
  }
  const problem = walletAddressProblem(type, info.address, network);
  if (problem !== undefined) errors.push({ field: 'accountInfo.address', message: problem });
  return errors;
}

function rawIdentifier(info: AccountInfo): string {
  switch (info.accountType) {
    case 'USD_ACCOUNT':
    case 'US_ACCOUNT':
      return info.accountNumber;
    case 'BRL_ACCOUNT':
      return info.pixKey;
    case 'AED_ACCOUNT':
    case 'IBAN':
      return info.iban;
    case 'CLABE':
      return info.clabe;
    case 'UPI':
      return info.vpa;
    case 'SPARK_WALLET':
    case 'LIGHTNING':
    case 'SOLANA_WALLET':
    case 'ETHEREUM_WALLET':
    case 'BASE_WALLET':
      return info.address;
  }
}

/**
 * The identifier whose last 3 characters select sandbox outcomes. For identifiers with a
 * domain part (`user005@domain`, `$user005@domain`, e-mail pix keys, UPI VPAs) the
 * spec appends the digits to the username, so that portion is returned, without `$`.
 */
export function primaryIdentifier(info: AccountInfo): string {
  const raw = rawIdentifier(info);
  const at = raw.lastIndexOf('@');
  if (at < 0) return raw;
  const username = raw.slice(0, at);
  return username.startsWith('$') ? username.slice(1) : username;
}

export function sandboxSuffix(identifier: string): string {
  return identifier.slice(-3);
}

export type BeneficiaryVerificationStatus =
  | 'MATCHED'
  | 'PARTIAL_MATCH'
  | 'NOT_MATCHED'
  | 'UNSUPPORTED'
  | 'CHECKED_BY_RECEIVING_FI'
  | 'PENDING';

export type BeneficiaryVerification =
  | { status: BeneficiaryVerificationStatus; verifiedData?: { fullName: string } }
  | { fail: 400 | 500; message: string };

const VERIFYING_RAILS: ReadonlySet<AccountType> = new Set<AccountType>([
  'USD_ACCOUNT',
  'US_ACCOUNT',
  'CLABE',
  'IBAN',
  'AED_ACCOUNT',
  'BRL_ACCOUNT',
  'UPI',
]);

const SANDBOX_VERIFICATION: Readonly<Record<string, BeneficiaryVerification>> = {
  '102': { status: 'NOT_MATCHED' },
  '103': { status: 'PARTIAL_MATCH' },
  '104': { status: 'PENDING' },
  '105': { fail: 400, message: 'invalid account: the receiving bank rejected the account (sandbox suffix 105)' },
  '106': { status: 'UNSUPPORTED' },
  '107': { status: 'CHECKED_BY_RECEIVING_FI' },
  '109': { fail: 500, message: 'simulated beneficiary verification error (sandbox suffix 109)' },
};

/**
 * Beneficiary name verification at account creation. Wallets have no name to verify.
 * Sandbox: the 1xx suffix table of SERVICE_SPEC part 3 on the primary identifier, for
 * every bank rail, with or without a beneficiary. Production: no rail answers live here,
 * so a bank account that names a beneficiary is PENDING (verified later, out of band) and
 * anything else is UNSUPPORTED.
 */
export function beneficiaryVerification(info: AccountInfo, environment: 'sandbox' | 'production'): BeneficiaryVerification {
  const fullName = 'beneficiary' in info ? info.beneficiary?.fullName : undefined;
  if (!VERIFYING_RAILS.has(info.accountType)) return { status: 'UNSUPPORTED' };
  if (environment === 'production') return { status: fullName === undefined ? 'UNSUPPORTED' : 'PENDING' };
  const suffix = sandboxSuffix(primaryIdentifier(info));
  const outcome = Object.hasOwn(SANDBOX_VERIFICATION, suffix) ? SANDBOX_VERIFICATION[suffix]! : { status: 'MATCHED' as const };
  if ('fail' in outcome) return outcome;
  if (fullName !== undefined && (outcome.status === 'MATCHED' || outcome.status === 'PARTIAL_MATCH')) {
    return { status: outcome.status, verifiedData: { fullName } };
  }
  return { status: outcome.status };
}
