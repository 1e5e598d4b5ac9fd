// Receiver lookups (SERVICE_SPEC part 4 "Receiver lookup"; CONTRACT.md "Money"): before a
// quote to an UMA address the sender looks the receiver up and gets a `Lookup:<id>` that
// names the receiver, the currencies it can receive (with bounds and an estimated rate)
// and the payer data it requires. A lookup is valid for 5 minutes and for one quote.
//
// Lookups are records of the environment actor: the GET that makes one decides under the
// environment (whose UMA index it reads) and a quote that uses one holds the environment
// too. They are bounded: expired lookups are kept LOOKUP_RETENTION_MS more (so a late
// quote hears LOOKUP_EXPIRED rather than "unknown") and then pruned, deterministically, by
// the entry time of the environment's next lookup; and an environment holds at most
// MAX_LOOKUPS_PER_ENV lookups, past which a new lookup is refused (the route answers 429).
// The test addresses' behaviours (long pending, compliance failure) are carried on the
// receiver for the quote code to act on.
import { newId } from '../src/engine/ids.js';
import type { Customer } from './customer.js';
import { DomainError, invalidField, rateLimited, type FieldProblem } from './errors.js';
import type { ExternalAccount } from './external-account.js';
import { exchangeRate, pairRate } from './fx.js';
import { defaultSupportedCurrency, SANDBOX_UMA_DOMAIN, type CounterpartyField, type PlatformEnv } from './platform.js';
import { currencyObject, type Currency } from './reference.js';
import { RecordMap, type Appliers, type RecordKind } from './registry.js';
import { isoTime } from './iso-time.js';

/** How long a lookup can be used by a quote (CONTRACT.md). */
export const LOOKUP_TTL_MS = 5 * 60_000;
/** How long an expired lookup is kept before it is pruned. */
export const LOOKUP_RETENTION_MS = 10 * 60_000;
/** Lookups one environment may hold (live or retained): about 55 a second sustained over their 15 minutes. */
export const MAX_LOOKUPS_PER_ENV = 50_000;

/** What the sandbox test addresses do when paid (SERVICE_SPEC part 3, "Test UMA addresses"). */
export type SandboxReceiverBehaviour = 'SUCCESS' | 'PENDING_LONG' | 'FAIL_COMPLIANCE';

/** The test UMA addresses by local part, each at the sandbox UMA domain. */
export const SANDBOX_TEST_RECEIVERS: ReadonlyMap<string, { currency: string; behaviour: SandboxReceiverBehaviour }> = new Map([
  ['$success.usd', { currency: 'USD', behaviour: 'SUCCESS' }],
  ['$success.eur', { currency: 'EUR', behaviour: 'SUCCESS' }],
  ['$success.mxn', { currency: 'MXN', behaviour: 'SUCCESS' }],
  ['$pending.long.usd', { currency: 'USD', behaviour: 'PENDING_LONG' }],
  ['$fail.compliance.usd', { currency: 'USD', behaviour: 'FAIL_COMPLIANCE' }],
] as const);

/** Who a lookup found. */
export type LookupReceiver =
  /** A customer of the same environment: a payment to it moves money between internal accounts. */
  | { readonly kind: 'CUSTOMER'; readonly umaAddress: string; readonly customerId: string }
  /** One of the sandbox's test addresses, with its scripted behaviour. */
  | { readonly kind: 'SANDBOX_TEST_ADDRESS'; readonly umaAddress: string; readonly behaviour: SandboxReceiverBehaviour }
  /** An external account of the same environment. */
  | { readonly kind: 'EXTERNAL_ACCOUNT'; readonly accountId: string; readonly customerId: string | null };

/** One currency the receiver can receive. Amounts are the receiving currency's smallest units. */
export interface LookupCurrency {
  readonly currency: string;
  readonly min: number;
  readonly max: number;
  /** Sending major units per receiving major unit, from the shipped FX table; absent when the table has no such pair. */
  readonly estimatedExchangeRate?: number;
  /** The payer data this currency's receiver asks for. */
  readonly requiredPayerDataFields: readonly CounterpartyField[];
}

export interface Lookup {
  readonly id: string;
  readonly envId: string;
  readonly receiver: LookupReceiver;
  /** The currency estimatedExchangeRate converts from. */
  readonly sendingCurrency: string;
  readonly senderCustomerId?: string;
  readonly senderUmaAddress?: string;
  /** The receiver's currencies, its default first. */
  readonly supportedCurrencies: readonly LookupCurrency[];
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The quote that used the lookup; a lookup serves one quote. */
  readonly usedByQuote?: string;
}

export type LookupCreated = { type: 'lookup.created'; lookup: Lookup };
export type LookupUsed = { type: 'lookup.used'; lookupId: string; quoteId: string };
export type LookupEvent = LookupCreated | LookupUsed;

