import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ACCOUNT_TYPES, AccountInfoSchema, checkAccountInfo, type AccountInfo } from '../src/http/schemas/account-info.js';
import {
  CRYPTO_NETWORKS,
  base58Decode,
  bech32Decode,
  bech32WordsToBytes,
  beneficiaryVerification,
  checkAccountSemantics,
  ibanProblem,
  isAbaRoutingNumber,
  isClabe,
  isCnpj,
  isCpf,
  primaryIdentifier,
  sandboxSuffix,
} from '../actors/identifiers.js';
import type { FieldProblem } from '../actors/errors.js';
import { clabeEndingWith } from './support/assertions.js';

// --- helpers -----------------------------------------------------------------------------

function accept(value: unknown): AccountInfo {
  const result = checkAccountInfo(value);
  assert.ok(result.ok, `expected valid, got ${JSON.stringify(result)}`);
  return result.value;
}

function rejectAt(value: unknown, field: string, message?: RegExp): FieldProblem[] {
  const result = checkAccountInfo(value);
  assert.ok(!result.ok, `expected ${JSON.stringify(value)} to be rejected`);
  const hit = result.errors.find((e) => e.field === field);
  assert.ok(hit, `expected an error on ${field}, got ${JSON.stringify(result.errors)}`);
  if (message !== undefined) assert.match(hit.message, message);
  return result.errors;
}

function semantics(value: unknown, currency: string, network?: string): FieldProblem[] {
  return checkAccountSemantics(accept(value), currency, network);
}

function semanticError(value: unknown, currency: string, network: string | undefined, field: string, message: RegExp): void {
  const errors = semantics(value, currency, network);
  const hit = errors.find((e) => e.field === field);
  assert.ok(hit, `expected an error on ${field}, got ${JSON.stringify(errors)}`);
  assert.match(hit.message, message);
}

// Independent bech32/bech32m encoder (BIP-173/350 reference algorithm) to build vectors.
const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
function polymod(values: number[]): number {
  const gen = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
  let chk = 1;
  for (const v of values) {
    const b = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ v;
    for (let i = 0; i < 5; i++) if ((b >>> i) & 1) chk ^= gen[i]!;
  }
  return chk >>> 0;
}
function bech32Encode(hrp: string, words: number[], variant: 'bech32' | 'bech32m'): string {
  const expanded = [...[...hrp].map((c) => c.charCodeAt(0) >> 5), 0, ...[...hrp].map((c) => c.charCodeAt(0) & 31)];
  const mod = polymod([...expanded, ...words, 0, 0, 0, 0, 0, 0]) ^ (variant === 'bech32' ? 1 : 0x2bc830a3);
  const checksum = [0, 1, 2, 3, 4, 5].map((i) => (mod >>> (5 * (5 - i))) & 31);
  return `${hrp}1${[...words, ...checksum].map((w) => CHARSET[w]).join('')}`;
}
function toWords(bytes: Uint8Array): number[] {
  const words: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      words.push((acc >> bits) & 31);
    }
    acc &= 0xff;
  }
  if (bits > 0) words.push((acc << (5 - bits)) & 31);
  return words;
}

// IBAN check digits by the ISO 13616 definition, with BigInt: an oracle independent of the
// incremental remainder in identifiers.ts.
function withIbanCheckDigits(country: string, bban: string): string {
  const numeric = [...`${bban}${country}00`].map((c) => (/[A-Z]/.test(c) ? String(c.charCodeAt(0) - 55) : c)).join('');
  const check = 98n - (BigInt(numeric) % 97n);
  return `${country}${check.toString().padStart(2, '0')}${bban}`;
}


// Real-world vectors.
const SPARK_MAINNET = 'sp1pgss9fsgd8cdhncacevunnkt47q9qy67485vm3y8q5l3m35gp9yac6zvd6zpha';
const SPARK_WORDS = bech32Decode(SPARK_MAINNET, 1024)!.words;
const SPARK_TESTNET = bech32Encode('spt', SPARK_WORDS, 'bech32m');
const BOLT11_MAINNET =
  'lnbc2500u1pvjluezsp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpu9qrsgquk0rl77nj30yxdy8j9vdx85fkpmdla2087ne0xh8nhedh8w27kyke0lp53ut353s06fv3qfegext0eh0ymjpf39tuven09sam30g4vgpfna3rh';
const BOLT11_WORDS = bech32Decode(BOLT11_MAINNET, 1024)!.words;
const BOLT11_REGTEST = bech32Encode('lnbcrt2500u', BOLT11_WORDS, 'bech32');
const BOLT11_TESTNET = bech32Encode('lntb2500u', BOLT11_WORDS, 'bech32');
const EIP55 = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed';

/** USD_ACCOUNT, US_ACCOUNT, CLABE and IBAN require the beneficiary's type and name. */
const BENEFICIARY = { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace' };

const usd = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  accountType: 'USD_ACCOUNT',
  accountNumber: '123456789',
  routingNumber: '021000021',
  bankAccountType: 'CHECKING',
  beneficiary: BENEFICIARY,
  ...over,
});

// --- check digits --------------------------------------------------------------------------

