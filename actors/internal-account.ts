// Internal account actor: a balance in one currency, owned by a customer or by the
// platform. Embedded wallets are internal accounts of type EMBEDDED_WALLET.
//
// Money is an integer count of the currency's smallest unit and stays a safe integer.
// `inflow` and `outflow` count what entered and left the service through this account
// (funding, payouts); transfers between accounts move balance without touching them, so
// per environment and currency the balances, plus the money in transit and the fees taken
// (the ledger totals, actors/ledger.ts), always sum to inflow minus outflow.
import { newId } from '../src/engine/ids.js';
import { derivedAccountBase, derivedAccountId, derivedAccountIdAt, derivedFrom, isDerivedId } from './derived-ids.js';
import { isAmount, type Ledger } from './ledger.js';
import { currencyObject, isCrypto, type Currency } from './reference.js';
import { bucket, RecordMap, type Appliers, type IdWalk, type RecordKind, type RecordLookup, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export type InternalAccountType = 'INTERNAL_FIAT' | 'INTERNAL_CRYPTO' | 'EMBEDDED_WALLET';
export const INTERNAL_ACCOUNT_TYPES: readonly InternalAccountType[] = ['INTERNAL_FIAT', 'INTERNAL_CRYPTO', 'EMBEDDED_WALLET'];

export interface FundingInstruction {
  accountOrWalletInfo: {
    accountType: string;
    accountNumber: string;
    routingNumber?: string;
    reference: string;
  };
  instructionsNotes: string;
  isPlatformAccount: boolean;
}

export interface InternalAccount {
  readonly id: string;
  readonly envId: string;
  /** '' when the account belongs to the platform */
  readonly customerId: string;
  readonly type: InternalAccountType;
  readonly currency: string;
  readonly balance: number;
  readonly inflow: number;
  readonly outflow: number;
  /**
   * Fiat accounts: the reference that routes a deposit into the pooled account to this
   * one, an encoding of the account's own id (see fundingReference). The funding
   * instructions are rendered from it; only it is stored and logged.
   */
  readonly fundingReference?: string;
  /** EMBEDDED_WALLET accounts: wallet privacy, set by the signed PATCH /internal-accounts/{id}; absent: off. */
  readonly privateEnabled?: boolean;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** What a listing filters accounts on. */
export type AccountSummary = Pick<InternalAccount, 'customerId' | 'currency' | 'type'>;

export type InternalAccountEvent =
  /**
   * Sandbox funding as logged before it recorded a transaction (now a `payment.recorded`,
   * decideSandboxFund in actors/payment.ts); applied so that older logs still replay.
   */
  | { type: 'account.funded'; accountId: string; amount: number }
  /** The platform's own accounts, one per supported currency; made under the environment actor. */
  | { type: 'platform.accounts.created'; accounts: InternalAccount[] }
  /** An embedded wallet's privacy turned on or off (its signed retry, under the account's actor). */
  | { type: 'account.privacy.set'; accountId: string; privateEnabled: boolean };

/**
 * One account's share of a movement: its balance changes by `balance`; `inflow` and
 * `outflow` count what entered or left the service through it (a payout settling, a
 * conversion into another currency's pool).
 */
export interface Posting {
  accountId: string;
  balance: number;
  inflow: number;
  outflow: number;
}

/** The largest amount one sandbox funding may add (SERVICE_SPEC part 8). */
export const MAX_FUND_AMOUNT = 1_000_000_000_000;

/** The service's pooled receiving account that funding references point into. */
/** The service's pooled bank accounts that receive fiat deposits, by currency (the reference names the recipient). */
export const POOL_ACCOUNT: Readonly<Record<string, { accountType: string; accountNumber: string; routingNumber?: string }>> = {
  USD: { accountType: 'USD_ACCOUNT', accountNumber: '000123456789', routingNumber: '021000021' },
  EUR: { accountType: 'IBAN', accountNumber: 'DE89370400440532013000' },
  MXN: { accountType: 'CLABE', accountNumber: '032180000118359719' },
  BRL: { accountType: 'BRL_ACCOUNT', accountNumber: '00000000000191' },
  AED: { accountType: 'AED_ACCOUNT', accountNumber: 'AE070331234567890123456' },
  GBP: { accountType: 'IBAN', accountNumber: 'GB82WEST12345698765432' },
  INR: { accountType: 'UPI', accountNumber: 'service@upi' },
};

export function accountTypeFor(currency: string, ownedByCustomer: boolean): InternalAccountType {
  if (currency === 'USDB' && ownedByCustomer) return 'EMBEDDED_WALLET';
  return isCrypto(currency) ? 'INTERNAL_CRYPTO' : 'INTERNAL_FIAT';
}

/** A new account record; fiat accounts get their funding reference. */
export function provisionAccount(envId: string, customerId: string, currency: string, at: number): InternalAccount {
  return emptyAccount(newId('InternalAccount', at), envId, customerId, currency, at);
}

function emptyAccount(id: string, envId: string, customerId: string, currency: string, at: number): InternalAccount {
  const type = accountTypeFor(currency, customerId !== '');
  // The reference in the literal, not added after it: an added property costs the account a
  // property array, which every later version of it (each balance change) copies.
  if (type === 'INTERNAL_FIAT' && POOL_ACCOUNT[currency] !== undefined) {
    return { id, envId, customerId, type, currency, balance: 0, inflow: 0, outflow: 0, createdAt: at, updatedAt: at, fundingReference: fundingReference(id) };
  }
  return { id, envId, customerId, type, currency, balance: 0, inflow: 0, outflow: 0, createdAt: at, updatedAt: at };
}

/**
 * What the accounts read of a customer: the currencies provisioned with it, from which its
 * first accounts are derived (customer.ts has the whole record).
 */
export interface AccountOwner {
  readonly id: string;
  readonly envId: string;
  readonly createdAt: number;
  readonly provisioned?: readonly string[];
}

/** The customers, as the accounts read them (Customers in customer.ts). */
export interface AccountOwners {
  /** What derived accounts come from, which never changes: read without the holding check. */
  accountOwner(id: string): AccountOwner | undefined;
  /** The environment's customer ids, ascending. */
  idsIn(envId: string): readonly string[];
}

/** The events the accounts apply, as far as they read them (their makers write more). */
type AccountsEvent =
  | InternalAccountEvent
  | { type: 'customer.created'; accounts: readonly InternalAccount[] }
  | { type: 'customer.opened' }
  | { type: 'customer.updated'; accounts: readonly InternalAccount[] }
  | { type: 'payment.recorded'; postings: readonly Posting[] };

/**
 * `account` after a movement, written out field by field: a spread of the account and its
 * changes cost several microseconds per posting on Node 20, two postings to a payment.
 */
function moved(account: InternalAccount, balance: number, inflow: number, outflow: number, at: number): InternalAccount {
  return versionOf(account, balance, inflow, outflow, at, account.privateEnabled);
}

/** A version of `account`: what never changes taken from it, the rest given. */
function versionOf(account: InternalAccount, balance: number, inflow: number, outflow: number, at: number, privateEnabled: boolean | undefined): InternalAccount {
  const { fundingReference } = account;
  // A fiat account's usual shape in one literal: a property added after a literal costs the
  // record a property array (ACCOUNT_STATUS events keep each version for as long as they live).
  if (fundingReference !== undefined && privateEnabled === undefined) {
    return { id: account.id, envId: account.envId, customerId: account.customerId, type: account.type, currency: account.currency, balance, inflow, outflow, createdAt: account.createdAt, updatedAt: at, fundingReference };
  }
  const next: { -readonly [K in keyof InternalAccount]: InternalAccount[K] } = {
    id: account.id,
    envId: account.envId,
    customerId: account.customerId,
    type: account.type,
    currency: account.currency,
    balance,
    inflow,
    outflow,
    createdAt: account.createdAt,
    updatedAt: at,
  };
  if (fundingReference !== undefined) next.fundingReference = fundingReference;
  if (privateEnabled !== undefined) next.privateEnabled = privateEnabled;
  return next;
}

/**
 * An account's version as a snapshot stores it where another record holds it (a webhook
 * step's ACCOUNT_STATUS report): what changes from version to version. The rest (id aside)
 * is read from the account as it is when the snapshot is restored: an account's
 * environment, owner, type, currency, reference and creation time never change. Two such
 * versions, written whole, were a fifth of a payment's bytes in a snapshot (docs/bench.md,
 * session 45).
 */
export type StoredAccountVersion = readonly [id: string, balance: number, inflow: number, outflow: number, updatedAt: number, privateEnabled?: boolean];

/** `version` as StoredAccountVersion, if `current` (its account as the snapshot holds it) gives back the rest exactly. */
export function storedAccountVersion(version: InternalAccount, current: InternalAccount | undefined): StoredAccountVersion | undefined {
  if (
    current === undefined ||
    current.id !== version.id ||
    current.envId !== version.envId ||
    current.customerId !== version.customerId ||
    current.type !== version.type ||
    current.currency !== version.currency ||
    current.fundingReference !== version.fundingReference ||
    current.createdAt !== version.createdAt
  ) {
    return undefined;
  }
  const { id, balance, inflow, outflow, updatedAt, privateEnabled } = version;
  return privateEnabled === undefined ? [id, balance, inflow, outflow, updatedAt] : [id, balance, inflow, outflow, updatedAt, privateEnabled];
}

/** The version `stored` holds of the account `current` is now. */
export function accountVersionAt(current: InternalAccount, stored: StoredAccountVersion): InternalAccount {
  return versionOf(current, stored[1], stored[2], stored[3], stored[4], stored[5]);
}

/** The account `derivedAccountId(customer.id, index)` is before its first movement. */
function derivedAccount(customer: AccountOwner, index: number, currency: string): InternalAccount {
  return emptyAccount(derivedAccountId(customer.id, index), customer.envId, customer.id, currency, customer.createdAt);
}

/** One account per currency. */
export function provisionAccounts(envId: string, customerId: string, currencies: readonly string[], at: number): InternalAccount[] {
  return currencies.map((currency) => provisionAccount(envId, customerId, currency, at));
}

const BASE32_CODES = Buffer.from('ABCDEFGHJKLMNPQRSTUVWXYZ23456789', 'latin1');
const UUID_TEXT_LENGTH = 36;
/**
 * Where a reference is written before it is read as one flat string: appended a character at
 * a time it was a rope of about twenty pieces, which a transaction kept for as long as it lived.
 */
const REFERENCE_TEXT = referenceBuffer(UUID_TEXT_LENGTH);

/** Room for `UMA` and the base32 of up to `digits` hex digits. */
function referenceBuffer(digits: number): Buffer {
  return Buffer.alloc(3 + Math.ceil((digits * 4) / 5));
}

/**
 * `UMA` and the 128 bits of the account's UUID in base32 (26 characters). The reference is
 * unique because the id is, in every environment of every platform at once (the pooled
 * account is shared), so no store-wide index and no actor is needed to hand one out, and
 * a deposit's reference names the one account (actor) it is for.
 */
export function fundingReference(id: string): string {
  const from = id.indexOf(':') + 1;
  // Every id made today is a kind and a UUID; a longer one gets a buffer of its own.
  const text = id.length - from <= UUID_TEXT_LENGTH ? REFERENCE_TEXT : referenceBuffer(id.length - from);
  let at = text.write('UMA', 0, 'latin1');
  let bits = 0;
  let pending = 0;
  for (let i = from; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (c === 45) continue; // '-'
    pending = (pending << 4) | (c <= 57 ? c - 48 : c - 87); // lower-case hex digit
    bits += 4;
    if (bits >= 5) {
      bits -= 5;
      text[at++] = BASE32_CODES[(pending >>> bits) & 31]!;
      pending &= (1 << bits) - 1;
    }
  }
  if (bits > 0) text[at++] = BASE32_CODES[(pending << (5 - bits)) & 31]!;
  return text.toString('latin1', 0, at);
}

/**
 * The apply guard. Unreachable from a decision, timers' included: a debit is decided
 * against the balance it takes from (INSUFFICIENT_BALANCE), and every balance and flow
 * counter is at most its environment's intake (actors/ledger.ts, Intake), which each
 * decision that adds to it holds to MAX_SAFE_INTEGER (assertIntakeRoom: sandbox funding,
 * transfer-in, a direct pull or converted payment executing, realtime funding arriving, an
 * incoming payment being recorded). Every other step only moves money the intake already
 * counts: a refund or return gives back what its payout took (a return cancels the
 * payout's outflow rather than counting new inflow), a settlement moves in-transit money
 * out, an approval credits what was reserved when the payment was recorded. A throw here
 * is a bug, and stops the process.
 */
function assertBalance(account: InternalAccount, balance: number, inflow: number, outflow: number): void {
  if (!isAmount(balance)) {
    throw new Error(`balance of ${account.id} would become ${balance}`);
  }
  if (!isAmount(inflow) || !isAmount(outflow)) {
    throw new Error(`flows of ${account.id} would become ${inflow}/${outflow}`);
  }
}

/**
 * The internal accounts, and the ledger invariant. Each account is an actor; the index by
 * owner (a customer, or the environment for the platform's accounts) changes only under
 * that owner's actor, which creates the accounts. The per-environment list only serves
 * listings; no decision reads it.
 *
 * The accounts provisioned with a customer by `customer.opened` are derived from the
 * customer record (derivedAccountId) and stored only once money moves through them; they
 * are in no index here: reads and listings expand each customer's provisioned currencies.
 */
export class InternalAccounts implements RecordKind<InternalAccount, AccountsEvent> {
  readonly idPrefix = 'InternalAccount:';
  readonly #accounts = new RecordMap<InternalAccount>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #byOwner = new Map<string, SortedIds>();
  /** The customers with a derived account that has a stored record (money moved through it). */
  readonly #materialised = new Set<string>();
  /**
   * The stored accounts' inflow added up, by `envId currency`: their part of the
   * environment's intake (Intake in actors/ledger.ts). Kept as records are stored, so a
   * snapshot's restore rebuilds it; derived accounts not yet stored have none.
   */
  readonly #inflowIn = new Map<string, number>();
  readonly records: ReadonlyMap<string, InternalAccount> = this.#accounts;

  /** The ledger totals the invariant adds to the balances; the customers whose provisioned accounts are derived. */
  constructor(
    private readonly ledger: Ledger,
    private readonly customers: AccountOwners,
  ) {}

  readonly appliers: Appliers<AccountsEvent> = {
    'account.funded': (event, at) => {
      const account = this.get(event.accountId);
      if (account === undefined) throw new Error(`no account ${event.accountId}`);
      const balance = account.balance + event.amount;
      const inflow = account.inflow + event.amount;
      assertBalance(account, balance, inflow, account.outflow);
      this.#store({ ...account, balance, inflow, updatedAt: at });
    },
    'platform.accounts.created': (event) => this.#putAll(event.accounts),
    'account.privacy.set': (event, at) => {
      const account = this.get(event.accountId);
      if (account === undefined) throw new Error(`no account ${event.accountId}`);
      this.#store({ ...account, privateEnabled: event.privateEnabled, updatedAt: at });
    },
    'customer.created': (event) => this.#putAll(event.accounts),
    // Its accounts are derived from the customer record (Customers applies it).
    'customer.opened': () => {},
    'customer.updated': (event) => this.#putAll(event.accounts),
    'payment.recorded': (event, at) => {
      for (const p of event.postings) {
        const account = this.get(p.accountId);
        if (account === undefined) throw new Error(`no account ${p.accountId}`);
        const balance = account.balance + p.balance;
        const inflow = account.inflow + p.inflow;
        const outflow = account.outflow + p.outflow;
        assertBalance(account, balance, inflow, outflow);
        this.#store(moved(account, balance, inflow, outflow, at));
      }
    },
  };

  #putAll(accounts: readonly InternalAccount[]): void {
    for (let i = 0; i < accounts.length; i++) this.restore(accounts[i]!);
  }

  restore(account: InternalAccount): void {
    // A derived account that money moved through is listed through its customer.
    if (this.#store(account)) return;
    bucket(this.#byEnv, account.envId).insert(account.id);
    bucket(this.#byOwner, account.customerId === '' ? account.envId : account.customerId).insert(account.id);
  }

  /** Stores a new or changed record (a derived account's first); true when it is a derived account. */
  #store(account: InternalAccount): boolean {
    const added = account.inflow - (this.#accounts.get(account.id)?.inflow ?? 0);
    if (added !== 0) {
      const key = `${account.envId} ${account.currency}`;
      this.#inflowIn.set(key, (this.#inflowIn.get(key) ?? 0) + added);
    }
    this.#accounts.set(account.id, account);
    if (!isDerivedId(account.id, account.customerId)) return false;
    this.#materialised.add(account.customerId);
    return true;
  }

  /**
   * No negative or unsafe balances or flows; per environment and currency (CONTRACT.md "Money"):
   * sum(balances) + in transit + fees = inflow - outflow. Derived accounts not yet stored
   * hold 0 with no flows, so the stored records are all there is to add.
   */
  checkInvariants(lookup: RecordLookup): string[] {
    const problems: string[] = [];
    const flows = new Map<string, { balance: number; net: number }>();
    for (const a of this.#accounts.values()) {
      if (!isAmount(a.balance)) problems.push(`${a.id} has balance ${a.balance}`);
      if (!isAmount(a.inflow) || !isAmount(a.outflow)) problems.push(`${a.id} has flows ${a.inflow}/${a.outflow}`);
      if (!lookup.has(a.envId)) problems.push(`${a.id} belongs to unknown environment ${a.envId}`);
      if (a.customerId !== '' && !lookup.has(a.customerId)) problems.push(`${a.id} belongs to unknown customer ${a.customerId}`);
      const key = `${a.envId} ${a.currency}`;
      const f = flows.get(key) ?? { balance: 0, net: 0 };
      f.balance += a.balance;
      f.net += a.inflow - a.outflow;
      flows.set(key, f);
    }
    for (const t of this.ledger.all()) {
      const key = `${t.envId} ${t.currency}`;
      const f = flows.get(key) ?? { balance: 0, net: 0 };
      f.balance += t.inTransit + t.fees;
      f.net += t.inflow - t.outflow;
      flows.set(key, f);
    }
    for (const [key, f] of flows) {
      if (f.balance !== f.net) problems.push(`${key}: balances + in transit + fees sum to ${f.balance} but inflow minus outflow is ${f.net}`);
    }
    return problems;
  }

  get(id: string): InternalAccount | undefined {
    return this.#accounts.get(id) ?? this.#derived(id);
  }

  /** The account `id` without the holding check: for rendering a version of it that another record derives (a webhook step's). */
  peek(id: string): InternalAccount | undefined {
    return this.#accounts.peek(id) ?? this.#derived(id);
  }

  /** The inflow of the environment's accounts of `currency`, added up. */
  inflowIn(envId: string, currency: string): number {
    return this.#inflowIn.get(`${envId} ${currency}`) ?? 0;
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  /**
   * What listings filter on: the owner ('' for the platform), currency and type of an
   * account, without building a derived account's full record (its funding reference is
   * the costly part of that); `get` gives the record of what is shown.
   */
  summary(id: string): AccountSummary | undefined {
    const stored = this.#accounts.get(id);
    if (stored !== undefined) return stored;
    const derived = this.#provisioning(id);
    return derived === undefined ? undefined : { customerId: derived.customer.id, currency: derived.currency, type: accountTypeFor(derived.currency, true) };
  }

  #derived(id: string): InternalAccount | undefined {
    const derived = this.#provisioning(id);
    return derived === undefined ? undefined : derivedAccount(derived.customer, derived.index, derived.currency);
  }

  /** The customer and provisioned currency a derived account id stands for, if it does. */
  #provisioning(id: string): { customer: AccountOwner; index: number; currency: string } | undefined {
    const derived = derivedFrom(id);
    if (derived === undefined) return undefined;
    const { index } = derived;
    const customer = this.customers.accountOwner(derived.customerId);
    const currency = customer?.provisioned?.[index];
    return currency === undefined ? undefined : { customer: customer!, index, currency };
  }

  /** An account of `envId`, or undefined: accounts of other environments do not exist for it. */
  inEnv(envId: string, id: string): InternalAccount | undefined {
    const a = this.get(id);
    return a?.envId === envId ? a : undefined;
  }

  /**
   * Every account of the environment, ascending, with its summary: each customer's derived
   * accounts (its provisioned currencies, in the customers' order) merged with the stored
   * ones, visited without building a list of them all.
   */
  idsIn(envId: string): IdWalk<AccountSummary> {
    const stored = this.#byEnv.get(envId)?.ids ?? [];
    const customerIds = this.customers.idsIn(envId);
    return { walk: (order, visit) => this.#walk(stored, customerIds, order === 'asc' ? 1 : -1, visit) };
  }

  #walk(stored: readonly string[], customerIds: readonly string[], step: 1 | -1, visit: (id: string, summary: AccountSummary) => void): void {
    let s = step === 1 ? 0 : stored.length - 1;
    for (let c = step === 1 ? 0 : customerIds.length - 1; c >= 0 && c < customerIds.length; c += step) {
      const customerId = customerIds[c]!;
      const provisioned = this.customers.accountOwner(customerId)!.provisioned;
      if (provisioned === undefined) continue;
      // Only a customer with a materialised account needs its derived ids looked up.
      const materialised = this.#materialised.has(customerId);
      const base = derivedAccountBase(customerId);
      for (let j = 0; j < provisioned.length; j++) {
        const index = step === 1 ? j : provisioned.length - 1 - j;
        const id = derivedAccountIdAt(base, index);
        while (s >= 0 && s < stored.length && (step === 1 ? stored[s]! < id : stored[s]! > id)) {
          visit(stored[s]!, this.#accounts.get(stored[s]!)!);
          s += step;
        }
        const currency = provisioned[index]!;
        visit(id, (materialised ? this.#accounts.get(id) : undefined) ?? { customerId, currency, type: accountTypeFor(currency, true) });
      }
    }
    for (; s >= 0 && s < stored.length; s += step) visit(stored[s]!, this.#accounts.get(stored[s]!)!);
  }

  /** The accounts of a customer (derived and stored, ascending), or (given an environment id) the platform's own. */
  idsOwnedBy(ownerId: string): readonly string[] {
    const stored = this.#byOwner.get(ownerId)?.ids ?? [];
    const provisioned = this.customers.accountOwner(ownerId)?.provisioned;
    if (provisioned === undefined || provisioned.length === 0) return stored;
    const derived = provisioned.map((_, i) => derivedAccountId(ownerId, i));
    return stored.length === 0 ? derived : [...derived, ...stored].sort();
  }

  /**
   * The currencies the owner (a customer, or given an environment id the platform) has an
   * account in: what a new currency is provisioned against. A decision reading them holds
   * those accounts (`idsOwnedBy`).
   */
  currenciesOwnedBy(ownerId: string): Set<string> {
    const currencies = new Set<string>();
    for (const id of this.idsOwnedBy(ownerId)) currencies.add(this.summary(id)!.currency);
    return currencies;
  }
}

export interface InternalAccountView {
  id: string;
  type: InternalAccountType;
  /**
   * Always ACTIVE: the service has no closed or frozen accounts (the vendor's clients read
   * it). Absent only in ACCOUNT_STATUS events recorded before it was shown.
   */
  status?: 'ACTIVE';
  balance: { amount: number; currency: Currency };
  /** The same as `balance`: the service holds no pending or held funds apart from it. Absent as `status` is. */
  totalBalance?: { amount: number; currency: Currency };
  fundingPaymentInstructions: FundingInstruction[];
  customerId: string;
  /** EMBEDDED_WALLET accounts only. */
  privateEnabled?: boolean;
  createdAt: string;
  updatedAt: string;
}

export function renderInternalAccount(account: InternalAccount): InternalAccountView {
  const view: InternalAccountView = {
    id: account.id,
    type: account.type,
    status: 'ACTIVE',
    balance: { amount: account.balance, currency: currencyObject(account.currency) },
    totalBalance: { amount: account.balance, currency: currencyObject(account.currency) },
    fundingPaymentInstructions: fundingInstructions(account),
    customerId: account.customerId,
    createdAt: isoTime(account.createdAt),
    updatedAt: isoTime(account.updatedAt),
  };
  if (account.type === 'EMBEDDED_WALLET') view.privateEnabled = account.privateEnabled ?? false;
  return view;
}

function fundingInstructions(account: InternalAccount): FundingInstruction[] {
  const pool = POOL_ACCOUNT[account.currency];
  const reference = account.fundingReference;
  if (pool === undefined || reference === undefined) return [];
  return [
    {
      accountOrWalletInfo: { ...pool, reference },
      instructionsNotes: `Send ${account.currency} to this account and include the reference ${reference} so the funds reach this account.`,
      isPlatformAccount: account.customerId === '',
    },
  ];
}
