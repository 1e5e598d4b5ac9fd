// accountInfo of an external account (SERVICE_SPEC part 2, "ExternalAccount"): one schema
// per `accountType`. The spec gives field lists for USD_ACCOUNT, US_ACCOUNT, BRL_ACCOUNT,
// AED_ACCOUNT and SPARK_WALLET but not which are required; CLABE, IBAN, UPI and the other
// wallets are ours. Decisions:
// - The identifying fields (account and routing numbers, IBAN, CLABE, pix key and type,
//   VPA, wallet address) are required, and so is the beneficiary (type and full name) of
//   USD_ACCOUNT, US_ACCOUNT, CLABE and IBAN (CONTRACT.md: fiat needs the beneficiary's type
//   and name). BRL_ACCOUNT, AED_ACCOUNT and UPI, which the spec lists without one, accept
//   an optional beneficiary. Bank names, taxId and platformAccountId are optional, and the bank account type (bankAccountType, accountCategory) defaults to
//   CHECKING (CONTRACT.md). AED_ACCOUNT needs its swiftCode (the spec
//   lists only iban and swiftCode); for IBAN it is optional, as SEPA does not need it.
// - Numbers are in canonical form: digits only, IBAN in electronic format (upper case, no
//   spaces), SWIFT codes upper case. Nothing is rewritten, so the identifier the caller
//   sent is the one whose sandbox suffix counts.
// - An optional field is absent or a valid value; null is not accepted for it.
// - Unknown properties are ignored and dropped: the checked value holds known fields only.
// Wallet addresses get a shape check here; whether they are valid on the chosen
// cryptoNetwork is a domain rule (actors/identifiers.ts, checkAccountSemantics).
import { KindGuard, Type, type Static, type StringOptions, type TObject } from '@sinclair/typebox';
import { TypeCompiler, ValueErrorType, type TypeCheck, type ValueError } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import type { AccountInfo, AccountInfoOf, AccountType, Beneficiary } from '../../../actors/account-info.js';
import { ibanProblem, isAbaRoutingNumber, isClabe, isCnpj, isCpf } from '../../../actors/identifiers.js';
import { ISO_COUNTRIES } from '../../../actors/reference.js';
import type { FieldProblem } from '../../../actors/errors.js';
import type { Holds, Same } from './same-shape.js';
import { MAX_STRING, Text, TEXT_PATTERN, TEXT_RULE } from '../validation.js';

/** Free text (a bank's name, the beneficiary's, an address line): not empty, no control characters. */
function text(options: Omit<StringOptions, 'pattern'> = {}) {
  return Text({ minLength: 1, ...options });
}

/** A string field checked by `pattern`; `description` completes the sentence "must be …". */
function shaped(pattern: string, description: string, maxLength = MAX_STRING) {
  return Type.String({ pattern, description, maxLength });
}

const CountryCode = shaped('^[A-Z]{2}$', 'an ISO 3166-1 alpha-2 country code', 2);
const SwiftCode = shaped(
  '^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}(?:[A-Z0-9]{3})?$',
  'a SWIFT/BIC code: 4-letter bank code, 2-letter country, 2-character location, optional 3-character branch',
  11,
);
const Iban = shaped(
  '^[A-Z]{2}[0-9]{2}[A-Z0-9]{11,30}$',
  'an IBAN in electronic format: 2-letter country code, 2 check digits, up to 30 letters or digits, no spaces',
  34,
);
const UsAccountNumber = shaped('^[0-9]{4,17}$', 'a US account number of 4 to 17 digits', 17);
const RoutingNumber = shaped('^[0-9]{9}$', 'a 9-digit ABA routing number', 9);
/** Existing clients leave the bank account type out (CONTRACT.md): it defaults to CHECKING. */
const DefaultedBankAccountType = Type.Optional(Type.Union([Type.Literal('CHECKING'), Type.Literal('SAVINGS')], { default: 'CHECKING' }));

