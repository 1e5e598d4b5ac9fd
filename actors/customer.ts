// Customer actor: a platform's end user, a person (INDIVIDUAL, with a KYC status) or a
// business (BUSINESS, with its businessInfo and a KYB status; CONTRACT.md "Real clients"),
// with a region, the currencies it may hold, a unique UMA address and its internal accounts. Creating a customer provisions one
// internal account per enabled currency in the same log entry; since `customer.opened`
// those accounts are derived from the customer record until money first moves through
// them (actors/internal-account.ts). Deletion is soft.
import { CUSTOMER_PREFIX, newCustomerId } from './derived-ids.js';
import { DomainError, invalidField, invalidInput, type FieldProblem } from './errors.js';
import { provisionAccounts, type InternalAccount } from './internal-account.js';
import { supportsCurrency, type PlatformEnv, type PlatformEnvs } from './platform.js';
import { allowedFiat, CURRENCIES, DEFAULT_REGION, isCrypto, ISO_COUNTRIES, REGION_CURRENCY } from './reference.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { lazyHash, type EventLayout, type LazyChunk, type LazyRecords } from '../src/engine/state-machine.js';
import { isoTime } from './iso-time.js';

export type KycStatus = 'UNVERIFIED' | 'PENDING' | 'APPROVED' | 'REJECTED';
export const KYC_STATUSES: readonly KycStatus[] = ['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED'];
export type KybStatus = KycStatus | 'HOLD';
export const KYB_STATUSES: readonly KybStatus[] = [...KYC_STATUSES, 'HOLD'];
export const CUSTOMER_TYPES = ['INDIVIDUAL', 'BUSINESS'] as const;
export type CustomerType = (typeof CUSTOMER_TYPES)[number];
export const BUSINESS_ENTITY_TYPES = [
  'SOLE_PROPRIETORSHIP',
  'PARTNERSHIP',
  'LLC',
  'CORPORATION',
  'S_CORPORATION',
  'NON_PROFIT',
  'PUBLICLY_LISTED_COMPANY',
  'TRUST',
  'PRIVATE_FOUNDATION',
  'CHARITY',
  'OTHER',
] as const;
export type BusinessEntityType = (typeof BUSINESS_ENTITY_TYPES)[number];

/** What a BUSINESS customer is (CONTRACT.md "Real clients"); the first four are required on create. */
export interface BusinessInfo {
  readonly legalName: string;
  /** ISO 3166-1 alpha-2 */
  readonly country: string;
  readonly taxId: string;
  /** YYYY-MM-DD */
  readonly incorporatedOn: string;
  readonly doingBusinessAs?: string;
  /** Sandbox: its last 3 characters decide the kybStatus (sandboxCheckOutcome). */
  readonly registrationNumber?: string;
  readonly entityType?: BusinessEntityType;
  readonly businessType?: string;
  readonly purposeOfAccount?: string;
  readonly sourceOfFunds?: string;
  /** ISO 3166-1 alpha-2 codes */
  readonly countriesOfOperation?: readonly string[];
  /** As the client sends them: today's clients send a range token, others a number. */
  readonly expectedMonthlyTransactionCount?: string | number;
  readonly expectedMonthlyTransactionVolume?: string | number;
  readonly primaryContactFirstName?: string;
  readonly primaryContactLastName?: string;
}

/** The fields only a person has; a business is described by its businessInfo instead. */
const INDIVIDUAL_FIELDS = ['fullName', 'birthDate', 'nationality'] as const;

/**
 * The spec's sandbox rule for KYB and KYC checks (SERVICE_SPEC part 3): the last 3
 * characters of the registration number (or last name) decide.
 */
export function sandboxCheckOutcome(value: string): 'PENDING' | 'APPROVED' | 'REJECTED' {
  switch (value.slice(-3)) {
    case '001':
      return 'PENDING';
    case '002':
      return 'REJECTED';
    default:
      return 'APPROVED';
  }
}

export interface Address {
  line1?: string;
  line2?: string;
  city?: string;
  state?: string;
  postalCode?: string;
  /** Required by the API whenever an address is given (ISO 3166-1 alpha-2). */
  country: string;
}

export interface Customer {
  readonly id: string;
  readonly envId: string;
  /**
   * The platform's own id. POST /customers does not refuse a repeated one (SERVICE_SPEC and
   * CONTRACT.md before the second wave make it no key); a bulk import does (CONTRACT.md
   * "Today's clients, second wave"), through `platformCustomerOwner`.
   */
  readonly platformCustomerId: string;
  readonly customerType: CustomerType;
  readonly umaAddress: string;
  readonly region: string;
  readonly currencies: readonly string[];
  /** An INDIVIDUAL's; a BUSINESS has kybStatus instead. */
  readonly kycStatus?: KycStatus;
  /** A BUSINESS's, with its kybStatus. */
  readonly businessInfo?: BusinessInfo;
  readonly kybStatus?: KybStatus;
  readonly email?: string;
  readonly fullName?: string;
  readonly birthDate?: string;
  readonly nationality?: string;
  readonly address?: Address;
  readonly isDeleted: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
  /**
   * The currencies of the accounts provisioned with the customer (`customer.opened`), in
   * order: the i-th has the derived id `derivedAccountId(id, i)` (actors/derived-ids.ts).
   * Absent for customers logged by `customer.created`, whose accounts are stored records.
   */
  readonly provisioned?: readonly string[];
}

/**
 * A customer made by POST /customers or /users: only the decided facts, under one-letter
 * keys, since a million customers are a million of these entries (issue 10 holds each
 * under 400 bytes with every profile field given). The record and its accounts are derived
 * when applied: the entry time is createdAt, the environment gives the kycStatus and the
 * generated UMA address's domain, platformCustomerId defaults to the id's UUID.
 */