/** What resolving an UMA address reads: the environment's UMA index and its customers. */
export interface ReceiverDirectory {
  umaOwner(envId: string, umaAddress: string): string | undefined;
  inEnv(envId: string, customerId: string): Customer | undefined;
}

/**
 * The receiver an UMA address names, seen from `env`, or undefined (a 404): a customer of
 * this environment that is not deleted, else, in the sandbox only, one of the test
 * addresses. A customer holding an address takes precedence over a test address of the
 * same spelling. Production reaches no test address: they exist in the sandbox only.
 */
export function resolveUmaReceiver(
  env: PlatformEnv,
  umaAddress: string,
  directory: ReceiverDirectory,
): { receiver: LookupReceiver; currencies: readonly string[] } | undefined {
  const address = umaAddress.toLowerCase();
  const ownerId = directory.umaOwner(env.id, address);
  const owner = ownerId === undefined ? undefined : directory.inEnv(env.id, ownerId);
  if (owner !== undefined && !owner.isDeleted) {
    return { receiver: { kind: 'CUSTOMER', umaAddress: owner.umaAddress, customerId: owner.id }, currencies: owner.currencies };
  }
  if (env.environment !== 'sandbox') return undefined;
  const at = address.lastIndexOf('@');
  if (address.slice(at + 1) !== SANDBOX_UMA_DOMAIN) return undefined;
  const test = SANDBOX_TEST_RECEIVERS.get(address.slice(0, at));
  if (test === undefined) return undefined;
  return { receiver: { kind: 'SANDBOX_TEST_ADDRESS', umaAddress: address, behaviour: test.behaviour }, currencies: [test.currency] };
}

/** An external account of the environment as a receiver. */
export function externalAccountReceiver(account: ExternalAccount): { receiver: LookupReceiver; currencies: readonly string[] } {
  return { receiver: { kind: 'EXTERNAL_ACCOUNT', accountId: account.id, customerId: account.customerId }, currencies: [account.currency] };
}

/**
 * The currency estimatedExchangeRate converts from: the sending customer's default
 * currency when one is named, else the platform's first supported currency.
 */
export function sendingCurrencyFor(env: PlatformEnv, sender: Customer | undefined): string {
  return sender?.currencies[0] ?? env.config.supportedCurrencies[0]?.currencyCode ?? 'USD';
}

export interface LookupInput {
  receiver: LookupReceiver;
  currencies: readonly string[];
  sendingCurrency: string;
  senderCustomerId?: string;
  senderUmaAddress?: string;
}

/**
 * A new lookup. Bounds and required payer data of each currency come from the
 * environment's configuration (`minAmount`, `maxAmount`, `requiredCounterpartyFields`: what
 * the platform requires of a counterparty paying in that currency), or the defaults for a
 * currency the platform does not configure. Refused (429, with when the oldest lookup makes
 * room) when the environment would hold more than MAX_LOOKUPS_PER_ENV.
 */
export function decideCreateLookup(env: PlatformEnv, input: LookupInput, lookups: Lookups, at: number): LookupCreated {
  if (lookups.heldAfterPrune(env.id, at) >= MAX_LOOKUPS_PER_ENV) {
    const freedAt = lookups.oldestPrunedAt(env.id) ?? at + LOOKUP_TTL_MS;
    throw rateLimited(`this environment holds ${MAX_LOOKUPS_PER_ENV} receiver lookups`, Math.max(1, Math.ceil((freedAt - at) / 1000)));
  }
  const supportedCurrencies = input.currencies.map((code): LookupCurrency => {
    const config = env.config.supportedCurrencies.find((s) => s.currencyCode === code) ?? defaultSupportedCurrency(code);
    return {
      currency: code,
      min: config.minAmount,
      max: config.maxAmount,
      ...(pairRate(input.sendingCurrency, code) !== undefined ? { estimatedExchangeRate: exchangeRate(input.sendingCurrency, code) } : {}),
      requiredPayerDataFields: config.requiredCounterpartyFields.map((f) => ({ name: f.name, mandatory: f.mandatory })),
    };
  });
  const lookup: Lookup = {
    id: newId('Lookup', at),
    envId: env.id,
    receiver: input.receiver,
    sendingCurrency: input.sendingCurrency,
    ...(input.senderCustomerId !== undefined ? { senderCustomerId: input.senderCustomerId } : {}),
    ...(input.senderUmaAddress !== undefined ? { senderUmaAddress: input.senderUmaAddress.toLowerCase() } : {}),
    supportedCurrencies,
    createdAt: at,
    expiresAt: at + LOOKUP_TTL_MS,
  };
  return { type: 'lookup.created', lookup };
}

