// Shapes shared by several routes: the request fragments (address, ids) and the response
// resources of SERVICE_SPEC part 2, as published in the OpenAPI document.
import { Type, type Static, type TObject, type TSchema, type TString } from '@sinclair/typebox';
import { BUSINESS_ENTITY_TYPES, KYB_STATUSES, KYC_STATUSES, UMA_ADDRESS_PATTERN, type Address, type BusinessInfoView } from '../../../actors/customer.js';
import { INTERNAL_ACCOUNT_TYPES } from '../../../actors/internal-account.js';
import {
  MAX_INLINE_JWKS,
  MAX_OIDC_ISSUERS,
  MAX_WEBAUTHN_ORIGINS,
  OTP_EXPIRATION_SECONDS,
  OTP_LENGTH,
  SESSION_LIFETIME_SECONDS,
  WEBHOOK_FORMATS,
} from '../../../actors/platform.js';
import { Country, DateString, List, Obj, Str, StringEnum, Text } from '../validation.js';
import { AccountInfoSchema } from './account-info.js';
import type { Holds, Same } from './same-shape.js';

export const EMAIL_PATTERN = "^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$";

export const AddressSchema = Obj(
  {
    line1: Type.Optional(Text({ minLength: 1 })),
    line2: Type.Optional(Text()),
    city: Type.Optional(Text({ minLength: 1 })),
    state: Type.Optional(Text()),
    postalCode: Type.Optional(Text({ minLength: 1, maxLength: 32 })),
    country: Country(),
  },
  { $id: 'Address' },
);
/** Fails to compile when the schema and the domain's Address describe different shapes. */
export type SchemaDescribesDomainAddress = Holds<Same<Static<typeof AddressSchema>, Address>>;

export const CurrencyCode = Str({ pattern: '^[A-Z]{3,5}$', description: 'ISO 4217 or crypto ticker' });
export const UmaAddress = Str({ pattern: UMA_ADDRESS_PATTERN, maxLength: 255, description: '$<local>@<domain>' });
export const Email = Str({ pattern: EMAIL_PATTERN, maxLength: 254 });