export interface CustomerOpened {
  type: 'customer.opened';
  /** The UUID of the id (`Customer:<u>`). */
  u: string;
  /** envId */
  e: string;
  /** The resolved region. */
  r: string;
  /** The resolved currencies; one account is provisioned (derived) per currency, in order. */
  c: string[];
  /** customerType, absent for the default (INDIVIDUAL). */
  t?: CustomerType;
  /** platformCustomerId, when given. */
  p?: string;
  /** umaAddress, when given, or when the generated one is not `generatedUmaAddress` (that one was taken). */
  a?: string;
  /** The profile fields given: email, fullName, birthDate, nationality. */
  m?: string;
  n?: string;
  b?: string;
  x?: string;
  /** The address given, as ADDRESS_FIELDS in order (null where a field was not given). */
  l?: Array<string | null>;
  /** A BUSINESS's businessInfo (the environment gives its kybStatus). */
  k?: BusinessInfo;
}

const DEFAULT_CUSTOMER_TYPE: CustomerType = 'INDIVIDUAL';
const ADDRESS_FIELDS = ['line1', 'line2', 'city', 'state', 'postalCode', 'country'] as const;

export type CustomerEvent =
  /** The full record and account records, as logged before `customer.opened`; applied so that older logs still replay. */
  | { type: 'customer.created'; customer: Customer; accounts: InternalAccount[] }
  | CustomerOpened
  /** `webhookId`: the CUSTOMER event of an ENVELOPE environment whose KYC or KYB status it changes (actors/webhook-envelope.ts). */
  | { type: 'customer.updated'; customer: Customer; accounts: InternalAccount[]; webhookId?: string };

export interface CustomerInput {
  customerType: CustomerType;
  businessInfo?: BusinessInfo;
  platformCustomerId?: string;
  region?: string;
  currencies?: string[];
  email?: string;
  umaAddress?: string;
  fullName?: string;
  birthDate?: string;
  nationality?: string;
  address?: Address;
}

export interface CustomerPatch {
  /** Must be the customer's own: a customer's type never changes. */
  customerType: CustomerType;
  region?: string;
  currencies?: string[];
  email?: string;
  umaAddress?: string;
  kycStatus?: KycStatus;
  kybStatus?: KybStatus;
  /** Merged into the business's businessInfo. */
  businessInfo?: Partial<BusinessInfo>;
  fullName?: string;
  birthDate?: string;
  nationality?: string;
  address?: Address;
}

/** What deciding needs to know beyond the customer itself: the environment's UMA index. */
export interface CustomerDirectory {
  umaOwner(envId: string, umaAddress: string): string | undefined;
}

export const UMA_ADDRESS_PATTERN = '^\\$[A-Za-z0-9][A-Za-z0-9._-]{0,63}@[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$';

export function decideCreateCustomer(
  env: PlatformEnv,
  input: CustomerInput,
  directory: CustomerDirectory,
  at: number,
): CustomerOpened[] {
  checkProfile(input, at);
  checkKind(input.customerType, input, 'create');
  if (input.businessInfo !== undefined) checkBusinessInfo(input.businessInfo, at);
  const region = resolveRegion(input);
  const currencies = resolveCurrencies(env, region, input.currencies);
  const id = newCustomerId(at);
  const event: CustomerOpened = { type: 'customer.opened', u: id.slice(CUSTOMER_PREFIX.length), e: env.id, r: region, c: currencies };
  if (input.customerType !== DEFAULT_CUSTOMER_TYPE) event.t = input.customerType;
  if (input.platformCustomerId !== undefined) event.p = input.platformCustomerId;
  if (input.umaAddress !== undefined) {
    event.a = claimUmaAddress(env.id, input.umaAddress, undefined, directory);
  } else {
    const generated = generateUmaAddress(env, id, directory);
    if (generated !== generatedUmaAddress(env, id)) event.a = generated;
  }
  if (input.email !== undefined) event.m = input.email;
  if (input.fullName !== undefined) event.n = input.fullName;
  if (input.birthDate !== undefined) event.b = input.birthDate;
  if (input.nationality !== undefined) event.x = input.nationality;
  const address = input.address;
  if (address !== undefined) event.l = ADDRESS_FIELDS.map((field) => address[field] ?? null);
  if (input.businessInfo !== undefined) event.k = input.businessInfo;
  return [event];
}

/** The UMA address of the customer a `customer.opened` of `env` makes. */
export function openedUmaAddress(env: PlatformEnv, event: CustomerOpened): string {
  return event.a ?? generatedUmaAddress(env, openedCustomerId(event));
}

/** The id of the customer a `customer.opened` makes. */
export function openedCustomerId(event: Pick<CustomerOpened, 'u'>): string {
  return `${CUSTOMER_PREFIX}${event.u}`;
}

/**
 * The customer record a `customer.opened` stands for, in `env`, made at `at`, built in its
 * stored form at once: `region` and `currencies` are the shared copies of the event's (the
 * same list is the provisioned one), so replay makes one object per customer and no copy.
 */