const PostalAddressSchema = Type.Object({
  line1: text(),
  line2: Type.Optional(text()),
  city: text(),
  state: Type.Optional(text()),
  postalCode: text({ maxLength: 32 }),
  country: CountryCode,
});

const BeneficiarySchema = Type.Object(
  {
    beneficiaryType: Type.Literal('INDIVIDUAL'),
    fullName: text(),
    birthDate: Type.Optional(shaped('^[0-9]{4}-[0-9]{2}-[0-9]{2}$', 'a date in YYYY-MM-DD form', 10)),
    nationality: Type.Optional(CountryCode),
    address: Type.Optional(PostalAddressSchema),
  },
  { $id: 'Beneficiary' },
);

const UsdAccountSchema = Type.Object(
  {
    accountType: Type.Literal('USD_ACCOUNT'),
    accountNumber: UsAccountNumber,
    routingNumber: RoutingNumber,
    bankAccountType: DefaultedBankAccountType,
    bankName: Type.Optional(text()),
    platformAccountId: Type.Optional(text()),
    beneficiary: BeneficiarySchema,
  },
  { $id: 'UsdAccountInfo', description: 'US bank account (ACH / wire), currency USD' },
);

const UsAccountSchema = Type.Object(
  {
    accountType: Type.Literal('US_ACCOUNT'),
    accountNumber: UsAccountNumber,
    routingNumber: RoutingNumber,
    accountCategory: DefaultedBankAccountType,
    bankName: Type.Optional(text()),
    beneficiary: BeneficiarySchema,
  },
  { $id: 'UsAccountInfo', description: 'US bank account, currency USD' },
);

const BrlAccountSchema = Type.Object(
  {
    accountType: Type.Literal('BRL_ACCOUNT'),
    // 77 characters is the longest key the Brazilian PIX directory (DICT) accepts.
    pixKey: text({ maxLength: 77 }),
    pixKeyType: Type.Union([Type.Literal('CPF'), Type.Literal('CNPJ'), Type.Literal('EMAIL'), Type.Literal('PHONE'), Type.Literal('RANDOM')]),
    taxId: Type.Optional(shaped('^(?:[0-9]{11}|[0-9]{14})$', 'a CPF (11 digits) or CNPJ (14 digits)', 14)),
    beneficiary: Type.Optional(BeneficiarySchema),
  },
  { $id: 'BrlAccountInfo', description: 'Brazilian PIX key, currency BRL' },
);

const AedAccountSchema = Type.Object(
  {
    accountType: Type.Literal('AED_ACCOUNT'),
    iban: Iban,
    swiftCode: SwiftCode,
    beneficiary: Type.Optional(BeneficiarySchema),
  },
  { $id: 'AedAccountInfo', description: 'UAE bank account (AE IBAN), currency AED' },
);

const ClabeAccountSchema = Type.Object(
  {
    accountType: Type.Literal('CLABE'),
    clabe: shaped('^[0-9]{18}$', 'an 18-digit CLABE', 18),
    bankName: Type.Optional(text()),
    beneficiary: BeneficiarySchema,
  },
  { $id: 'ClabeAccountInfo', description: 'Mexican bank account (SPEI), currency MXN' },
);

const IbanAccountSchema = Type.Object(
  {
    accountType: Type.Literal('IBAN'),
    iban: Iban,
    swiftCode: Type.Optional(SwiftCode),
    bankName: Type.Optional(text()),
    beneficiary: BeneficiarySchema,
  },
  { $id: 'IbanAccountInfo', description: 'Bank account identified by IBAN (SEPA and others), currency EUR, GBP or AED' },
);

const UpiAccountSchema = Type.Object(
  {
    accountType: Type.Literal('UPI'),
    vpa: shaped('^[A-Za-z0-9._-]{2,256}@[A-Za-z][A-Za-z0-9]{1,63}$', 'a UPI virtual payment address such as name@bank', 321),
    beneficiary: Type.Optional(BeneficiarySchema),
  },
  { $id: 'UpiAccountInfo', description: 'Indian UPI virtual payment address, currency INR' },
);

