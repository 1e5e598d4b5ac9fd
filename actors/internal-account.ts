// Internal account actor: a balance in one currency, owned by a customer or by the
// platform. Embedded wallets are internal accounts of type EMBEDDED_WALLET.
//
// Money is an integer count of the currency's smallest unit and stays a safe integer.
// `inflow` and `outflow` count what entered and left the service through this account
// (funding, payouts); transfers between accounts move balance without touching them, so
// per environment and currency the balances, plus the money in transit and the fees taken
// (the ledger totals, actors/ledger.ts), always sum to inflow minus outflow.
import { newId } from '../src/engine/ids.js';
import type { CustomerEvent } from './customer.js';
import type { Ledger } from './ledger.js';
import { currencyObject, isCrypto, type Currency } from './reference.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type RecordLookup, type SortedIds } from './registry.js';
import type { PaymentRecorded } from './transaction.js';

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
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type InternalAccountEvent =
  /**
   * Sandbox funding as logged before it recorded a transaction (now a `payment.recorded`,
   * decideSandboxFund in actors/payment.ts); applied so that older logs still replay.
   */
  | { type: 'account.funded'; accountId: string; amount: number }
  /** The platform's own accounts, one per supported currency; made under the environment actor. */
  | { type: 'platform.accounts.created'; accounts: InternalAccount[] };

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
  const id = newId('InternalAccount', at);
  const type = accountTypeFor(currency, customerId !== '');
  const account: { -readonly [K in keyof InternalAccount]: InternalAccount[K] } = {
    id,
    envId,
    customerId,
    type,
    currency,
    balance: 0,
    inflow: 0,
    outflow: 0,
    createdAt: at,
    updatedAt: at,
  };
  if (type === 'INTERNAL_FIAT' && POOL_ACCOUNT[currency] !== undefined) account.fundingReference = fundingReference(id);
  return account;
}

/** One account per currency. */
export function provisionAccounts(envId: string, customerId: string, currencies: readonly string[], at: number): InternalAccount[] {
  return currencies.map((currency) => provisionAccount(envId, customerId, currency, at));
}

const BASE32 = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/**
 * `UMA` and the 128 bits of the account's UUID in base32 (26 characters). The reference is
 * unique because the id is, in every environment of every platform at once (the pooled
 * account is shared), so no store-wide index and no actor is needed to hand one out, and
 * a deposit's reference names the one account (actor) it is for.
 */
export function fundingReference(id: string): string {
  const hex = id.slice(id.indexOf(':') + 1).replaceAll('-', '');
  let out = 'UMA';
  let bits = 0;
  let pending = 0;
  for (let i = 0; i < hex.length; i++) {
    const c = hex.charCodeAt(i);
    pending = (pending << 4) | (c <= 57 ? c - 48 : c - 87); // lower-case hex digit
    bits += 4;
    if (bits >= 5) {
      bits -= 5;
      out += BASE32[(pending >>> bits) & 31];
      pending &= (1 << bits) - 1;
    }
  }
  return bits > 0 ? out + BASE32[(pending << (5 - bits)) & 31] : out;
}

function assertBalance(accountId: string, balance: number): void {
  if (!Number.isSafeInteger(balance) || balance < 0) {
    throw new Error(`balance of ${accountId} would become ${balance}`);
  }
}

/**
 * The internal accounts, and the ledger invariant. Each account is an actor; the index by
 * owner (a customer, or the environment for the platform's accounts) changes only under
 * that owner's actor, which creates the accounts. The per-environment list only serves
 * listings; no decision reads it.
 */
export class InternalAccounts implements RecordKind<InternalAccount, InternalAccountEvent | CustomerEvent | PaymentRecorded> {
  readonly idPrefix = 'InternalAccount:';
  readonly #accounts = new RecordMap<InternalAccount>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #byOwner = new Map<string, SortedIds>();
  readonly records: ReadonlyMap<string, InternalAccount> = this.#accounts;

  /** The ledger totals the invariant adds to the balances. */
  constructor(private readonly ledger: Ledger) {}

  readonly appliers: Appliers<InternalAccountEvent | CustomerEvent | PaymentRecorded> = {
    'account.funded': (event, at) => {
      const account = this.#accounts.get(event.accountId);
      if (account === undefined) throw new Error(`no account ${event.accountId}`);
      const balance = account.balance + event.amount;
      assertBalance(account.id, balance);
      this.#accounts.set(account.id, { ...account, balance, inflow: account.inflow + event.amount, updatedAt: at });
    },
    'platform.accounts.created': (event) => this.#putAll(event.accounts),
    'customer.created': (event) => this.#putAll(event.accounts),
    'customer.updated': (event) => this.#putAll(event.accounts),
    'payment.recorded': (event, at) => {
      for (const p of event.postings) {
        const account = this.#accounts.get(p.accountId);
        if (account === undefined) throw new Error(`no account ${p.accountId}`);
        const balance = account.balance + p.balance;
        assertBalance(account.id, balance);
        this.#accounts.set(account.id, { ...account, balance, inflow: account.inflow + p.inflow, outflow: account.outflow + p.outflow, updatedAt: at });
      }
    },
  };

  #putAll(accounts: readonly InternalAccount[]): void {
    for (let i = 0; i < accounts.length; i++) this.restore(accounts[i]!);
  }

  restore(account: InternalAccount): void {
    this.#accounts.set(account.id, account);
    bucket(this.#byEnv, account.envId).insert(account.id);
    bucket(this.#byOwner, account.customerId === '' ? account.envId : account.customerId).insert(account.id);
  }

  /**
   * No negative or unsafe balances; per environment and currency (CONTRACT.md "Money"):
   * sum(balances) + in transit + fees = inflow - outflow.
   */
  checkInvariants(lookup: RecordLookup): string[] {
    const problems: string[] = [];
    const flows = new Map<string, { balance: number; net: number }>();
    for (const a of this.#accounts.values()) {
      if (!Number.isSafeInteger(a.balance) || a.balance < 0) problems.push(`${a.id} has balance ${a.balance}`);
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
    return this.#accounts.get(id);
  }

  /** An account of `envId`, or undefined: accounts of other environments do not exist for it. */
  inEnv(envId: string, id: string): InternalAccount | undefined {
    const a = this.#accounts.get(id);
    return a?.envId === envId ? a : undefined;
  }

  idsIn(envId: string): readonly string[] {
    return this.#byEnv.get(envId)?.ids ?? [];
  }

  /** The accounts of a customer, or (given an environment id) the platform's own. */
  idsOwnedBy(ownerId: string): readonly string[] {
    return this.#byOwner.get(ownerId)?.ids ?? [];
  }
}

export interface InternalAccountView {
  id: string;
  type: InternalAccountType;
  balance: { amount: number; currency: Currency };
  fundingPaymentInstructions: FundingInstruction[];
  customerId: string;
  createdAt: string;
  updatedAt: string;
}

export function renderInternalAccount(account: InternalAccount): InternalAccountView {
  return {
    id: account.id,
    type: account.type,
    balance: { amount: account.balance, currency: currencyObject(account.currency) },
    fundingPaymentInstructions: fundingInstructions(account),
    customerId: account.customerId,
    createdAt: new Date(account.createdAt).toISOString(),
    updatedAt: new Date(account.updatedAt).toISOString(),
  };
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