function openedCustomer(event: CustomerOpened, env: PlatformEnv, at: number, region: string, currencies: readonly string[]): Customer {
  const id = openedCustomerId(event);
  const customer: MutableCustomer = {
    id,
    envId: env.id,
    platformCustomerId: event.p ?? event.u,
    customerType: event.t ?? DEFAULT_CUSTOMER_TYPE,
    umaAddress: event.a ?? generatedUmaAddress(env, id),
    region,
    currencies,
    isDeleted: false,
    createdAt: at,
    updatedAt: at,
    provisioned: currencies,
  };
  if (event.k === undefined) customer.kycStatus = env.environment === 'sandbox' ? 'APPROVED' : 'UNVERIFIED';
  else {
    customer.businessInfo = event.k;
    customer.kybStatus = initialKybStatus(env, event.k);
  }
  if (event.m !== undefined) customer.email = event.m;
  if (event.n !== undefined) customer.fullName = event.n;
  if (event.b !== undefined) customer.birthDate = event.b;
  if (event.x !== undefined) customer.nationality = event.x;
  const lines = event.l;
  if (lines !== undefined) {
    const address: Partial<Address> = {};
    ADDRESS_FIELDS.forEach((field, i) => {
      const value = lines[i];
      if (value !== undefined && value !== null) address[field] = value;
    });
    // The API takes an address only with its country, so a logged one always has it.
    const { country } = address;
    if (country === undefined) throw new Error(`customer.opened ${event.u} logs an address without its country`);
    customer.address = { ...address, country };
  }
  return customer;
}

type MutableCustomer = { -readonly [K in keyof Customer]: Customer[K] };

/** The version of `StoredCustomer`'s layout, its first element. */
const STORED_CUSTOMER_FORM = 1;

/**
 * A customer as snapshots store it (Customers.stored): a fixed layout without the id (the
 * snapshot keys it), what a customer opened with the defaults holds as few values (the
 * platformCustomerId its id's UUID, INDIVIDUAL, not deleted, the provisioned currencies its
 * currencies: 1), and only what differs from those in `rest`. A million customers are read
 * back from this at a restart: without the id, platformCustomerId, customerType and
 * provisioned list of the whole record, a customer is 191 bytes instead of 300 and its
 * decoding a quarter cheaper (docs/bench.md).
 */
export type StoredCustomer = readonly [
  form: typeof STORED_CUSTOMER_FORM,
  envId: string,
  umaAddress: string,
  region: string,
  currencies: readonly string[],
  /** 0: none (a customer logged by `customer.created`), 1: the currencies, or its own list. */
  provisioned: 0 | 1 | readonly string[],
  kycStatus: KycStatus | null,
  createdAt: number,
  updatedAt: number,
  rest: StoredRest | null,
];

/** What a stored customer holds beyond the fixed layout, each only when not its default. */
type StoredRest = Partial<Pick<Customer, 'platformCustomerId' | 'customerType' | 'isDeleted' | 'businessInfo' | 'kybStatus' | 'email' | 'fullName' | 'birthDate' | 'nationality' | 'address'>>;

/** The fields of `customer` a StoredCustomer keeps in its rest (null: none differs from its default). */
function storedRest(customer: Customer): StoredRest | null {
  const rest: MutableRest = restProfile(customer);
  if (customer.platformCustomerId !== customer.id.slice(CUSTOMER_PREFIX.length)) rest.platformCustomerId = customer.platformCustomerId;
  if (customer.customerType !== DEFAULT_CUSTOMER_TYPE) rest.customerType = customer.customerType;
  if (customer.isDeleted) rest.isDeleted = true;
  return Object.keys(rest).length > 0 ? rest : null;
}

function isStoredCustomer(record: Customer | StoredCustomer): record is StoredCustomer {
  return Array.isArray(record);
}

type MutableRest = { -readonly [K in keyof StoredRest]: StoredRest[K] };

/** The profile fields of `from` that are set, in the order `openedCustomer` sets them. */
function restProfile(from: StoredRest): MutableRest {
  const profile: MutableRest = {};
  if (from.businessInfo !== undefined) profile.businessInfo = from.businessInfo;
  if (from.kybStatus !== undefined) profile.kybStatus = from.kybStatus;
  if (from.email !== undefined) profile.email = from.email;
  if (from.fullName !== undefined) profile.fullName = from.fullName;
  if (from.birthDate !== undefined) profile.birthDate = from.birthDate;
  if (from.nationality !== undefined) profile.nationality = from.nationality;
  if (from.address !== undefined) profile.address = from.address;
  return profile;
}

/** Sandbox: the KYB suffix rule on the registration number (none: APPROVED); production: UNVERIFIED until PATCH sets it. */
function initialKybStatus(env: PlatformEnv, info: BusinessInfo): KybStatus {
  if (env.environment !== 'sandbox') return 'UNVERIFIED';
  return info.registrationNumber === undefined ? 'APPROVED' : sandboxCheckOutcome(info.registrationNumber);
}

/**
 * A person's fields on a business, a business's on a person, or a create of a business
 * without its businessInfo: each a 400 naming the field.
 */
function checkKind(type: CustomerType, input: Partial<Pick<CustomerPatch, 'businessInfo' | 'kybStatus' | 'kycStatus' | (typeof INDIVIDUAL_FIELDS)[number]>>, use: 'create' | 'update'): void {
  const errors: FieldProblem[] = [];
  if (type === 'BUSINESS') {
    if (use === 'create' && input.businessInfo === undefined) errors.push({ field: 'businessInfo', message: 'is required for a BUSINESS customer' });
    for (const field of [...INDIVIDUAL_FIELDS, 'kycStatus'] as const) {
      if (input[field] !== undefined) errors.push({ field, message: `belongs to an INDIVIDUAL customer; a BUSINESS is described by businessInfo${field === 'kycStatus' ? ' and kybStatus' : ''}` });
    }
  } else {
    for (const field of ['businessInfo', 'kybStatus'] as const) {
      if (input[field] !== undefined) errors.push({ field, message: 'belongs to a BUSINESS customer' });
    }
  }
  if (errors.length > 0) throw invalidInput(errors);
}