function wallet<T extends string>(accountType: T, pattern: string, description: string, name: string) {
  return Type.Object({ accountType: Type.Literal(accountType), address: shaped(pattern, description) }, { $id: name });
}

const SparkWalletSchema = wallet(
  'SPARK_WALLET',
  '^[A-Za-z]+1[A-Za-z0-9]{6,}$',
  'a bech32m Spark address (sp1…, spt1…, spark1…, sparkt1…)',
  'SparkWalletInfo',
);
const LightningSchema = wallet(
  'LIGHTNING',
  '^(?:\\$?[A-Za-z0-9._+-]{1,64}@[A-Za-z0-9.-]+\\.[A-Za-z]{2,63}|(?:ln|LN)[A-Za-z0-9]+)$',
  'a lightning address (user@domain) or a BOLT11 invoice (lnbc…, lnbcrt…)',
  'LightningInfo',
);
const SolanaWalletSchema = wallet(
  'SOLANA_WALLET',
  '^[1-9A-HJ-NP-Za-km-z]{32,44}$',
  'a base58 Solana address of 32 to 44 characters',
  'SolanaWalletInfo',
);
const EthereumWalletSchema = wallet(
  'ETHEREUM_WALLET',
  '^0x[0-9a-fA-F]{40}$',
  'an Ethereum address: 0x followed by 40 hex digits',
  'EthereumWalletInfo',
);
const BaseWalletSchema = wallet(
  'BASE_WALLET',
  '^0x[0-9a-fA-F]{40}$',
  'a Base address: 0x followed by 40 hex digits',
  'BaseWalletInfo',
);

/** Every accountInfo variant, for the OpenAPI document. */
export const AccountInfoSchema = Type.Union(
  [
    UsdAccountSchema,
    UsAccountSchema,
    BrlAccountSchema,
    AedAccountSchema,
    ClabeAccountSchema,
    IbanAccountSchema,
    UpiAccountSchema,
    SparkWalletSchema,
    LightningSchema,
    SolanaWalletSchema,
    EthereumWalletSchema,
    BaseWalletSchema,
  ],
  { $id: 'AccountInfo', description: 'Discriminated by accountType' },
);

export type { AccountInfo, AccountInfoOf, AccountType };

/** Fails to compile when the schema and actors/account-info.ts describe different shapes. */
export type SchemaDescribesDomainAccountInfo = Holds<Same<Static<typeof AccountInfoSchema>, AccountInfo>>;

export const ACCOUNT_TYPES: readonly AccountType[] = AccountInfoSchema.anyOf.map((variant) => variant.properties.accountType.const);

const VARIANTS = new Map<string, { schema: TObject; check: TypeCheck<TObject> }>(
  AccountInfoSchema.anyOf.map((schema) => [schema.properties.accountType.const, { schema, check: TypeCompiler.Compile<TObject>(schema) }]),
);

// ---------------------------------------------------------------------------------------
// Error translation

function messageFor(error: ValueError): string {
  const { schema } = error;
  switch (error.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return 'is required';
    case ValueErrorType.Object:
      return 'must be an object';
    case ValueErrorType.String:
      return 'must be a string';
    case ValueErrorType.StringMinLength:
      return 'must not be empty';
    // A shaped field's description says more than its length limit does.
    case ValueErrorType.StringMaxLength:
    case ValueErrorType.StringPattern:
      if (!KindGuard.IsString(schema)) return error.message;
      if (error.type === ValueErrorType.StringPattern && schema.pattern === TEXT_PATTERN) return TEXT_RULE;
      if (schema.description !== undefined) return `must be ${schema.description}`;
      return error.type === ValueErrorType.StringPattern ? 'has an invalid format' : `must be at most ${schema.maxLength} characters`;
    case ValueErrorType.Literal:
      return KindGuard.IsLiteral(schema) ? `must be ${String(schema.const)}` : error.message;
    case ValueErrorType.Union:
      return KindGuard.IsUnion(schema)
        ? `must be one of ${schema.anyOf.filter((option) => KindGuard.IsLiteral(option)).map((option) => String(option.const)).join(', ')}`
        : error.message;
    default:
      return error.message;
  }
}

