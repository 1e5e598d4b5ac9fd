// Internal account actor: a balance in one currency, owned by a customer or by the
// platform. Embedded wallets are internal accounts of type EMBEDDED_WALLET.
//
// Money is an integer count of the currency's smallest unit and stays a safe integer.
// `inflow` and `outflow` count what entered and left the service through this account
// (funding, payouts); transfers between accounts move balance without touching them, so
// per environment and currency the balances always sum to inflow minus outflow.
import { invalidField } from './errors.js';
import { newId } from '../src/engine/ids.js';
import { currencyObject, isCrypto, type Currency } from './reference.js';

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
   * one. The funding instructions are rendered from it; only it is stored and logged.
   */
  readonly fundingReference?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
}

export type InternalAccountEvent = { type: 'account.funded'; accountId: string; amount: number };

/** The largest amount one sandbox funding may add (SERVICE_SPEC part 8). */
export const MAX_FUND_AMOUNT = 1_000_000_000_000;

/** The service's pooled receiving account that funding references point into. */
const POOL_ACCOUNT: Record<string, { accountType: string; accountNumber: string; routingNumber?: string }> = {
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

/**
 * A new account record. Fiat accounts get a funding reference unique in the store;
 * `referenceTaken` lets the caller check its index.
 */
export function provisionAccount(
  envId: string,
  customerId: string,
  currency: string,
  at: number,
  referenceTaken: (reference: string) => boolean,
): InternalAccount {
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
  if (type === 'INTERNAL_FIAT' && POOL_ACCOUNT[currency] !== undefined) {
    let reference = fundingReference(id, 0);
    for (let attempt = 1; referenceTaken(reference); attempt++) reference = fundingReference(id, attempt);
    account.fundingReference = reference;
  }
  return account;
}

/** One account per currency; references handed out in the same decision count as taken. */
export function provisionAccounts(
  envId: string,
  customerId: string,
  currencies: readonly string[],
  at: number,
  referenceTaken: (reference: string) => boolean,
): InternalAccount[] {
  const fresh = new Set<string>();
  const accounts: InternalAccount[] = [];
  for (const currency of currencies) {
    const account = provisionAccount(envId, customerId, currency, at, (ref) => fresh.has(ref) || referenceTaken(ref));
    if (account.fundingReference !== undefined) fresh.add(account.fundingReference);
    accounts.push(account);
  }
  return accounts;
}

const BASE32 = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';

/** A short reference from the id's 48 random low bits; `attempt` perturbs it on a collision. */
function fundingReference(id: string, attempt: number): string {
  let n = Number.parseInt(id.slice(-12), 16) + attempt * 7919;
  let out = 'UMA';
  for (let i = 0; i < 10; i++) {
    out += BASE32[n % 32];
    n = Math.floor(n / 32);
  }
  return out;
}

export function decideFund(account: InternalAccount, amount: number): InternalAccountEvent[] {
  if (account.balance + amount > Number.MAX_SAFE_INTEGER) {
    throw invalidField('amount', `the balance would exceed ${Number.MAX_SAFE_INTEGER}`);
  }
  return [{ type: 'account.funded', accountId: account.id, amount }];
}

export function applyInternalAccountEvent(account: InternalAccount, event: InternalAccountEvent, at: number): InternalAccount {
  switch (event.type) {
    case 'account.funded': {
      const balance = account.balance + event.amount;
      assertBalance(account.id, balance);
      return { ...account, balance, inflow: account.inflow + event.amount, updatedAt: at };
    }
  }
}

export function assertBalance(accountId: string, balance: number): void {
  if (!Number.isSafeInteger(balance) || balance < 0) {
    throw new Error(`balance of ${accountId} would become ${balance}`);
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