/** What the schema cannot check in a business's info: a real, past incorporation date and real country codes. */
function checkBusinessInfo(info: BusinessInfo, today: number): void {
  const errors: FieldProblem[] = [];
  checkDate(errors, 'businessInfo.incorporatedOn', info.incorporatedOn, today);
  checkCountry(errors, 'businessInfo.country', info.country);
  info.countriesOfOperation?.forEach((code, i) => checkCountry(errors, `businessInfo.countriesOfOperation.${i}`, code));
  if (errors.length > 0) throw invalidInput(errors);
}

/** The business's info with `patch` merged in, checked whole. */
function mergedBusinessInfo(current: BusinessInfo, patch: Partial<BusinessInfo> | undefined, today: number): BusinessInfo {
  if (patch === undefined) return current;
  const merged: BusinessInfo = { ...current, ...patch };
  checkBusinessInfo(merged, today);
  return merged;
}


export function decideUpdateCustomer(
  env: PlatformEnv,
  customer: Customer,
  patch: CustomerPatch,
  existingCurrencies: ReadonlySet<string>,
  directory: CustomerDirectory,
  at: number,
): CustomerEvent[] {
  checkProfile(patch, at);
  assertActive(customer);
  if (patch.customerType !== customer.customerType) {
    throw invalidField('customerType', `a customer's type never changes (it is ${customer.customerType})`);
  }
  checkKind(customer.customerType, patch, 'update');
  if (patch.region !== undefined && patch.region !== customer.region) {
    throw invalidField('region', `region is immutable after creation (it is ${customer.region})`);
  }
  const currencies = patch.currencies === undefined ? customer.currencies : resolveCurrencies(env, customer.region, patch.currencies);
  const umaAddress =
    patch.umaAddress === undefined ? customer.umaAddress : claimUmaAddress(env.id, patch.umaAddress, customer.id, directory);
  const updated: MutableCustomer = {
    ...customer,
    currencies,
    umaAddress,
    ...optionalProfile({ ...customer, ...patch }),
    updatedAt: at,
  };
  if (customer.businessInfo !== undefined) {
    updated.businessInfo = mergedBusinessInfo(customer.businessInfo, patch.businessInfo, at);
    // A new registration number is checked again in the sandbox, unless the PATCH sets the status.
    const renumbered = updated.businessInfo.registrationNumber !== customer.businessInfo.registrationNumber;
    updated.kybStatus = patch.kybStatus ?? (renumbered ? initialKybStatus(env, updated.businessInfo) : customer.kybStatus);
  } else if (patch.kycStatus !== undefined) updated.kycStatus = patch.kycStatus;
  const added = currencies.filter((c) => !existingCurrencies.has(c));
  return [{ type: 'customer.updated', customer: updated, accounts: provisionAccounts(env.id, customer.id, added, at) }];
}

export function decideDeleteCustomer(customer: Customer, at: number): CustomerEvent[] {
  if (customer.isDeleted) return [];
  return [{ type: 'customer.updated', customer: { ...customer, isDeleted: true, updatedAt: at }, accounts: [] }];
}

/** Deleted customers stay readable, but nothing new is made for them (CONTRACT.md). */
export function assertActive(customer: Customer): void {
  if (customer.isDeleted) throw new DomainError('CONFLICT', `customer ${customer.id} is deleted`);
}

type Profile = Pick<Customer, 'email' | 'fullName' | 'birthDate' | 'nationality' | 'address'>;

/** What the request's schema cannot check: a real calendar date, not after `today`; real country codes. */
function checkProfile(input: Pick<CustomerPatch, 'birthDate' | 'nationality' | 'region' | 'address'>, today: number): void {
  const errors: FieldProblem[] = [];
  if (input.birthDate !== undefined) checkDate(errors, 'birthDate', input.birthDate, today);
  checkCountry(errors, 'nationality', input.nationality);
  checkCountry(errors, 'region', input.region);
  checkCountry(errors, 'address.country', input.address?.country);
  if (errors.length > 0) throw invalidInput(errors);
}

function checkDate(errors: FieldProblem[], field: string, date: string, today: number): void {
  const parsed = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(parsed) || isoTime(parsed).slice(0, 10) !== date) errors.push({ field, message: 'not a calendar date' });
  else if (parsed > today) errors.push({ field, message: 'must not be in the future' });
}

function checkCountry(errors: FieldProblem[], field: string, code: string | undefined): void {
  if (code !== undefined && !ISO_COUNTRIES.has(code)) errors.push({ field, message: `${code} is not an ISO 3166-1 alpha-2 country code` });
}

function optionalProfile(source: Profile): Profile {
  const out: { -readonly [K in keyof Profile]?: Profile[K] } = {};
  if (source.email !== undefined) out.email = source.email;
  if (source.fullName !== undefined) out.fullName = source.fullName;
  if (source.birthDate !== undefined) out.birthDate = source.birthDate;
  if (source.nationality !== undefined) out.nationality = source.nationality;
  if (source.address !== undefined) out.address = { ...source.address };
  return out;
}

/**
 * Region given, else (a business's) businessInfo.country, else address.country, else (a
 * person's) nationality, else the default (CONTRACT.md).
 */
function resolveRegion(input: CustomerInput): string {
  const [region, field] = regionSource(input);
  if (!REGION_CURRENCY.has(region)) {
    const supported = [...REGION_CURRENCY.keys()].join(', ');
    const from = field === 'region' ? '' : ` (taken from ${field}; give region explicitly)`;
    throw invalidField(field, `region ${region} is not supported${from}; supported regions: ${supported}`);
  }
  return region;
}

