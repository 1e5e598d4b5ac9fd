// Customer actor: a platform's end user, with a region, the currencies it may hold, a
// unique UMA address and its internal accounts. Creating a customer provisions one
// internal account per enabled currency in the same log entry. Deletion is soft.
import { newId } from '../src/engine/ids.js';
import { DomainError, invalidField } from './errors.js';
import { provisionAccounts, type InternalAccount } from './internal-account.js';
import { supportsCurrency, type PlatformEnv } from './platform.js';
import { allowedFiat, CURRENCIES, DEFAULT_REGION, isCrypto, REGION_CURRENCY } from './reference.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';

export type KycStatus = 'UNVERIFIED' | 'PENDING' | 'APPROVED' | 'REJECTED';
export const KYC_STATUSES: readonly KycStatus[] = ['UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED'];
export const CUSTOMER_TYPES = ['INDIVIDUAL'] as const;
export type CustomerType = (typeof CUSTOMER_TYPES)[number];

export interface Address {
  line1?: string;
  line2?: string;
  city?: string;
  state?: string;
  postalCode?: string;
  country?: string;
}

export interface Customer {
  readonly id: string;
  readonly envId: string;
  /** The platform's own id. Not unique (neither SERVICE_SPEC nor CONTRACT.md makes it so): no index, nothing to guard. */
  readonly platformCustomerId: string;
  readonly customerType: CustomerType;
  readonly umaAddress: string;
  readonly region: string;
  readonly currencies: readonly string[];
  readonly kycStatus: KycStatus;
  readonly email?: string;
  readonly fullName?: string;
  readonly birthDate?: string;
  readonly nationality?: string;
  readonly address?: Address;
  readonly isDeleted: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type CustomerEvent =
  | { type: 'customer.created'; customer: Customer; accounts: InternalAccount[] }
  | { type: 'customer.updated'; customer: Customer; accounts: InternalAccount[] };

export interface CustomerInput {
  customerType: CustomerType;
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
  customerType: CustomerType;
  region?: string;
  currencies?: string[];
  email?: string;
  umaAddress?: string;
  kycStatus?: KycStatus;
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
): CustomerEvent[] {
  const region = resolveRegion(input);
  const currencies = resolveCurrencies(env, region, input.currencies);
  const id = newId('Customer', at);
  const umaAddress =
    input.umaAddress !== undefined
      ? claimUmaAddress(env.id, input.umaAddress, undefined, directory)
      : generateUmaAddress(env, id, directory);
  const customer: Customer = {
    id,
    envId: env.id,
    platformCustomerId: input.platformCustomerId ?? id.slice('Customer:'.length),
    customerType: input.customerType,
    umaAddress,
    region,
    currencies,
    kycStatus: env.environment === 'sandbox' ? 'APPROVED' : 'UNVERIFIED',
    ...optionalProfile(input),
    isDeleted: false,
    createdAt: at,
    updatedAt: at,
  };
  return [{ type: 'customer.created', customer, accounts: provisionAccounts(env.id, id, currencies, at) }];
}

export function decideUpdateCustomer(
  env: PlatformEnv,
  customer: Customer,
  patch: CustomerPatch,
  existingCurrencies: ReadonlySet<string>,
  directory: CustomerDirectory,
  at: number,
): CustomerEvent[] {
  assertActive(customer);
  if (patch.region !== undefined && patch.region !== customer.region) {
    throw invalidField('region', `region is immutable after creation (it is ${customer.region})`);
  }
  const currencies = patch.currencies === undefined ? customer.currencies : resolveCurrencies(env, customer.region, patch.currencies);
  const umaAddress =
    patch.umaAddress === undefined ? customer.umaAddress : claimUmaAddress(env.id, patch.umaAddress, customer.id, directory);
  const updated: Customer = {
    ...customer,
    customerType: patch.customerType,
    currencies,
    umaAddress,
    ...optionalProfile({ ...customer, ...patch }),
    kycStatus: patch.kycStatus ?? customer.kycStatus,
    updatedAt: at,
  };
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

function optionalProfile(source: CustomerInput | CustomerPatch | Customer): Partial<Customer> {
  const out: { -readonly [K in keyof Customer]?: Customer[K] } = {};
  if (source.email !== undefined) out.email = source.email;
  if (source.fullName !== undefined) out.fullName = source.fullName;
  if (source.birthDate !== undefined) out.birthDate = source.birthDate;
  if (source.nationality !== undefined) out.nationality = source.nationality;
  if (source.address !== undefined) out.address = { ...source.address };
  return out;
}

/** Region given, else address.country, else nationality, else the default (CONTRACT.md). */
function resolveRegion(input: CustomerInput): string {
  const [region, field] =
    input.region !== undefined
      ? [input.region, 'region']
      : input.address?.country !== undefined
        ? [input.address.country, 'address.country']
        : input.nationality !== undefined
          ? [input.nationality, 'nationality']
          : [DEFAULT_REGION, 'region'];
  if (!REGION_CURRENCY.has(region)) {
    const supported = [...REGION_CURRENCY.keys()].join(', ');
    const from = field === 'region' ? '' : ` (taken from ${field}; give region explicitly)`;
    throw invalidField(field, `region ${region} is not supported${from}; supported regions: ${supported}`);
  }
  return region;
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

function generateUmaAddress(env: PlatformEnv, customerId: string, directory: CustomerDirectory): string {
  const random = customerId.slice(-12);
  for (let attempt = 0; ; attempt++) {
    const local = attempt === 0 ? `user.${random}` : `user.${random}.${attempt}`;
    const address = `$${local}@${env.config.umaDomain}`;
    if (directory.umaOwner(env.id, address) === undefined) return address;
  }
}

export interface CustomerView {
  id: string;
  platformCustomerId: string;
  customerType: CustomerType;
  umaAddress: string;
  region: string;
  currencies: string[];
  email?: string;
  kycStatus: KycStatus;
  fullName?: string;
  birthDate?: string;
  nationality?: string;
  address?: Address;
  isDeleted: boolean;
  createdAt: string;
  updatedAt: string;
}

export function renderCustomer(c: Customer): CustomerView {
  const view: CustomerView = {
    id: c.id,
    platformCustomerId: c.platformCustomerId,
    customerType: c.customerType,
    umaAddress: c.umaAddress,
    region: c.region,
    currencies: [...c.currencies],
    kycStatus: c.kycStatus,
    isDeleted: c.isDeleted,
    createdAt: new Date(c.createdAt).toISOString(),
    updatedAt: new Date(c.updatedAt).toISOString(),
  };
  if (c.email !== undefined) view.email = c.email;
  if (c.fullName !== undefined) view.fullName = c.fullName;
  if (c.birthDate !== undefined) view.birthDate = c.birthDate;
  if (c.nationality !== undefined) view.nationality = c.nationality;
  if (c.address !== undefined) view.address = { ...c.address };
  return view;
}

/**
 * The customers. The UMA index is the environment actor's: a decision that reads it
 * (create, or an address change) holds the environment. The per-environment id list only
 * serves listings; no decision reads it.
 */
export class Customers implements RecordKind<Customer, CustomerEvent> {
  readonly idPrefix = 'Customer:';
  readonly #customers = new RecordMap<Customer>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #umaOwners = new Map<string, string>();
  readonly records: ReadonlyMap<string, Customer> = this.#customers;

  readonly appliers: Appliers<CustomerEvent> = {
    'customer.created': (event) => {
      if (this.#customers.has(event.customer.id)) throw new Error(`customer.created for ${event.customer.id}, which exists`);
      this.restore(event.customer);
    },
    'customer.updated': (event) => {
      const previous = this.#customers.get(event.customer.id);
      if (previous === undefined) throw new Error(`customer.updated for ${event.customer.id}, which does not exist`);
      if (previous.umaAddress !== event.customer.umaAddress) this.#umaOwners.delete(umaKey(previous.envId, previous.umaAddress));
      this.restore(event.customer);
    },
  };

  restore(customer: Customer): void {
    this.#customers.set(customer.id, customer);
    bucket(this.#byEnv, customer.envId).insert(customer.id);
    this.#umaOwners.set(umaKey(customer.envId, customer.umaAddress), customer.id);
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    const seenUma = new Set<string>();
    for (const c of this.#customers.values()) {
      const key = umaKey(c.envId, c.umaAddress);
      if (seenUma.has(key)) problems.push(`UMA address ${c.umaAddress} is held twice`);
      seenUma.add(key);
    }
    return problems;
  }

  get(id: string): Customer | undefined {
    return this.#customers.get(id);
  }

  /** A customer of `envId`, or undefined: customers of other environments do not exist for it. */
  inEnv(envId: string, id: string): Customer | undefined {
    const c = this.#customers.get(id);
    return c?.envId === envId ? c : undefined;
  }

  idsIn(envId: string): readonly string[] {
    return this.#byEnv.get(envId)?.ids ?? [];
  }

  umaOwner(envId: string, umaAddress: string): string | undefined {
    return this.#umaOwners.get(umaKey(envId, umaAddress));
  }
}

function umaKey(envId: string, umaAddress: string): string {
  return `${envId} ${umaAddress.toLowerCase()}`;
}