export interface UseLookupInput {
  lookupId: string;
  /** The quote's destination.umaAddress. */
  umaAddress: string;
  /** The quote's destination.currency; the receiver's default currency when omitted. */
  currency?: string;
  senderCustomerInfo?: Readonly<Record<string, string>>;
  /** The quote being made, recorded on the lookup. */
  quoteId: string;
}

/**
 * Uses a lookup for one quote to an UMA address. `lookup` is the environment's record of
 * that id (undefined when it has none). Refusals name the quote's fields: lookupId
 * (unknown: 400 INVALID_INPUT; expired: 400 LOOKUP_EXPIRED; used by another quote: 409
 * LOOKUP_ALREADY_USED), destination.umaAddress (not the address looked up),
 * destination.currency (not one the receiver takes), and every mandatory payer data field
 * missing from senderCustomerInfo (400 MISSING_MANDATORY_PAYEE_DATA, one detail each).
 */
export function decideUseLookup(
  lookup: Lookup | undefined,
  input: UseLookupInput,
  at: number,
): { receiver: LookupReceiver; currency: LookupCurrency; event: LookupUsed } {
  if (lookup === undefined) throw invalidField('lookupId', `unknown lookup ${input.lookupId}: look the receiver up first`);
  if (at >= lookup.expiresAt) {
    throw new DomainError('LOOKUP_EXPIRED', `lookup ${lookup.id} expired at ${isoTime(lookup.expiresAt)}; look the receiver up again`, [
      { field: 'lookupId', message: 'has expired' },
    ]);
  }
  if (lookup.usedByQuote !== undefined) {
    throw new DomainError('LOOKUP_ALREADY_USED', `lookup ${lookup.id} was used by ${lookup.usedByQuote}; a lookup serves one quote`, [
      { field: 'lookupId', message: `already used by ${lookup.usedByQuote}` },
    ]);
  }
  const receiver = lookup.receiver;
  if (receiver.kind === 'EXTERNAL_ACCOUNT') {
    throw invalidField('destination.umaAddress', `lookup ${lookup.id} is for external account ${receiver.accountId}, not an UMA address`);
  }
  if (receiver.umaAddress !== input.umaAddress.toLowerCase()) {
    throw invalidField('destination.umaAddress', `must be ${receiver.umaAddress}, the address lookup ${lookup.id} found`);
  }
  const currency = input.currency === undefined ? lookup.supportedCurrencies[0] : lookup.supportedCurrencies.find((c) => c.currency === input.currency);
  if (currency === undefined) {
    throw invalidField('destination.currency', `the receiver takes ${lookup.supportedCurrencies.map((c) => c.currency).join(', ')}`);
  }
  const info = input.senderCustomerInfo ?? {};
  const missing: FieldProblem[] = currency.requiredPayerDataFields
    .filter((f) => f.mandatory && !(Object.hasOwn(info, f.name) && info[f.name]!.trim() !== ''))
    .map((f) => ({ field: `senderCustomerInfo.${f.name}`, message: `is required by the receiver for ${currency.currency}` }));
  if (missing.length > 0) {
    throw new DomainError(
      'MISSING_MANDATORY_PAYEE_DATA',
      `senderCustomerInfo lacks ${missing.map((m) => m.field.slice('senderCustomerInfo.'.length)).join(', ')}, which the receiver requires`,
      missing,
    );
  }
  return { receiver, currency, event: { type: 'lookup.used', lookupId: lookup.id, quoteId: input.quoteId } };
}

/**
 * The payer data a lookup asks for, over all its currencies: a field is mandatory when any
 * currency makes it so, so a sender that supplies every mandatory field passes whichever
 * currency it picks.
 */
export function requiredPayerDataFields(lookup: Lookup): CounterpartyField[] {
  const byName = new Map<string, boolean>();
  for (const c of lookup.supportedCurrencies) {
    for (const f of c.requiredPayerDataFields) byName.set(f.name, (byName.get(f.name) ?? false) || f.mandatory);
  }
  return [...byName].map(([name, mandatory]) => ({ name, mandatory }));
}

interface LookupViewCommon {
  lookupId: string;
  supportedCurrencies: Array<{ currency: Currency; estimatedExchangeRate?: number; min: number; max: number }>;
  requiredPayerDataFields: CounterpartyField[];
  expiresAt: string;
}

/** A lookup names its receiver one way: a UMA address, or an external account. */
export type LookupView = (LookupViewCommon & { receiverUmaAddress: string }) | (LookupViewCommon & { accountId: string });