function regionSource(input: CustomerInput): [string, string] {
  if (input.region !== undefined) return [input.region, 'region'];
  if (input.businessInfo !== undefined) return [input.businessInfo.country, 'businessInfo.country'];
  if (input.address?.country !== undefined) return [input.address.country, 'address.country'];
  if (input.nationality !== undefined) return [input.nationality, 'nationality'];
  return [DEFAULT_REGION, 'region'];
}

/**
 * The currencies a customer may hold: its region's fiat plus USD, and any crypto the
 * platform supports. Inferred when omitted: the region's fiat (USD when the platform does
 * not offer it) and every supported crypto currency.
 */
function resolveCurrencies(env: PlatformEnv, region: string, requested: string[] | undefined): string[] {
  if (requested === undefined) {
    const own = REGION_CURRENCY.get(region)!;
    const fiat = supportsCurrency(env, own) ? [own] : supportsCurrency(env, 'USD') ? ['USD'] : [];
    const crypto = env.config.supportedCurrencies.map((s) => s.currencyCode).filter(isCrypto);
    return [...fiat, ...crypto];
  }
  if (requested.length === 0) throw invalidField('currencies', 'at least one currency is required');
  const seen = new Set<string>();
  requested.forEach((code, i) => {
    if (!CURRENCIES.has(code)) throw invalidField(`currencies.${i}`, `unknown currency code ${code}`);
    if (!supportsCurrency(env, code)) {
      const supported = env.config.supportedCurrencies.map((s) => s.currencyCode).join(', ');
      throw invalidField(`currencies.${i}`, `${code} is not supported by this platform; supported: ${supported}`);
    }
    if (seen.has(code)) throw invalidField(`currencies.${i}`, `${code} is listed twice`);
    seen.add(code);
  });
  const allowed = allowedFiat(region);
  const outside = requested.filter((code) => !isCrypto(code) && !allowed.includes(code));
  if (outside.length > 0) {
    throw new DomainError(
      'INVALID_CURRENCY_COMBINATION',
      `a customer in region ${region} may hold ${allowed.join(' and ')} and crypto; ${outside.join(', ')} need a separate customer`,
      [
        {
          field: 'currencies',
          message: `${outside.join(', ')} need a separate customer`,
          region,
          allowedFiat: allowed,
          separateCustomerRequired: outside,
        },
      ],
    );
  }
  return [...requested];
}

function claimUmaAddress(envId: string, requested: string, self: string | undefined, directory: CustomerDirectory): string {
  const address = requested.toLowerCase();
  const owner = directory.umaOwner(envId, address);
  if (owner !== undefined && owner !== self) {
    throw new DomainError('UMA_ADDRESS_TAKEN', `UMA address ${requested} is taken`, [{ field: 'umaAddress', message: 'already taken' }]);
  }
  return address;
}

/** The UMA address a customer gets when none is given and this one is free. */
function generatedUmaAddress(env: PlatformEnv, customerId: string): string {
  return `$user.${customerId.slice(-12)}@${env.config.umaDomain}`;
}

function generateUmaAddress(env: PlatformEnv, customerId: string, directory: CustomerDirectory): string {
  const first = generatedUmaAddress(env, customerId);
  for (let attempt = 0; ; attempt++) {
    const address = attempt === 0 ? first : `$user.${customerId.slice(-12)}.${attempt}@${env.config.umaDomain}`;
    if (directory.umaOwner(env.id, address) === undefined) return address;
  }
}