describe('bank check digits', () => {
  it('ABA routing numbers: real ones pass, a changed digit or a bad district prefix fails', () => {
    for (const n of ['021000021', '011000015', '026009593', '121000358', '322271627']) assert.ok(isAbaRoutingNumber(n), n);
    for (const n of ['021000022', '123456789', '000000000', '02100002', '0210000211', '02100002a']) assert.equal(isAbaRoutingNumber(n), false, n);
    // 50... passes the 3-7-1 checksum but 50 is no Federal Reserve district.
    assert.equal(isAbaRoutingNumber('500000005'), false);
  });

  it('IBANs: real ones pass; bad check digits, lengths and countries fail with a reason', () => {
    for (const iban of ['DE89370400440532013000', 'GB82WEST12345698765432', 'AE070331234567890123456', 'FR1420041010050500013M02606', 'NL91ABNA0417164300']) {
      assert.equal(ibanProblem(iban), undefined, iban);
    }
    assert.match(ibanProblem('DE88370400440532013000')!, /mod-97/);
    assert.match(ibanProblem('DE8937040044053201300')!, /22 characters for country DE/);
    assert.match(ibanProblem('US89370400440532013000')!, /US does not issue IBANs/);
    assert.match(ibanProblem('de89370400440532013000')!, /electronic format/);
  });

  it('CLABE: 032180000118359719 passes, any other last digit fails', () => {
    assert.ok(isClabe('032180000118359719'));
    for (let d = 0; d <= 9; d++) if (d !== 9) assert.equal(isClabe(`03218000011835971${d}`), false);
    assert.equal(isClabe('03218000011835971'), false);
  });

  it('CPF and CNPJ check digits', () => {
    assert.ok(isCpf('52998224725'));
    assert.equal(isCpf('52998224726'), false);
    assert.equal(isCpf('11111111111'), false);
    assert.ok(isCnpj('11222333000181'));
    assert.ok(isCnpj('11444777000161'));
    assert.equal(isCnpj('11222333000182'), false);
    assert.equal(isCnpj('00000000000000'), false);
  });

  it('property: every IBAN built with ISO 13616 check digits passes; changing one digit fails', () => {
    const lengths: Record<string, number> = { DE: 22, GB: 22, FR: 27, NL: 18, AE: 23, NO: 15, MT: 31 };
    const digit = fc.constantFrom(...'0123456789');
    const alnum = fc.constantFrom(...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ');
    const ibanOf = (chars: fc.Arbitrary<string>) =>
      fc
        .constantFrom(...Object.keys(lengths))
        .chain((country) =>
          fc
            .array(chars, { minLength: lengths[country]! - 4, maxLength: lengths[country]! - 4 })
            .map((bban) => withIbanCheckDigits(country, bban.join(''))),
        );
    fc.assert(
      fc.property(ibanOf(alnum), (iban) => {
        assert.equal(ibanProblem(iban), undefined, iban);
        assert.ok(checkAccountInfo({ accountType: 'IBAN', iban, beneficiary: BENEFICIARY }).ok);
      }),
    );
    fc.assert(
      fc.property(ibanOf(digit), fc.nat(), fc.integer({ min: 1, max: 9 }), (iban, at, delta) => {
        const pos = 2 + (at % (iban.length - 2));
        const changed = iban.slice(0, pos) + String((Number(iban[pos]) + delta) % 10) + iban.slice(pos + 1);
        assert.match(ibanProblem(changed)!, /mod-97/, changed);
      }),
    );
  });
});

// --- encodings -----------------------------------------------------------------------------

describe('bech32 / bech32m decoding (BIP-173, BIP-350 vectors)', () => {
  it('accepts the valid vectors with the right variant', () => {
    for (const v of ['A12UEL5L', 'a12uel5l', 'abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw', '?1ezyfcl', 'split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w']) {
      assert.equal(bech32Decode(v)?.encoding, 'bech32', v);
    }
    for (const v of ['A1LQFN3A', 'a1lqfn3a', 'abcdef1l7aum6echk45nj3s0wdvt2fg8x9yrzpqzd3ryx', '?1v759aa', 'split1checkupstagehandshakeupstreamerranterredcaperredlc445v']) {
      assert.equal(bech32Decode(v)?.encoding, 'bech32m', v);
    }
    assert.equal(
      bech32Decode('an83characterlonghumanreadablepartthatcontainsthetheexcludedcharactersbioandnumber11sg7hg6')?.encoding,
      'bech32m',
    );
  });

  it('rejects the invalid vectors', () => {
    for (const v of [
      'A1G7SGD8', // checksum computed over an upper-case HRP
      '1qzzfhee', // empty HRP
      'qyrz8wqd2c9m', // no separator
      'y1b0jsk6g', // invalid data character
      'lt1igcx5c0', // invalid data character
      'in1muywd', // too short checksum
      'mm1crxm3i', // invalid character in checksum
      'M1VUXWEZ', // checksum computed over an upper-case HRP
      'aBcDeF1l7aum6echk45nj3s0wdvt2fg8x9yrzpqzd3ryx', // mixed case
      '\x201xj0phk', // HRP character out of range
    ]) {
      assert.equal(bech32Decode(v), undefined, JSON.stringify(v));
    }
    assert.equal(bech32Decode('an84characterslonghumanreadablepartthatcontainsthetheexcludedcharactersbioandnumber11429s8g'), undefined);
  });

  it('bytes from words: reject non-zero padding', () => {
    assert.deepEqual(bech32WordsToBytes(toWords(Uint8Array.of(1, 2, 3))), Uint8Array.of(1, 2, 3));
    assert.equal(bech32WordsToBytes([31, 31]), undefined);
  });

  it('property: never throws, and round-trips the independent encoder', () => {
    fc.assert(fc.property(fc.string({ maxLength: 120 }), (s) => void bech32Decode(s)));
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), fc.constantFrom<'bech32' | 'bech32m'>('bech32', 'bech32m'), (bytes, variant) => {
        const decoded = bech32Decode(bech32Encode('sp', toWords(bytes), variant), 1024);
        assert.equal(decoded?.encoding, variant);
        assert.deepEqual(bech32WordsToBytes(decoded.words), bytes);
      }),
    );
  });
});