export function renderLookup(lookup: Lookup): LookupView {
  const receiver = lookup.receiver;
  return {
    lookupId: lookup.id,
    ...(receiver.kind === 'EXTERNAL_ACCOUNT' ? { accountId: receiver.accountId } : { receiverUmaAddress: receiver.umaAddress }),
    supportedCurrencies: lookup.supportedCurrencies.map((c) => ({
      currency: currencyObject(c.currency),
      ...(c.estimatedExchangeRate !== undefined ? { estimatedExchangeRate: c.estimatedExchangeRate } : {}),
      min: c.min,
      max: c.max,
    })),
    requiredPayerDataFields: requiredPayerDataFields(lookup),
    expiresAt: isoTime(lookup.expiresAt),
  };
}

/**
 * The lookups, and each environment's in creation order (Set insertion order), which is also
 * expiry order: pruning takes from the front. An environment's lookups are pruned by its own
 * next lookup only, since they are its actor's records.
 */
export class Lookups implements RecordKind<Lookup, LookupEvent> {
  readonly idPrefix = 'Lookup:';
  /** A lookup is the environment actor's record (a quote uses it up). */
  actorOf(lookup: Lookup): string {
    return lookup.envId;
  }
  readonly #lookups = new RecordMap<Lookup>();
  readonly #idsByEnv = new Map<string, Set<string>>();
  readonly records: ReadonlyMap<string, Lookup> = this.#lookups;

  readonly appliers: Appliers<LookupEvent> = {
    'lookup.created': (event, at) => {
      if (this.#lookups.has(event.lookup.id)) throw new Error(`lookup.created for ${event.lookup.id}, which exists`);
      this.#prune(event.lookup.envId, at);
      this.restore(event.lookup);
    },
    'lookup.used': (event) => {
      const lookup = this.#lookups.get(event.lookupId);
      if (lookup === undefined) throw new Error(`lookup.used for ${event.lookupId}, which does not exist`);
      this.#lookups.set(lookup.id, { ...lookup, usedByQuote: event.quoteId });
    },
  };

  restore(lookup: Lookup): void {
    this.#lookups.set(lookup.id, lookup);
    let ids = this.#idsByEnv.get(lookup.envId);
    if (ids === undefined) {
      ids = new Set();
      this.#idsByEnv.set(lookup.envId, ids);
    }
    ids.add(lookup.id);
  }

  /** Drops the environment's lookups expired more than LOOKUP_RETENTION_MS before `at`. */
  #prune(envId: string, at: number): void {
    const ids = this.#idsByEnv.get(envId);
    if (ids === undefined) return;
    for (const id of ids) {
      if (this.#lookups.get(id)!.expiresAt + LOOKUP_RETENTION_MS > at) break;
      this.#lookups.delete(id);
      ids.delete(id);
    }
    if (ids.size === 0) this.#idsByEnv.delete(envId);
  }

  checkInvariants(): string[] {
    const problems: string[] = [];
    const held = new Map<string, number>();
    for (const l of this.#lookups.values()) {
      held.set(l.envId, (held.get(l.envId) ?? 0) + 1);
      if (l.expiresAt !== l.createdAt + LOOKUP_TTL_MS) problems.push(`lookup ${l.id} expires ${l.expiresAt - l.createdAt} ms after creation`);
      if (l.supportedCurrencies.length === 0) problems.push(`lookup ${l.id} has no currency`);
    }
    for (const envId of new Set([...held.keys(), ...this.#idsByEnv.keys()])) {
      const n = held.get(envId) ?? 0;
      const listed = this.#idsByEnv.get(envId)?.size ?? 0;
      if (listed !== n) problems.push(`environment ${envId} holds ${n} lookups but lists ${listed}`);
      if (n > MAX_LOOKUPS_PER_ENV) problems.push(`environment ${envId} holds ${n} lookups, more than ${MAX_LOOKUPS_PER_ENV}`);
    }
    return problems;
  }

  /** The lookup of `envId`, or undefined: another environment's lookups do not exist for it. */
  inEnv(envId: string, id: string): Lookup | undefined {
    const lookup = this.#lookups.get(id);
    return lookup?.envId === envId ? lookup : undefined;
  }

  /**
   * Lookups the environment will hold once a lookup created at `at` has pruned the old ones:
   * what MAX_LOOKUPS_PER_ENV bounds. Visits only the lookups that pruning removes.
   */
  heldAfterPrune(envId: string, at: number): number {
    const ids = this.#idsByEnv.get(envId);
    if (ids === undefined) return 0;
    let held = ids.size;
    for (const id of ids) {
      if (this.#lookups.get(id)!.expiresAt + LOOKUP_RETENTION_MS > at) break;
      held--;
    }
    return held;
  }

  /** When the environment's oldest lookup is pruned (by the environment's next lookup created after it). */
  oldestPrunedAt(envId: string): number | undefined {
    const ids = this.#idsByEnv.get(envId);
    if (ids === undefined) return undefined;
    for (const id of ids) return this.#lookups.get(id)!.expiresAt + LOOKUP_RETENTION_MS;
    return undefined;
  }
}