interface CustomerViewCommon {
  id: string;
  platformCustomerId: string;
  umaAddress: string;
  region: string;
  currencies: string[];
  email?: string;
  address?: Address;
  isDeleted: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface IndividualCustomerView extends CustomerViewCommon {
  customerType: 'INDIVIDUAL';
  kycStatus: KycStatus;
  fullName?: string;
  birthDate?: string;
  nationality?: string;
}

export type BusinessInfoView = { -readonly [K in keyof BusinessInfo]: K extends 'countriesOfOperation' ? string[] : BusinessInfo[K] };

export interface BusinessCustomerView extends CustomerViewCommon {
  customerType: 'BUSINESS';
  kybStatus: KybStatus;
  businessInfo: BusinessInfoView;
}

export type CustomerView = IndividualCustomerView | BusinessCustomerView;

/** A business's record always holds its kybStatus, a person's its kycStatus: one missing is a bug, not a state to show. */
function present<T>(value: T | undefined, id: string, field: string): T {
  if (value === undefined) throw new Error(`customer ${id} has no ${field}`);
  return value;
}

export function renderCustomer(c: Customer): CustomerView {
  const common: CustomerViewCommon = {
    id: c.id,
    platformCustomerId: c.platformCustomerId,
    umaAddress: c.umaAddress,
    region: c.region,
    currencies: [...c.currencies],
    isDeleted: c.isDeleted,
    createdAt: isoTime(c.createdAt),
    updatedAt: isoTime(c.updatedAt),
  };
  if (c.email !== undefined) common.email = c.email;
  if (c.address !== undefined) common.address = { ...c.address };
  if (c.businessInfo !== undefined) {
    const { countriesOfOperation, ...info } = c.businessInfo;
    const businessInfo: BusinessInfoView = countriesOfOperation === undefined ? info : { ...info, countriesOfOperation: [...countriesOfOperation] };
    return Object.assign(common, { customerType: 'BUSINESS' as const, kybStatus: present(c.kybStatus, c.id, 'kybStatus'), businessInfo });
  }
  // The kind's fields go onto `common` itself, after its own (the order JSON shows them in):
  // on Node 20, a spread followed by properties (`{ ...common, customerType }`) costs about
  // 1.5 µs per property, most of rendering a customer.
  const view: IndividualCustomerView = Object.assign(common, { customerType: 'INDIVIDUAL' as const, kycStatus: present(c.kycStatus, c.id, 'kycStatus') });
  if (c.fullName !== undefined) view.fullName = c.fullName;
  if (c.birthDate !== undefined) view.birthDate = c.birthDate;
  if (c.nationality !== undefined) view.nationality = c.nationality;
  return view;
}

/**
 * The customers. The UMA index is the environment actor's: a decision that reads it
 * (create, or an address change) holds the environment. The per-environment id list only
 * serves listings; no decision reads it.
 *
 * Memory: a million customers live in one process, so records share what repeats (the
 * environment id string, interned currency lists) and the UMA index is a map per
 * environment keyed by the address itself (no composed key string per customer).
 */
export class Customers implements RecordKind<Customer, CustomerEvent> {
  readonly idPrefix = 'Customer:';
  /**
   * A customer opened with the defaults (no profile, no chosen UMA address: what a bulk
   * creation makes) is a row of the log: its UUID, and its environment, region and currencies
   * shared by the group's customers.
   */
  readonly logLayouts: readonly EventLayout[] = [{ type: 'customer.opened', fields: [['u', 'ascii'], ['e', 'shared'], ['r', 'shared'], ['c', 'shared']] }];
  readonly #customers = new RecordMap<Customer>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #umaOwners = new Map<string, Map<string, string>>();
  readonly #lists = new SharedLists();
  /**
   * platformCustomerId to customer id, per environment, only for the environments a bulk
   * import has asked about: built by walking the environment's customers once at the first
   * question, then kept up to date by every customer put. Recovery never builds it (a
   * million customers restore without it), and an environment nobody imports into never pays for it.
   */
  readonly #byPlatformId = new Map<string, Map<string, string>>();
  readonly records: ReadonlyMap<string, Customer> = this.#customers;
  /**
   * The customers a restored snapshot left in lazy chunks (none after `#loadAll`): a customer
   * is read with its chunk the first time anyone asks for it, by id or by UMA address, so a
   * restart builds none of a million. Until the first listing, the listing index holds only
   * the customers made since; that listing lists the rest by their chunks' ids (`#listLazy`).
   */
  #lazy: LazyRecords | undefined;
  /** `#umaKeyHash`'s hash of each environment's part of the key. */
  readonly #umaEnvHashes = new Map<string, number>();
  /** Whether the listing index holds every customer, those left in lazy chunks included (`#listLazy`). */
  #listedAll = true;
  /**
   * The deleted customers of each environment (of those listed): a listing of live customers,
   * the default, leaves them out without reading every customer.
   */
  readonly #deleted = new Map<string, Set<string>>();

  /** The environments, which `customer.opened` derives the kycStatus and generated UMA address from. */
  constructor(private readonly envs: PlatformEnvs) {}

  readonly appliers: Appliers<CustomerEvent> = {
    'customer.created': (event) => {
      if (this.#customers.has(event.customer.id)) throw new Error(`customer.created for ${event.customer.id}, which exists`);
      this.restore(event.customer);
    },
    'customer.opened': (event, at) => {
      const env = this.envs.get(event.e);
      if (env === undefined) throw new Error(`customer.opened for ${event.u} in unknown environment ${event.e}`);
      const customer = openedCustomer(event, env, at, this.#lists.string(event.r), this.#lists.shared(event.c));
      if (!this.#customers.add(customer.id, customer)) throw new Error(`customer.opened for ${customer.id}, which exists`);
      this.#index(customer);
    },
    'customer.updated': (event) => {
      const previous = this.#customers.get(event.customer.id);
      if (previous === undefined) throw new Error(`customer.updated for ${event.customer.id}, which does not exist`);
      if (previous.umaAddress !== event.customer.umaAddress) this.#umaOwners.get(previous.envId)?.delete(previous.umaAddress.toLowerCase());
      this.restore(event.customer);
    },
  };

  /** A customer as an applier hands it over or a snapshot held it, in either stored form. */
  restore(record: Customer | StoredCustomer, id?: string): void {
    if (!isStoredCustomer(record)) return this.#put(this.#share(record));
    if (id === undefined || record[0] !== STORED_CUSTOMER_FORM) throw new Error(`a stored customer ${id ?? ''} of unknown form ${String(record[0])}`);
    this.#put(this.#fromStored(record, id));
  }

  lazyKeys(customer: Customer, key: (hash: number) => void): void {
    key(this.#umaKeyHash(customer.envId, customer.umaAddress));
  }

  /**
   * The `lazyHash` of `uma <envId> <address lower-cased>`, the key a lazy chunk's customer is
   * found by its UMA address under (unique per environment), without building that string:
   * a snapshot hashes one per customer it writes.
   */
  #umaKeyHash(envId: string, address: string): number {
    let envHash = this.#umaEnvHashes.get(envId);
    if (envHash === undefined) this.#umaEnvHashes.set(envId, (envHash = lazyHash(' ', lazyHash(envId, lazyHash('uma ')))));
    return lazyHash(address, envHash, true);
  }

  restoreLazy(lazy: LazyRecords): void {
    this.#lazy = lazy;
    this.#listedAll = false;
    this.#customers.loadWith({ load: (id) => this.#loadLazy(id), loadAll: () => this.#loadAll() });
  }

  /** Reads the lazy chunks that may hold the customer `id`, or (a number) a customer whose `#umaKeyHash` that is. */
  #loadLazy(key: string | number): void {
    const lazy = this.#lazy;
    if (lazy === undefined) return;
    for (const chunk of typeof key === 'string' ? lazy.byId(key) : lazy.byKey(key)) this.#loadChunk(lazy, chunk);
  }

  /**
   * Puts a lazy chunk's customers, each unless a later version is held: the chunks of later
   * generations that may hold any of them go in first, and a customer made or changed since
   * the snapshot is in the map already.
   */
  #loadChunk(lazy: LazyRecords, chunk: LazyChunk): void {
    if (chunk.loaded) return;
    chunk.loaded = true;
    const [ids, forms] = chunk.read();
    for (const id of ids) for (const newer of lazy.byId(id)) if (newer.generation > chunk.generation) this.#loadChunk(lazy, newer);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (!this.#customers.holds(id)) this.#put(this.#fromStored(forms[i] as StoredCustomer, id), 'read');
    }
  }