/** `<Kind>:<UUIDv7>` */
export function IdOf(kind: string): TString {
  return Str({ pattern: `^${kind}:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, maxLength: kind.length + 37 });
}

const Timestamp = Str({ format: 'date-time' });

export const CurrencyView = Obj({ code: Str(), name: Str(), symbol: Str(), decimals: Type.Integer() }, { $id: 'Currency' });

const InfoText = (maxLength = 255, description?: string) => Text({ minLength: 1, maxLength, ...(description !== undefined ? { description } : {}) });
const Expectation = (what: string) =>
  Type.Union([InfoText(64), Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })], { description: `expected monthly transaction ${what}: a range token such as today's clients send, or a number` });

/** A BUSINESS customer's businessInfo (CONTRACT.md "Real clients"); PATCH takes any part of it. */
export const BusinessInfoSchema = Obj(
  {
    legalName: InfoText(),
    country: Country({ description: 'ISO 3166-1 alpha-2; the region when none is given' }),
    taxId: InfoText(64),
    incorporatedOn: DateString(),
    doingBusinessAs: Type.Optional(InfoText()),
    registrationNumber: Type.Optional(InfoText(64, 'sandbox: the last 3 characters decide kybStatus (001 PENDING, 002 REJECTED, else APPROVED)')),
    entityType: Type.Optional(StringEnum(BUSINESS_ENTITY_TYPES)),
    businessType: Type.Optional(InfoText()),
    purposeOfAccount: Type.Optional(InfoText()),
    sourceOfFunds: Type.Optional(InfoText()),
    countriesOfOperation: Type.Optional(List(Country(), { maxItems: 250 })),
    expectedMonthlyTransactionCount: Type.Optional(Expectation('count')),
    expectedMonthlyTransactionVolume: Type.Optional(Expectation('volume')),
    primaryContactFirstName: Type.Optional(InfoText()),
    primaryContactLastName: Type.Optional(InfoText()),
  },
  { $id: 'BusinessInfo' },
);
/** Fails to compile when the schema and the domain's BusinessInfo describe different shapes. */
export type SchemaDescribesBusinessInfo = Holds<Same<Static<typeof BusinessInfoSchema>, BusinessInfoView>>;

const CustomerCommon = {
  id: Str(),
  platformCustomerId: Str(),
  umaAddress: Str(),
  region: Str(),
  currencies: List(Str()),
  email: Type.Optional(Str()),
  address: Type.Optional(AddressSchema),
  isDeleted: Type.Boolean(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
};

/** A person (kycStatus and personal fields) or a business (businessInfo and kybStatus), told apart by customerType. */
export const CustomerView = Type.Union(
  [
    Obj(
      {
        ...CustomerCommon,
        customerType: Type.Literal('INDIVIDUAL'),
        kycStatus: StringEnum(KYC_STATUSES),
        fullName: Type.Optional(Str()),
        birthDate: Type.Optional(DateString()),
        nationality: Type.Optional(Str()),
      },
      { $id: 'IndividualCustomer' },
    ),
    Obj(
      {
        ...CustomerCommon,
        customerType: Type.Literal('BUSINESS'),
        kybStatus: StringEnum(KYB_STATUSES),
        businessInfo: BusinessInfoSchema,
      },
      { $id: 'BusinessCustomer' },
    ),
  ],
  { $id: 'Customer' },
);

export const InternalAccountView = Obj(
  {
    id: Str(),
    type: StringEnum(INTERNAL_ACCOUNT_TYPES),
    // Optional only for ACCOUNT_STATUS events recorded before they were shown (an event keeps the body it was made with).
    status: Type.Optional(Type.Literal('ACTIVE', { description: 'the service has no closed or frozen accounts; absent in events recorded before issue 39' })),
    balance: Obj({ amount: Type.Integer(), currency: CurrencyView }),
    totalBalance: Type.Optional(
      Obj({ amount: Type.Integer(), currency: CurrencyView }, { description: 'the same as balance: no funds are held apart from it; absent in events recorded before issue 39' }),
    ),
    fundingPaymentInstructions: List(
      Obj({
        accountOrWalletInfo: Obj({ accountType: Str(), accountNumber: Str(), routingNumber: Type.Optional(Str()), reference: Str() }),
        instructionsNotes: Str(),
        isPlatformAccount: Type.Boolean(),
      }),
    ),
    customerId: Str({ description: 'empty for platform accounts' }),
    privateEnabled: Type.Optional(Type.Boolean({ description: 'EMBEDDED_WALLET accounts only: wallet privacy (PATCH /internal-accounts/{id}, signed retry)' })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'InternalAccount' },
);

export const ExternalAccountView = Obj(
  {
    id: Str(),
    status: StringEnum(['PENDING', 'ACTIVE', 'UNDER_REVIEW', 'INACTIVE'] as const),
    currency: Str(),
    accountInfo: AccountInfoSchema,
    customerId: Type.Union([Str(), Type.Null()]),
    platformAccountId: Type.Optional(Str()),
    defaultUmaDepositAccount: Type.Boolean(),
    beneficiaryVerificationStatus: StringEnum(['MATCHED', 'PARTIAL_MATCH', 'NOT_MATCHED', 'UNSUPPORTED', 'CHECKED_BY_RECEIVING_FI', 'PENDING'] as const),
    beneficiaryVerifiedData: Type.Optional(Obj({ fullName: Str() })),
    cryptoNetwork: Type.Optional(Str()),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'ExternalAccount' },
);

export const SupportedCurrencySchema = Obj(
  {
    currencyCode: CurrencyCode,
    minAmount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    maxAmount: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    enabledTransactionTypes: List(StringEnum(['OUTGOING', 'INCOMING'] as const), { maxItems: 2 }),
    requiredCounterpartyFields: List(Obj({ name: Text({ minLength: 1, maxLength: 64 }), mandatory: Type.Boolean() })),
    providerRequiredCustomerFields: List(Text({ minLength: 1, maxLength: 64 })),
    providerRequiredCounterpartyCustomerFields: List(Text({ minLength: 1, maxLength: 64 })),
  },
  { $id: 'SupportedCurrency' },
);

/** A PATCH /config item: only currencyCode is required; the domain fills in the rest. */
export const SupportedCurrencyInput = Obj({
  currencyCode: SupportedCurrencySchema.properties.currencyCode,
  minAmount: Type.Optional(SupportedCurrencySchema.properties.minAmount),
  maxAmount: Type.Optional(SupportedCurrencySchema.properties.maxAmount),
  enabledTransactionTypes: Type.Optional(SupportedCurrencySchema.properties.enabledTransactionTypes),
  requiredCounterpartyFields: Type.Optional(SupportedCurrencySchema.properties.requiredCounterpartyFields),
  providerRequiredCustomerFields: Type.Optional(SupportedCurrencySchema.properties.providerRequiredCustomerFields),
  providerRequiredCounterpartyCustomerFields: Type.Optional(SupportedCurrencySchema.properties.providerRequiredCounterpartyCustomerFields),
});

const PublicJwkSchema = Obj(
  {
    kty: Text({ maxLength: 16 }),
    kid: Type.Optional(Text({ maxLength: 256 })),
    alg: Type.Optional(Text({ maxLength: 16 })),
    use: Type.Optional(Text({ maxLength: 16 })),
    crv: Type.Optional(Text({ maxLength: 16 })),
    x: Type.Optional(Text()),
    y: Type.Optional(Text()),
    n: Type.Optional(Text()),
    e: Type.Optional(Text({ maxLength: 16 })),
  },
  { $id: 'PublicJwk', description: 'public members of a JSON Web Key; others (private ones included) are dropped' },
);

const OidcIssuerSchema = Obj(
  {
    issuer: Text({ maxLength: 512, description: 'the `iss` tokens carry; https URL' }),
    jwksUri: Type.Optional(Text({ maxLength: 2048, description: "the issuer's JWKS URL (https; http on loopback only); exactly one of jwksUri or jwks. Fetched by the service: production public addresses only (sandbox: also loopback)" })),
    jwks: Type.Optional(Obj({ keys: List(PublicJwkSchema, { maxItems: MAX_INLINE_JWKS }) })),
    audience: Type.Optional(Text({ maxLength: 512, description: "when set, a token's aud must name it" })),
  },
  { $id: 'OidcIssuer' },
);

const WebauthnSchema = Obj(
  {
    rpId: Text({ maxLength: 253, description: 'relying party id: a domain' }),
    rpName: Text({ maxLength: 256 }),
    origins: List(Text({ maxLength: 512 }), { maxItems: MAX_WEBAUTHN_ORIGINS, description: 'origins passkey ceremonies may come from, on rpId or its subdomains' }),
  },
  { $id: 'WebauthnConfig' },
);

export const EmbeddedWalletConfigView = Obj(
  {
    appName: Str(),
    otpLength: Type.Integer(),
    expirationSeconds: Type.Integer(),
    sendFromEmailAddress: Str(),
    sendFromEmailSenderName: Str(),
    sessionLifetimeSeconds: Type.Integer(),
    oidcIssuers: List(OidcIssuerSchema),
    webauthn: WebauthnSchema,
    signerPublicKey: Str({ description: 'uncompressed SEC1 hex of the service signer: it signs otpEncryptionTargetBundle, the OTP verificationToken and production export bundles (their enclaveQuorumPublic)' }),
  },
  { $id: 'EmbeddedWalletConfig' },
);

/** PATCH input: every member optional; omitted ones keep their values. */
export const EmbeddedWalletConfigInput = Obj({
  appName: Type.Optional(Text({ minLength: 1, maxLength: 128 })),
  otpLength: Type.Optional(Type.Integer({ minimum: OTP_LENGTH.min, maximum: OTP_LENGTH.max, description: `default ${OTP_LENGTH.default}` })),
  expirationSeconds: Type.Optional(
    Type.Integer({ minimum: OTP_EXPIRATION_SECONDS.min, maximum: OTP_EXPIRATION_SECONDS.max, description: `OTP validity; default ${OTP_EXPIRATION_SECONDS.default}` }),
  ),
  sendFromEmailAddress: Type.Optional(Email),
  sendFromEmailSenderName: Type.Optional(Text({ minLength: 1, maxLength: 128 })),
  sessionLifetimeSeconds: Type.Optional(
    Type.Integer({ minimum: SESSION_LIFETIME_SECONDS.min, maximum: SESSION_LIFETIME_SECONDS.max, description: `default ${SESSION_LIFETIME_SECONDS.default}` }),
  ),
  oidcIssuers: Type.Optional(List(OidcIssuerSchema, { maxItems: MAX_OIDC_ISSUERS })),
  webauthn: Type.Optional(
    Obj({
      rpId: Type.Optional(WebauthnSchema.properties.rpId),
      rpName: Type.Optional(Text({ minLength: 1, maxLength: 256 })),
      origins: Type.Optional(WebauthnSchema.properties.origins),
    }),
  ),
});

export const PlatformConfigView = Obj(
  {
    id: Str(),
    umaDomain: Str(),
    proxyUmaSubdomain: Str(),
    webhookEndpoint: Str(),
    supportedCurrencies: List(SupportedCurrencySchema),
    isRegulatedFinancialInstitution: Type.Boolean(),
    webhookPublicKey: Str({ description: 'uncompressed SEC1 hex of the P-256 key that signs webhooks' }),
    webhookPublicKeyPem: Str({ description: 'the same key as an SPKI PEM (node:crypto createPublicKey reads it)' }),
    embeddedWalletConfig: EmbeddedWalletConfigView,
    webhookFormat: StringEnum(WEBHOOK_FORMATS, { description: 'FLAT: bodies {id, type, timestamp, transaction|account} signed in X-Service-Signature; ENVELOPE: {id, type (OBJECT.EVENT), timestamp, data} signed in X-Grid-Signature' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'PlatformConfig' },
);

/** A page of a list (SERVICE_SPEC part 2), published as `<item's name>List`: the item must be a named schema. */
export function ListOf(item: TSchema): TObject {
  if (item.$id === undefined) throw new Error('ListOf needs a named item schema (one with an $id): its list is named after it');
  return Obj({ data: List(item), hasMore: Type.Boolean(), nextCursor: Type.Optional(Str()), totalCount: Type.Integer() }, { $id: `${item.$id}List` });
}

/** Fail to compile when a published view and the domain's view type drift apart. */
export type ViewChecks = [
  Holds<Same<Static<typeof CustomerView>, import('../../../actors/customer.js').CustomerView>>,
  Holds<Same<Static<typeof InternalAccountView>, import('../../../actors/internal-account.js').InternalAccountView>>,
  Holds<Same<Static<typeof ExternalAccountView>, import('../../../actors/external-account.js').ExternalAccountView>>,
  Holds<Same<Static<typeof PlatformConfigView>, import('../../../actors/platform.js').PlatformConfigView>>,
];