function schemaErrors(errors: Iterable<ValueError>, path: string): FieldProblem[] {
  // Typebox reports a missing property twice (required, then wrong type): keep the first
  // error of each field.
  const byField = new Map<string, string>();
  for (const error of errors) {
    const field = path + error.path.replaceAll('/', '.');
    if (!byField.has(field)) byField.set(field, messageFor(error));
  }
  return [...byField].map(([field, message]) => ({ field, message }));
}

// ---------------------------------------------------------------------------------------
// Checks the schema cannot express: check digits, country lists, calendar dates.

function isCalendarDate(value: string): boolean {
  const [year, month, day] = value.split('-').map(Number) as [number, number, number];
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

const PIX_KEY_RULES: Readonly<Record<AccountInfoOf<'BRL_ACCOUNT'>['pixKeyType'], { test: (key: string) => boolean; message: string }>> = {
  CPF: { test: isCpf, message: 'must be a CPF of 11 digits with valid check digits for pixKeyType CPF' },
  CNPJ: { test: isCnpj, message: 'must be a CNPJ of 14 digits with valid check digits for pixKeyType CNPJ' },
  EMAIL: { test: (key) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(key), message: 'must be an e-mail address for pixKeyType EMAIL' },
  PHONE: {
    test: (key) => /^\+55[1-9]{2}[0-9]{8,9}$/.test(key),
    message: 'must be a Brazilian phone number in E.164 form (+55, area code, 8 or 9 digits) for pixKeyType PHONE',
  },
  RANDOM: {
    test: (key) => /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(key),
    message: 'must be a UUID for pixKeyType RANDOM',
  },
};

function checkSwift(swiftCode: string, field: string, errors: FieldProblem[]): void {
  const country = swiftCode.slice(4, 6);
  // XK (Kosovo) is not in ISO 3166-1 but SWIFT assigns it.
  if (!ISO_COUNTRIES.has(country) && country !== 'XK') {
    errors.push({ field, message: `has country code ${country}, which is not an ISO 3166-1 country` });
  }
}

function checkIban(iban: string, field: string, errors: FieldProblem[]): void {
  const problem = ibanProblem(iban);
  if (problem !== undefined) errors.push({ field, message: problem });
}

function checkRouting(routingNumber: string, field: string, errors: FieldProblem[]): void {
  if (!isAbaRoutingNumber(routingNumber)) {
    errors.push({ field, message: 'is not a valid ABA routing number (district prefix or checksum is wrong)' });
  }
}

function checkBeneficiary(beneficiary: Beneficiary | undefined, path: string, errors: FieldProblem[]): void {
  if (beneficiary === undefined) return;
  if (beneficiary.fullName.trim() === '') errors.push({ field: `${path}.fullName`, message: 'must not be blank' });
  if (beneficiary.birthDate !== undefined && !isCalendarDate(beneficiary.birthDate)) {
    errors.push({ field: `${path}.birthDate`, message: 'is not a real calendar date' });
  }
  if (beneficiary.nationality !== undefined && !ISO_COUNTRIES.has(beneficiary.nationality)) {
    errors.push({ field: `${path}.nationality`, message: 'is not an ISO 3166-1 alpha-2 country code' });
  }
  if (beneficiary.address !== undefined && !ISO_COUNTRIES.has(beneficiary.address.country)) {
    errors.push({ field: `${path}.address.country`, message: 'is not an ISO 3166-1 alpha-2 country code' });
  }
}

function semanticErrors(info: AccountInfo, path: string): FieldProblem[] {
  const errors: FieldProblem[] = [];
  switch (info.accountType) {
    case 'USD_ACCOUNT':
    case 'US_ACCOUNT':
      checkRouting(info.routingNumber, `${path}.routingNumber`, errors);
      checkBeneficiary(info.beneficiary, `${path}.beneficiary`, errors);
      break;
    case 'BRL_ACCOUNT': {
      const rule = PIX_KEY_RULES[info.pixKeyType];
      if (!rule.test(info.pixKey)) errors.push({ field: `${path}.pixKey`, message: rule.message });
      if (info.taxId !== undefined && !isCpf(info.taxId) && !isCnpj(info.taxId)) {
        errors.push({ field: `${path}.taxId`, message: 'must be a CPF (11 digits) or CNPJ (14 digits) with valid check digits' });
      }
      checkBeneficiary(info.beneficiary, `${path}.beneficiary`, errors);
      break;
    }
    case 'AED_ACCOUNT':
      checkIban(info.iban, `${path}.iban`, errors);
      if (!info.iban.startsWith('AE')) errors.push({ field: `${path}.iban`, message: 'must be a UAE IBAN (starting with AE) for AED_ACCOUNT' });
      checkSwift(info.swiftCode, `${path}.swiftCode`, errors);
      checkBeneficiary(info.beneficiary, `${path}.beneficiary`, errors);
      break;
    case 'CLABE':
      if (!isClabe(info.clabe)) errors.push({ field: `${path}.clabe`, message: 'check digit does not match (CLABE checksum failed)' });
      checkBeneficiary(info.beneficiary, `${path}.beneficiary`, errors);
      break;
    case 'IBAN':
      checkIban(info.iban, `${path}.iban`, errors);
      if (info.swiftCode !== undefined) checkSwift(info.swiftCode, `${path}.swiftCode`, errors);
      checkBeneficiary(info.beneficiary, `${path}.beneficiary`, errors);
      break;
    case 'UPI':
      checkBeneficiary(info.beneficiary, `${path}.beneficiary`, errors);
      break;
    case 'SPARK_WALLET':
    case 'LIGHTNING':
    case 'SOLANA_WALLET':
    case 'ETHEREUM_WALLET':
    case 'BASE_WALLET':
      break;
  }
  return errors;
}

// ---------------------------------------------------------------------------------------

// Each compiled check is one member of the AccountInfo union, so passing it proves the union.
function isAccountInfo(value: unknown, check: TypeCheck<TObject>): value is AccountInfo {
  return check.Check(value);
}

/**
 * Validates a request's accountInfo: a known accountType, that variant's schema (errors
 * carry dotted paths under `path`), then check digits and country codes. On success the
 * value is a copy holding only the variant's known fields, defaults filled in.
 */
export function checkAccountInfo(
  value: unknown,
  path = 'accountInfo',
): { ok: true; value: AccountInfo } | { ok: false; errors: FieldProblem[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, errors: [{ field: path, message: 'must be an object' }] };
  }
  const accountType: unknown = Object.hasOwn(value, 'accountType') ? (value as { accountType: unknown }).accountType : undefined;
  const variant = typeof accountType === 'string' ? VARIANTS.get(accountType) : undefined;
  if (variant === undefined) {
    return { ok: false, errors: [{ field: `${path}.accountType`, message: `must be one of ${ACCOUNT_TYPES.join(', ')}` }] };
  }
  const cleaned = Value.Default(variant.schema, Value.Clean(variant.schema, Value.Clone(value)));
  if (!isAccountInfo(cleaned, variant.check)) {
    return { ok: false, errors: schemaErrors(variant.check.Errors(cleaned), path) };
  }
  const errors = semanticErrors(cleaned, path);
  return errors.length === 0 ? { ok: true, value: cleaned } : { ok: false, errors };
}