  /** Reads every lazy chunk left, newest generation first (a customer's latest version is read first), then lists them all. */
  #loadAll(): void {
    const lazy = this.#lazy;
    if (lazy === undefined) return;
    if (!this.#listedAll) this.#listLazy();
    for (const chunk of lazy.all()) this.#loadChunk(lazy, chunk);
    this.#lazy = undefined;
    this.#customers.loadWith(undefined);
  }

  /**
   * Lists every customer, those left in lazy chunks too, without building them: each chunk
   * not yet read is decoded for its ids and environments only (a listing then reads the
   * chunks of the customers it shows), and the listing index is built again, sorted, with
   * the customers built so far (read from chunks, or made since).
   */
  #listLazy(): void {
    const lazy = this.#lazy;
    if (lazy === undefined || this.#listedAll) return;
    this.#listedAll = true;
    const byEnv = new Map<string, string[]>();
    const list = (envId: string, id: string): void => {
      let ids = byEnv.get(envId);
      if (ids === undefined) byEnv.set(envId, (ids = []));
      ids.push(id);
    };
    // Customers a chunk holds deleted: each read whole once listed (its latest version decides).
    const deleted: string[] = [];
    for (const chunk of lazy.all()) {
      const [ids, forms] = chunk.read();
      for (let i = 0; i < ids.length; i++) {
        const form = forms[i] as StoredCustomer;
        list(form[1], ids[i]!);
        if (form[9]?.isDeleted === true) deleted.push(ids[i]!);
      }
    }
    for (const customer of this.#customers.values()) list(customer.envId, customer.id);
    this.#byEnv.clear();
    for (const [envId, ids] of byEnv) {
      // A customer of an earlier generation's chunk may be in a later one's, or built: listed once.
      ids.sort();
      const sorted = bucket(this.#byEnv, envId).ids;
      for (let i = 0; i < ids.length; i++) if (i === 0 || ids[i] !== ids[i - 1]) sorted.push(ids[i]!);
    }
    for (const id of deleted) this.#customers.peek(id);
  }

  /** Notes whether `customer` is deleted, in its environment's set of deleted customers. */
  #noteDeleted(customer: Customer): void {
    let deleted = this.#deleted.get(customer.envId);
    if (!customer.isDeleted) deleted?.delete(customer.id);
    else {
      if (deleted === undefined) this.#deleted.set(customer.envId, (deleted = new Set()));
      deleted.add(customer.id);
    }
  }

  stored(customer: Customer): StoredCustomer {
    const provisioned = customer.provisioned === undefined ? 0 : customer.provisioned === customer.currencies || sameItems(customer.provisioned, customer.currencies) ? 1 : customer.provisioned;
    return [STORED_CUSTOMER_FORM, customer.envId, customer.umaAddress, customer.region, customer.currencies, provisioned, customer.kycStatus ?? null, customer.createdAt, customer.updatedAt, storedRest(customer)];
  }

  /**
   * The record a stored form stands for, its properties in the order `openedCustomer` sets
   * them (one object shape for all), the repeated values shared as `#share` shares them.
   */
  #fromStored(form: StoredCustomer, id: string): Customer {
    const [, envId, umaAddress, region, currencies, provisioned, kycStatus, createdAt, updatedAt, rest] = form;
    const shared = this.#lists.shared(currencies);
    const customer: MutableCustomer = {
      id,
      // Shared among the environment's customers (a snapshot restores them before the environments).
      envId: this.#lists.string(envId),
      platformCustomerId: rest?.platformCustomerId ?? id.slice(CUSTOMER_PREFIX.length),
      customerType: rest?.customerType ?? DEFAULT_CUSTOMER_TYPE,
      umaAddress,
      region: this.#lists.string(region),
      currencies: shared,
      isDeleted: rest?.isDeleted ?? false,
      createdAt,
      updatedAt,
    };
    if (provisioned === 1) customer.provisioned = shared;
    else if (provisioned !== 0) customer.provisioned = this.#lists.shared(provisioned);
    if (kycStatus !== null) customer.kycStatus = kycStatus;
    if (rest !== null) Object.assign(customer, restProfile(rest));
    return customer;
  }

  /** `read`: from a lazy chunk, where it was all along: no change, and listed when all are (`#listLazy`). */
  #put(customer: Customer, read?: 'read'): void {
    if (read === undefined) this.#customers.set(customer.id, customer);
    else this.#customers.install(customer.id, customer);
    this.#index(customer, read);
  }

  /** Puts `customer`, held in the map now, in the indexes (`read`: from a lazy chunk, as `#put`'s). */
  #index(customer: Customer, read?: 'read'): void {
    if (read === undefined) bucket(this.#byEnv, customer.envId).insert(customer.id);
    this.#noteDeleted(customer);
    let owners = this.#umaOwners.get(customer.envId);
    if (owners === undefined) {
      owners = new Map();
      this.#umaOwners.set(customer.envId, owners);
    }
    owners.set(customer.umaAddress.toLowerCase(), customer.id);
    this.#indexPlatformId(this.#byPlatformId.get(customer.envId), customer);
  }