describe('base58', () => {
  it('decodes leading ones as zero bytes', () => {
    assert.deepEqual(base58Decode('11111111111111111111111111111111'), new Uint8Array(32));
    assert.equal(base58Decode('4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T')?.length, 32);
    assert.equal(base58Decode('0OIl'), undefined);
  });

  it('property: matches a BigInt reference encoder', () => {
    const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
    const encode = (bytes: Uint8Array): string => {
      let n = 0n;
      for (const b of bytes) n = n * 256n + BigInt(b);
      let out = '';
      for (; n > 0n; n /= 58n) out = alphabet[Number(n % 58n)] + out;
      for (const b of bytes) {
        if (b !== 0) break;
        out = `1${out}`;
      }
      return out;
    };
    fc.assert(fc.property(fc.uint8Array({ maxLength: 40 }), (bytes) => assert.deepEqual(base58Decode(encode(bytes)), bytes)));
  });
});

// --- account info schema --------------------------------------------------------------------

describe('checkAccountInfo', () => {
  it('accepts a valid example of every variant', () => {
    const examples: Record<string, unknown>[] = [
      usd({
        bankName: 'Chase',
        platformAccountId: 'acct-1',
        beneficiary: {
          beneficiaryType: 'INDIVIDUAL',
          fullName: 'Ada Lovelace',
          birthDate: '1990-02-28',
          nationality: 'GB',
          address: { line1: '1 Main St', city: 'New York', state: 'NY', postalCode: '10001', country: 'US' },
        },
      }),
      { accountType: 'US_ACCOUNT', accountNumber: '0001234', routingNumber: '011000015', accountCategory: 'SAVINGS', beneficiary: BENEFICIARY },
      { accountType: 'BRL_ACCOUNT', pixKey: '52998224725', pixKeyType: 'CPF', taxId: '11222333000181' },
      { accountType: 'BRL_ACCOUNT', pixKey: 'ana@example.com.br', pixKeyType: 'EMAIL' },
      { accountType: 'BRL_ACCOUNT', pixKey: '+5511987654321', pixKeyType: 'PHONE' },
      { accountType: 'BRL_ACCOUNT', pixKey: '123e4567-e89b-42d3-a456-426614174000', pixKeyType: 'RANDOM' },
      { accountType: 'BRL_ACCOUNT', pixKey: '11222333000181', pixKeyType: 'CNPJ' },
      { accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' },
      { accountType: 'CLABE', clabe: '032180000118359719', bankName: 'BBVA', beneficiary: BENEFICIARY },
      { accountType: 'IBAN', iban: 'DE89370400440532013000', swiftCode: 'COBADEFFXXX', beneficiary: BENEFICIARY },
      { accountType: 'IBAN', iban: 'GB82WEST12345698765432', beneficiary: BENEFICIARY },
      { accountType: 'UPI', vpa: 'ravi.kumar@okhdfcbank' },
      { accountType: 'SPARK_WALLET', address: SPARK_MAINNET },
      { accountType: 'LIGHTNING', address: 'satoshi@example.com' },
      { accountType: 'LIGHTNING', address: BOLT11_MAINNET },
      { accountType: 'SOLANA_WALLET', address: '4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T' },
      { accountType: 'ETHEREUM_WALLET', address: EIP55 },
      { accountType: 'BASE_WALLET', address: EIP55.toLowerCase() },
    ];
    for (const example of examples) assert.deepEqual(accept(example), example);
    assert.deepEqual(new Set(examples.map((e) => e.accountType)), new Set(ACCOUNT_TYPES));
  });

  it('rejects non-objects and unknown account types on the right field', () => {
    for (const value of [null, 'x', 3, [], undefined]) rejectAt(value, 'accountInfo', /object/);
    rejectAt({}, 'accountInfo.accountType', /must be one of USD_ACCOUNT, .*BASE_WALLET/);
    rejectAt({ accountType: 'CHEQUE' }, 'accountInfo.accountType', /IBAN/);
    rejectAt({ accountType: 7 }, 'accountInfo.accountType');
    const custom = checkAccountInfo({ accountType: 'X' }, 'body.destination');
    assert.deepEqual(!custom.ok && custom.errors.map((e) => e.field), ['body.destination.accountType']);
  });

  it('reports schema errors with dotted paths, one per field', () => {
    const result = checkAccountInfo({
      accountType: 'USD_ACCOUNT',
      accountNumber: '12',
      routingNumber: 21000021,
      beneficiary: { beneficiaryType: 'BUSINESS', address: { line1: 'x', city: 'y', postalCode: 'z', country: 'usa' } },
    });
    assert.ok(!result.ok);
    const byField = new Map(result.errors.map((e) => [e.field, e.message]));
    assert.equal(byField.size, result.errors.length);
    assert.match(byField.get('accountInfo.accountNumber')!, /4 to 17 digits/);
    assert.match(byField.get('accountInfo.routingNumber')!, /must be a string/);
    assert.equal(byField.get('accountInfo.bankAccountType'), undefined, 'bankAccountType defaults to CHECKING');
    assert.match(byField.get('accountInfo.beneficiary.fullName')!, /is required/);
    assert.match(byField.get('accountInfo.beneficiary.beneficiaryType')!, /must be INDIVIDUAL/);
    assert.match(byField.get('accountInfo.beneficiary.address.country')!, /alpha-2/);
  });

  it('requires the beneficiary on USD_ACCOUNT, US_ACCOUNT, CLABE and IBAN; optional on BRL_ACCOUNT, AED_ACCOUNT and UPI', () => {
    const without = (info: Record<string, unknown>) => {
      const { beneficiary: _dropped, ...rest } = info;
      return rest;
    };
    const required: Record<string, unknown>[] = [
      usd(),
      { accountType: 'US_ACCOUNT', accountNumber: '0001234', routingNumber: '011000015', beneficiary: BENEFICIARY },
      { accountType: 'CLABE', clabe: '032180000118359719', beneficiary: BENEFICIARY },
      { accountType: 'IBAN', iban: 'DE89370400440532013000', beneficiary: BENEFICIARY },
    ];
    for (const info of required) {
      accept(info);
      rejectAt(without(info), 'accountInfo.beneficiary', /is required/);
      rejectAt({ ...info, beneficiary: { beneficiaryType: 'INDIVIDUAL' } }, 'accountInfo.beneficiary.fullName', /is required/);
    }
    const optional: Record<string, unknown>[] = [
      { accountType: 'BRL_ACCOUNT', pixKey: '52998224725', pixKeyType: 'CPF' },
      { accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' },
      { accountType: 'UPI', vpa: 'ravi.kumar@okhdfcbank' },
    ];
    for (const info of optional) {
      assert.deepEqual(accept(info), info);
      assert.deepEqual(accept({ ...info, beneficiary: BENEFICIARY }), { ...info, beneficiary: BENEFICIARY });
      rejectAt({ ...info, beneficiary: { ...BENEFICIARY, nationality: 'XX' } }, 'accountInfo.beneficiary.nationality', /ISO 3166/);
    }
  });

  it('checks enums, lengths and patterns', () => {
    rejectAt(usd({ bankAccountType: 'MONEY_MARKET' }), 'accountInfo.bankAccountType', /one of CHECKING, SAVINGS/);
    rejectAt(usd({ accountNumber: '1'.repeat(18) }), 'accountInfo.accountNumber');
    rejectAt(usd({ bankName: '' }), 'accountInfo.bankName', /empty/);
    rejectAt(usd({ bankName: 'x'.repeat(1025) }), 'accountInfo.bankName', /at most 1024/);
    rejectAt(usd({ bankName: null }), 'accountInfo.bankName', /string/);
    rejectAt(usd({ beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: '   ' } }), 'accountInfo.beneficiary.fullName', /blank/);
    rejectAt(usd({ beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'x'.repeat(1025) } }), 'accountInfo.beneficiary.fullName', /at most 1024/);
    rejectAt({ accountType: 'CLABE', clabe: '1'.repeat(19), beneficiary: BENEFICIARY }, 'accountInfo.clabe', /18-digit CLABE/);
    rejectAt({ accountType: 'IBAN', iban: 'DE89 3704 0044 0532 0130 00', beneficiary: BENEFICIARY }, 'accountInfo.iban', /no spaces/);
    rejectAt({ accountType: 'IBAN', iban: 'DE89370400440532013000', swiftCode: 'COBADEFFXX', beneficiary: BENEFICIARY }, 'accountInfo.swiftCode', /SWIFT/);
    rejectAt({ accountType: 'IBAN', iban: 'DE89370400440532013000', swiftCode: '1OBADEFF', beneficiary: BENEFICIARY }, 'accountInfo.swiftCode');
    rejectAt({ accountType: 'UPI', vpa: 'no-at-sign' }, 'accountInfo.vpa', /name@bank/);
    rejectAt({ accountType: 'ETHEREUM_WALLET', address: '5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' }, 'accountInfo.address', /0x/);
    rejectAt({ accountType: 'SOLANA_WALLET', address: '0OIl0OIl0OIl0OIl0OIl0OIl0OIl0OIl' }, 'accountInfo.address', /base58/);
    rejectAt({ accountType: 'LIGHTNING', address: 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq' }, 'accountInfo.address', /lightning/);
    rejectAt({ accountType: 'SPARK_WALLET' }, 'accountInfo.address', /required/);
  });

  it('runs the check-digit and country checks after the schema', () => {
    rejectAt(usd({ routingNumber: '021000022' }), 'accountInfo.routingNumber', /ABA/);
    rejectAt({ accountType: 'US_ACCOUNT', accountNumber: '1234', routingNumber: '123456789', accountCategory: 'CHECKING', beneficiary: BENEFICIARY }, 'accountInfo.routingNumber');
    rejectAt({ accountType: 'CLABE', clabe: '032180000118359710', beneficiary: BENEFICIARY }, 'accountInfo.clabe', /CLABE checksum/);
    rejectAt({ accountType: 'IBAN', iban: 'DE88370400440532013000', beneficiary: BENEFICIARY }, 'accountInfo.iban', /mod-97/);
    rejectAt({ accountType: 'IBAN', iban: 'DE8937040044053201300099', beneficiary: BENEFICIARY }, 'accountInfo.iban', /22 characters/);
    rejectAt({ accountType: 'IBAN', iban: 'DE89370400440532013000', swiftCode: 'COBAQQFF', beneficiary: BENEFICIARY }, 'accountInfo.swiftCode', /QQ/);
    rejectAt({ accountType: 'AED_ACCOUNT', iban: 'DE89370400440532013000', swiftCode: 'EBILAEAD' }, 'accountInfo.iban', /UAE/);
    rejectAt({ accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456' }, 'accountInfo.swiftCode', /required/);
    rejectAt({ accountType: 'BRL_ACCOUNT', pixKey: '52998224726', pixKeyType: 'CPF' }, 'accountInfo.pixKey', /CPF/);
    rejectAt({ accountType: 'BRL_ACCOUNT', pixKey: '52998224725', pixKeyType: 'CNPJ' }, 'accountInfo.pixKey', /CNPJ/);
    rejectAt({ accountType: 'BRL_ACCOUNT', pixKey: 'not-an-email', pixKeyType: 'EMAIL' }, 'accountInfo.pixKey', /e-mail/);
    rejectAt({ accountType: 'BRL_ACCOUNT', pixKey: '+15551234567', pixKeyType: 'PHONE' }, 'accountInfo.pixKey', /\+55/);
    rejectAt({ accountType: 'BRL_ACCOUNT', pixKey: 'abc', pixKeyType: 'RANDOM' }, 'accountInfo.pixKey', /UUID/);
    rejectAt({ accountType: 'BRL_ACCOUNT', pixKey: 'a@b.co', pixKeyType: 'EMAIL', taxId: '11222333000182' }, 'accountInfo.taxId', /check digits/);
    const beneficiary = (over: Record<string, unknown>) => usd({ beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'A', ...over } });
    rejectAt(beneficiary({ birthDate: '2023-02-29' }), 'accountInfo.beneficiary.birthDate', /calendar date/);
    rejectAt(beneficiary({ birthDate: '1990-13-01' }), 'accountInfo.beneficiary.birthDate');
    rejectAt(beneficiary({ birthDate: '01/02/1990' }), 'accountInfo.beneficiary.birthDate', /YYYY-MM-DD/);
    accept(beneficiary({ birthDate: '2024-02-29' }));
    rejectAt(beneficiary({ nationality: 'XX' }), 'accountInfo.beneficiary.nationality', /ISO 3166/);
    rejectAt(
      beneficiary({ address: { line1: 'a', city: 'b', postalCode: 'c', country: 'ZZ' } }),
      'accountInfo.beneficiary.address.country',
      /ISO 3166/,
    );
  });

  it('drops unknown properties at every level and never mutates its input', () => {
    const input = usd({
      extra: { deep: true },
      routingNumber: '021000021',
      beneficiary: {
        beneficiaryType: 'INDIVIDUAL',
        fullName: 'Ada',
        nickname: 'A',
        address: { line1: 'x', city: 'y', postalCode: 'z', country: 'US', floor: 3 },
      },
    });
    const snapshot = structuredClone(input);
    assert.deepEqual(accept(input), {
      accountType: 'USD_ACCOUNT',
      accountNumber: '123456789',
      routingNumber: '021000021',
      bankAccountType: 'CHECKING',
      beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada', address: { line1: 'x', city: 'y', postalCode: 'z', country: 'US' } },
    });
    assert.deepEqual(input, snapshot);
    // A field of another variant is unknown here, so it is dropped too.
    assert.deepEqual(accept({ accountType: 'UPI', vpa: 'a1@upi', iban: 'DE89370400440532013000' }), { accountType: 'UPI', vpa: 'a1@upi' });
  });

  it('AccountInfoSchema lists every variant once', () => {
    assert.deepEqual(
      AccountInfoSchema.anyOf.map((v) => v.properties.accountType.const),
      [...ACCOUNT_TYPES],
    );
  });

  it('property: never throws, whatever the input', () => {
    fc.assert(fc.property(fc.anything(), (value) => void checkAccountInfo(value)));
    fc.assert(
      fc.property(
        fc.constantFrom(...ACCOUNT_TYPES),
        fc.dictionary(
          fc.constantFrom('accountNumber', 'routingNumber', 'iban', 'swiftCode', 'clabe', 'pixKey', 'pixKeyType', 'taxId', 'vpa', 'address', 'beneficiary'),
          fc.oneof(fc.string(), fc.jsonValue()),
        ),
        (accountType, fields) => {
          const result = checkAccountInfo({ ...fields, accountType });
          if (result.ok) for (const network of [undefined, ...CRYPTO_NETWORKS]) checkAccountSemantics(result.value, 'USD', network);
        },
      ),
    );
  });
});

// --- account semantics -------------------------------------------------------------------------

describe('checkAccountSemantics', () => {
  it('matches currency to account type', () => {
    assert.deepEqual(semantics(usd(), 'USD'), []);
    semanticError(usd(), 'EUR', undefined, 'currency', /USD_ACCOUNT accounts carry USD, not EUR/);
    assert.deepEqual(semantics({ accountType: 'CLABE', clabe: '032180000118359719', beneficiary: BENEFICIARY }, 'MXN'), []);
    for (const c of ['EUR', 'GBP', 'AED']) assert.deepEqual(semantics({ accountType: 'IBAN', iban: 'DE89370400440532013000', beneficiary: BENEFICIARY }, c), []);
    semanticError({ accountType: 'IBAN', iban: 'DE89370400440532013000', beneficiary: BENEFICIARY }, 'USD', undefined, 'currency', /EUR or GBP or AED/);
    assert.deepEqual(semantics({ accountType: 'UPI', vpa: 'a1@upi' }, 'INR'), []);
    assert.deepEqual(semantics({ accountType: 'BRL_ACCOUNT', pixKey: 'a@b.co', pixKeyType: 'EMAIL' }, 'BRL'), []);
    assert.deepEqual(semantics({ accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' }, 'AED'), []);
    for (const c of ['BTC', 'USDB']) assert.deepEqual(semantics({ accountType: 'SPARK_WALLET', address: SPARK_MAINNET }, c, 'SPARK_MAINNET'), []);
    semanticError({ accountType: 'LIGHTNING', address: 'a@b.co' }, 'USDB', 'LIGHTNING_MAINNET', 'currency', /carry BTC/);
    assert.deepEqual(semantics({ accountType: 'BASE_WALLET', address: EIP55 }, 'USDC', 'BASE_TESTNET'), []);
    semanticError({ accountType: 'SOLANA_WALLET', address: '11111111111111111111111111111111' }, 'BTC', 'SOLANA_MAINNET', 'currency', /USDC/);
  });

  it('requires a cryptoNetwork of the wallet family, and forbids one on bank accounts', () => {
    semanticError(usd(), 'USD', 'SOLANA_MAINNET', 'cryptoNetwork', /crypto wallets only/);
    const sol = { accountType: 'SOLANA_WALLET', address: '11111111111111111111111111111111' };
    semanticError(sol, 'USDC', undefined, 'cryptoNetwork', /required for SOLANA_WALLET: one of SOLANA_MAINNET, SOLANA_DEVNET/);
    semanticError(sol, 'USDC', 'ETHEREUM_MAINNET', 'cryptoNetwork', /SOLANA_MAINNET, SOLANA_DEVNET/);
    semanticError(sol, 'USDC', 'SOLANA_TESTNET', 'cryptoNetwork', /SOLANA_DEVNET/);
    assert.deepEqual(semantics(sol, 'USDC', 'SOLANA_DEVNET'), []);
    const pairs: [string, string][] = [
      ['ETHEREUM_WALLET', 'ETHEREUM_MAINNET'],
      ['ETHEREUM_WALLET', 'ETHEREUM_TESTNET'],
      ['BASE_WALLET', 'BASE_MAINNET'],
    ];
    for (const [accountType, network] of pairs) assert.deepEqual(semantics({ accountType, address: EIP55 }, 'USDC', network), []);
    semanticError({ accountType: 'BASE_WALLET', address: EIP55 }, 'USDC', 'ETHEREUM_MAINNET', 'cryptoNetwork', /BASE_MAINNET, BASE_TESTNET/);
  });

  it('Solana: base58 that decodes to exactly 32 bytes', () => {
    for (const address of ['11111111111111111111111111111111', '4Nd1mBQtrMJVYVfKf2PJy9NZUZdTAsp7D4xWLs4gDB4T', 'So11111111111111111111111111111111111111112']) {
      assert.deepEqual(semantics({ accountType: 'SOLANA_WALLET', address }, 'USDC', 'SOLANA_MAINNET'), [], address);
    }
    semanticError(
      { accountType: 'SOLANA_WALLET', address: 'z'.repeat(44) },
      'USDC',
      'SOLANA_MAINNET',
      'accountInfo.address',
      /^address is not a valid Solana address: must decode to 32 bytes, got 33$/,
    );
    semanticError(
      { accountType: 'SOLANA_WALLET', address: `1${'2'.repeat(31)}` },
      'USDC',
      'SOLANA_MAINNET',
      'accountInfo.address',
      /must decode to 32 bytes/,
    );
  });

  it('EVM: EIP-55 checksum when mixed case', () => {
    for (const address of [
      EIP55,
      '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
      '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
      '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
      EIP55.toLowerCase(),
      `0x${EIP55.slice(2).toUpperCase()}`,
    ]) {
      assert.deepEqual(semantics({ accountType: 'ETHEREUM_WALLET', address }, 'USDC', 'ETHEREUM_MAINNET'), [], address);
    }
    semanticError(
      { accountType: 'ETHEREUM_WALLET', address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' },
      'USDC',
      'ETHEREUM_MAINNET',
      'accountInfo.address',
      /not a valid Ethereum address: mixed-case EIP-55 checksum/,
    );
    semanticError(
      { accountType: 'BASE_WALLET', address: '0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' },
      'USDC',
      'BASE_MAINNET',
      'accountInfo.address',
      /not a valid Base address/,
    );
  });

  it('Spark: bech32m with a network-matching HRP and an identity key payload', () => {
    const spark = (address: string, network: string) => semantics({ accountType: 'SPARK_WALLET', address }, 'BTC', network);
    assert.deepEqual(spark(SPARK_MAINNET, 'SPARK_MAINNET'), []);
    assert.deepEqual(spark(SPARK_TESTNET, 'SPARK_TESTNET'), []);
    assert.deepEqual(spark(bech32Encode('spark', SPARK_WORDS, 'bech32m'), 'SPARK_MAINNET'), []);
    assert.deepEqual(spark(bech32Encode('sparkt', SPARK_WORDS, 'bech32m'), 'SPARK_TESTNET'), []);
    const problem = (address: string, network: string) => spark(address, network).find((e) => e.field === 'accountInfo.address')?.message;
    assert.match(problem(SPARK_MAINNET, 'SPARK_TESTNET')!, /SPARK_MAINNET address but cryptoNetwork is SPARK_TESTNET/);
    assert.match(problem(SPARK_TESTNET, 'SPARK_MAINNET')!, /SPARK_TESTNET address/);
    assert.match(problem(bech32Encode('sp', SPARK_WORDS, 'bech32'), 'SPARK_MAINNET')!, /bech32m/);
    assert.match(problem(bech32Encode('sprt', SPARK_WORDS, 'bech32m'), 'SPARK_MAINNET')!, /prefix sprt/);
    assert.match(problem(`${SPARK_MAINNET.slice(0, -1)}q`, 'SPARK_MAINNET')!, /checksum/);
    assert.match(problem(bech32Encode('sp', toWords(new Uint8Array(35)), 'bech32m'), 'SPARK_MAINNET')!, /identity public key/);
  });

  it('Lightning: addresses on both networks, invoices per network', () => {
    const ln = (address: string, network: string) => semantics({ accountType: 'LIGHTNING', address }, 'BTC', network);
    for (const network of ['LIGHTNING_MAINNET', 'LIGHTNING_REGTEST']) {
      assert.deepEqual(ln('satoshi@example.com', network), []);
      assert.deepEqual(ln('$user005@pay.example.org', network), []);
    }
    assert.deepEqual(ln(BOLT11_MAINNET, 'LIGHTNING_MAINNET'), []);
    assert.deepEqual(ln(BOLT11_REGTEST, 'LIGHTNING_REGTEST'), []);
    assert.deepEqual(ln(BOLT11_MAINNET.toUpperCase(), 'LIGHTNING_MAINNET'), []);
    const problem = (address: string, network: string) => ln(address, network).find((e) => e.field === 'accountInfo.address')?.message;
    assert.match(problem(BOLT11_MAINNET, 'LIGHTNING_REGTEST')!, /LIGHTNING_MAINNET invoice but cryptoNetwork is LIGHTNING_REGTEST/);
    assert.match(problem(BOLT11_REGTEST, 'LIGHTNING_MAINNET')!, /LIGHTNING_REGTEST invoice/);
    assert.match(problem(BOLT11_TESTNET, 'LIGHTNING_MAINNET')!, /chain tb/);
    assert.match(problem(`${BOLT11_MAINNET.slice(0, -1)}q`, 'LIGHTNING_MAINNET')!, /BOLT11/);
    assert.match(problem(bech32Encode('lnbc', BOLT11_WORDS, 'bech32m'), 'LIGHTNING_MAINNET')!, /BOLT11/);
    assert.match(problem(bech32Encode('lnbc', BOLT11_WORDS.slice(0, 50), 'bech32'), 'LIGHTNING_MAINNET')!, /BOLT11/);
    assert.match(problem('a@-bad-.example.com', 'LIGHTNING_MAINNET')!, /lightning address: must be user@domain/);
    rejectAt({ accountType: 'LIGHTNING', address: 'a@b@example.com' }, 'accountInfo.address', /user@domain/);
  });

  it('property: never throws on random wallet addresses', () => {
    const walletTypes = ['SOLANA_WALLET', 'ETHEREUM_WALLET', 'BASE_WALLET', 'SPARK_WALLET', 'LIGHTNING'] as const;
    fc.assert(
      fc.property(fc.constantFrom(...walletTypes), fc.string({ maxLength: 200 }), fc.constantFrom(undefined, ...CRYPTO_NETWORKS), (accountType, address, network) => {
        // Bypasses the schema on purpose: the domain rules must hold up on their own.
        const errors = checkAccountSemantics({ accountType, address }, 'BTC', network);
        assert.ok(Array.isArray(errors));
      }),
    );
  });
});

// --- sandbox identifiers ------------------------------------------------------------------------

describe('primary identifier and sandbox suffix', () => {
  it('picks the identifier of each account type, username portion for domain identifiers', () => {
    const cases: [unknown, string][] = [
      [usd({ accountNumber: '000123456005' }), '000123456005'],
      [{ accountType: 'US_ACCOUNT', accountNumber: '9876', routingNumber: '021000021', accountCategory: 'CHECKING', beneficiary: BENEFICIARY }, '9876'],
      [{ accountType: 'IBAN', iban: 'DE89370400440532013000', beneficiary: BENEFICIARY }, 'DE89370400440532013000'],
      [{ accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' }, 'AE070331234567890123456'],
      [{ accountType: 'CLABE', clabe: '032180000118359719', beneficiary: BENEFICIARY }, '032180000118359719'],
      [{ accountType: 'BRL_ACCOUNT', pixKey: '52998224725', pixKeyType: 'CPF' }, '52998224725'],
      [{ accountType: 'BRL_ACCOUNT', pixKey: 'maria105@example.com.br', pixKeyType: 'EMAIL' }, 'maria105'],
      [{ accountType: 'UPI', vpa: 'ravi003@okaxis' }, 'ravi003'],
      [{ accountType: 'LIGHTNING', address: 'user005@domain.com' }, 'user005'],
      [{ accountType: 'LIGHTNING', address: '$user005@domain.com' }, 'user005'],
      [{ accountType: 'SPARK_WALLET', address: SPARK_MAINNET }, SPARK_MAINNET],
      [{ accountType: 'ETHEREUM_WALLET', address: EIP55 }, EIP55],
    ];
    for (const [info, expected] of cases) assert.equal(primaryIdentifier(accept(info)), expected);
  });

  it('suffix is the last 3 characters', () => {
    assert.equal(sandboxSuffix('000123456005'), '005');
    assert.equal(sandboxSuffix('user102'), '102');
    assert.equal(sandboxSuffix('12'), '12');
    assert.equal(sandboxSuffix(primaryIdentifier(accept({ accountType: 'LIGHTNING', address: '$user005@domain.com' }))), '005');
  });
});

describe('beneficiaryVerification', () => {
  const named = (accountNumber: string) =>
    accept(usd({ accountNumber, beneficiary: { beneficiaryType: 'INDIVIDUAL', fullName: 'Ada Lovelace' } }));

  it('sandbox: the 1xx suffix table', () => {
    const expected: Record<string, unknown> = {
      '101': { status: 'MATCHED', verifiedData: { fullName: 'Ada Lovelace' } },
      '102': { status: 'NOT_MATCHED' },
      '103': { status: 'PARTIAL_MATCH', verifiedData: { fullName: 'Ada Lovelace' } },
      '104': { status: 'PENDING' },
      '106': { status: 'UNSUPPORTED' },
      '107': { status: 'CHECKED_BY_RECEIVING_FI' },
      '108': { status: 'MATCHED', verifiedData: { fullName: 'Ada Lovelace' } },
      '002': { status: 'MATCHED', verifiedData: { fullName: 'Ada Lovelace' } },
    };
    for (const [suffix, outcome] of Object.entries(expected)) {
      assert.deepEqual(beneficiaryVerification(named(`123456${suffix}`), 'sandbox'), outcome, suffix);
    }
    const invalid = beneficiaryVerification(named('123456105'), 'sandbox');
    assert.ok('fail' in invalid && invalid.fail === 400 && /invalid account/.test(invalid.message));
    const simulated = beneficiaryVerification(named('123456109'), 'sandbox');
    assert.ok('fail' in simulated && simulated.fail === 500);
  });

  it('sandbox: applies to every bank rail, with verified data only when a name was given', () => {
    assert.deepEqual(beneficiaryVerification(accept(usd({ accountNumber: '1234567' })), 'sandbox'), {
      status: 'MATCHED',
      verifiedData: { fullName: 'Ada Lovelace' },
    });
    assert.deepEqual(beneficiaryVerification(accept({ accountType: 'AED_ACCOUNT', iban: 'AE070331234567890123456', swiftCode: 'EBILAEAD' }), 'sandbox'), {
      status: 'MATCHED',
    });
    assert.deepEqual(beneficiaryVerification(accept({ accountType: 'UPI', vpa: 'ravi102@okaxis' }), 'sandbox'), { status: 'NOT_MATCHED' });
    const clabe = clabeEndingWith('107');
    assert.ok(isClabe(clabe) && clabe.endsWith('107'));
    assert.deepEqual(beneficiaryVerification(accept({ accountType: 'CLABE', clabe, beneficiary: BENEFICIARY }), 'sandbox'), { status: 'CHECKED_BY_RECEIVING_FI' });
    const iban = withIbanCheckDigits('DE', '370400440532013103');
    assert.deepEqual(beneficiaryVerification(accept({ accountType: 'IBAN', iban, beneficiary: BENEFICIARY }), 'sandbox'), {
      status: 'PARTIAL_MATCH',
      verifiedData: { fullName: 'Ada Lovelace' },
    });
    assert.deepEqual(beneficiaryVerification(accept({ accountType: 'BRL_ACCOUNT', pixKey: 'ana104@example.com', pixKeyType: 'EMAIL' }), 'sandbox'), {
      status: 'PENDING',
    });
  });

  it('wallets are UNSUPPORTED whatever the suffix', () => {
    for (const env of ['sandbox', 'production'] as const) {
      assert.deepEqual(beneficiaryVerification(accept({ accountType: 'LIGHTNING', address: 'user105@domain.com' }), env), { status: 'UNSUPPORTED' });
      assert.deepEqual(beneficiaryVerification(accept({ accountType: 'SPARK_WALLET', address: SPARK_MAINNET }), env), { status: 'UNSUPPORTED' });
    }
  });

  it('production: PENDING with a beneficiary, UNSUPPORTED without; suffixes do nothing', () => {
    assert.deepEqual(beneficiaryVerification(named('123456109'), 'production'), { status: 'PENDING' });
    assert.deepEqual(
      beneficiaryVerification(accept({ accountType: 'BRL_ACCOUNT', pixKey: 'ana105@example.com', pixKeyType: 'EMAIL' }), 'production'),
      { status: 'UNSUPPORTED' },
    );
    assert.deepEqual(beneficiaryVerification(accept({ accountType: 'UPI', vpa: 'ravi@okaxis' }), 'production'), { status: 'UNSUPPORTED' });
  });
});