  /** Notes `customer` in an environment's platformCustomerId index (when the environment has one); the first holder of an id keeps it. */
  #indexPlatformId(index: Map<string, string> | undefined, customer: Customer): void {
    if (index !== undefined && !index.has(customer.platformCustomerId)) index.set(customer.platformCustomerId, customer.id);
  }

  /**
   * The customer of `envId` holding `platformCustomerId` (deleted ones included: they stay
   * readable under it), building the environment's index on the first question. Derived
   * state only: building it changes nothing a decision or a digest reads otherwise.
   */
  platformCustomerOwner(envId: string, platformCustomerId: string): string | undefined {
    let index = this.#byPlatformId.get(envId);
    if (index === undefined) {
      index = new Map();
      for (const id of this.idsIn(envId)) this.#indexPlatformId(index, this.#customers.peek(id)!);
      this.#byPlatformId.set(envId, index);
    }
    return index.get(platformCustomerId);
  }

  /**
   * The record with its repeated values shared (lists and strings read back from a log entry
   * or snapshot are fresh copies), in place: a record reaches here fresh from decoding, or
   * built by the decision whose event this is, and no other record holds it; each value is
   * replaced by an equal one, so nothing anyone could read changes. (A copy per record
   * allocates a second object per customer; its profile was about a fifth of restoring a
   * snapshot's customers, though bench:recovery moved within its noise without it.)
   */
  #share(record: Customer): Customer {
    const customer: MutableCustomer = record;
    const envId = this.envs.get(customer.envId)?.id;
    if (envId !== undefined) customer.envId = envId;
    customer.region = this.#lists.string(customer.region);
    customer.currencies = this.#lists.shared(customer.currencies);
    if (customer.provisioned !== undefined) customer.provisioned = this.#lists.shared(customer.provisioned);
    return customer;
  }

  /**
   * UMA addresses are unique per environment: each customer holds exactly its own address in
   * its environment's index, so the index has one entry per customer. Fewer means two
   * customers share an address; more, that a changed address was not released. Counting
   * costs a step per environment; looking each customer up was a tenth of recovering
   * customers, and composing `envId address` keys in a set (before that) 1.3 s a million.
   */
  checkInvariants(): string[] {
    let indexed = 0;
    for (const owners of this.#umaOwners.values()) indexed += owners.size;
    if (indexed === this.#customers.size) return [];
    return [`the UMA address index holds ${indexed} addresses for ${this.#customers.size} customers`];
  }

  get(id: string): Customer | undefined {
    return this.#customers.get(id);
  }

  /**
   * The customer an account derived from it is read from, without the holding check: what a
   * derived account comes from (id, environment, creation time, provisioned currencies)
   * never changes once the customer opens, so a decision that holds only the account reads
   * nothing another actor changes.
   */
  accountOwner(id: string): Customer | undefined {
    return this.#customers.peek(id);
  }

  /**
   * A customer's platformCustomerId, read without the holding check: it never changes once the
   * customer opens (no PATCH sets it), so a transaction a quote derives takes it from here.
   */
  platformCustomerIdOf(id: string): string | undefined {
    return this.#customers.peek(id)?.platformCustomerId;
  }

  /** A customer of `envId`, or undefined: customers of other environments do not exist for it. */
  inEnv(envId: string, id: string): Customer | undefined {
    const c = this.#customers.get(id);
    return c?.envId === envId ? c : undefined;
  }

  idsIn(envId: string): readonly string[] {
    this.#listLazy();
    return this.#byEnv.get(envId)?.ids ?? [];
  }

  /**
   * The environment's customers that are not deleted, ascending: `idsIn` itself while none is
   * deleted, else a copy without them (ids only: no customer is read).
   */
  liveIdsIn(envId: string): readonly string[] {
    const ids = this.idsIn(envId);
    const deleted = this.#deleted.get(envId);
    return deleted === undefined || deleted.size === 0 ? ids : ids.filter((id) => !deleted.has(id));
  }

  umaOwner(envId: string, umaAddress: string): string | undefined {
    const address = umaAddress.toLowerCase();
    const owner = this.#umaOwners.get(envId)?.get(address);
    // A customer in a lazy chunk holds its address only if no customer read or made since does.
    if (owner !== undefined || this.#lazy === undefined) return owner;
    this.#loadLazy(this.#umaKeyHash(envId, address));
    return this.#umaOwners.get(envId)?.get(address);
  }
}

/**
 * One frozen copy of each distinct currency list and region code, so a million customers
 * hold a handful of lists. At most MAX_SHARED of each are kept; past that, values are used
 * as they come (correct, only not shared).
 */
class SharedLists {
  static readonly MAX_SHARED = 1024;
  readonly #lists = new Map<string, readonly string[]>();
  readonly #strings = new Map<string, string>();
  #last: readonly string[] | undefined;

  shared(list: readonly string[]): readonly string[] {
    // Consecutive customers mostly hold the same list: compare with the last one first.
    const last = this.#last;
    if (list === last || (last !== undefined && sameItems(list, last))) return last;
    const key = list.join(',');
    const known = this.#lists.get(key);
    if (known !== undefined) return (this.#last = known);
    if (this.#lists.size >= SharedLists.MAX_SHARED) return list;
    const frozen = Object.freeze([...list]);
    this.#lists.set(key, frozen);
    return (this.#last = frozen);
  }

  string(value: string): string {
    const known = this.#strings.get(value);
    if (known !== undefined) return known;
    if (this.#strings.size < SharedLists.MAX_SHARED) this.#strings.set(value, value);
    return value;
  }
}

function sameItems(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
