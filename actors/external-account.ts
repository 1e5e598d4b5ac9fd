// External accounts: bank accounts and wallets outside the service that money is paid to
// or pulled from. They are records owned by an actor, not actors: a customer's accounts
// change only while the customer's actor is held, the platform's while its environment's is. That
// is what keeps "at most one default UMA deposit account per customer" a local decision.
import { newId } from '../src/engine/ids.js';
import type { AccountInfo } from './account-info.js';
import { DomainError, invalidField, invalidInput } from './errors.js';
import { beneficiaryVerification, checkAccountSemantics, type BeneficiaryVerificationStatus } from './identifiers.js';
import type { Environment } from './platform.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';
import { isoTime } from './iso-time.js';

export type ExternalAccountStatus = 'PENDING' | 'ACTIVE' | 'UNDER_REVIEW' | 'INACTIVE';
export interface ExternalAccount {
  readonly id: string;
  readonly envId: string;
  /** null when the account belongs to the platform */
  readonly customerId: string | null;
  readonly status: ExternalAccountStatus;
  readonly currency: string;
  readonly accountInfo: AccountInfo;
  readonly platformAccountId?: string;
  readonly defaultUmaDepositAccount: boolean;
  readonly beneficiaryVerificationStatus: BeneficiaryVerificationStatus;
  readonly beneficiaryVerifiedData?: { fullName: string };
  readonly cryptoNetwork?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /**
   * Set by DELETE. The record stays, so payouts already under way settle as before and a
   * request naming it can be told it was removed; reads, lists and new payments treat it
   * as gone.
   */
  readonly deletedAt?: number;
}

export interface ExternalAccountCreated {
  type: 'externalAccount.created';
  account: ExternalAccount;
  /** The customer's previous default UMA deposit account, which stops being the default. */
  replacesDefault?: string;
}
export type ExternalAccountEvent = ExternalAccountCreated | { type: 'externalAccount.deleted'; id: string };

export interface ExternalAccountInput {
  currency: string;
  accountInfo: AccountInfo;
  customerId?: string;
  platformAccountId?: string;
  defaultUmaDepositAccount?: boolean;
  cryptoNetwork?: string;
}

export function decideCreateExternalAccount(
  envId: string,
  environment: Environment,
  input: ExternalAccountInput,
  currentDefault: ExternalAccount | undefined,
  at: number,
): ExternalAccountCreated[] {
  const problems = checkAccountSemantics(input.accountInfo, input.currency, input.cryptoNetwork);
  if (problems.length > 0) throw invalidInput(problems);
  const customerId = input.customerId ?? null;
  if (customerId === null && input.defaultUmaDepositAccount === true) {
    throw invalidInput([{ field: 'defaultUmaDepositAccount', message: 'only a customer account can be a default UMA deposit account' }]);
  }
  const verification = beneficiaryVerification(input.accountInfo, environment);
  if ('fail' in verification) {
    if (verification.fail === 400) {
      throw new DomainError('INVALID_ACCOUNT', verification.message, [{ field: 'accountInfo', message: verification.message }]);
    }
    throw new DomainError('SIMULATED_ERROR', verification.message);
  }
  const platformAccountId = input.platformAccountId ?? platformAccountIdInside(input.accountInfo);
  const account: ExternalAccount = {
    id: newId('ExternalAccount', at),
    envId,
    customerId,
    status: 'ACTIVE',
    currency: input.currency,
    accountInfo: input.accountInfo,
    ...(platformAccountId !== undefined ? { platformAccountId } : {}),
    defaultUmaDepositAccount: input.defaultUmaDepositAccount === true,
    beneficiaryVerificationStatus: verification.status,
    ...(verification.verifiedData !== undefined ? { beneficiaryVerifiedData: verification.verifiedData } : {}),
    ...(input.cryptoNetwork !== undefined ? { cryptoNetwork: input.cryptoNetwork } : {}),
    createdAt: at,
    updatedAt: at,
  };
  const event: ExternalAccountCreated = { type: 'externalAccount.created', account };
  if (account.defaultUmaDepositAccount && currentDefault !== undefined) event.replacesDefault = currentDefault.id;
  return [event];
}

export function decideDeleteExternalAccount(account: ExternalAccount): ExternalAccountEvent[] {
  return [{ type: 'externalAccount.deleted', id: account.id }];
}

/**
 * An account a new payment may name as `field`: a deleted one is refused with a 400
 * naming the field (it was there, so a 404 would mislead).
 */
export function assertNotDeleted(account: ExternalAccount, field: string): void {
  if (account.deletedAt !== undefined) throw invalidField(field, `the external account ${account.id} was deleted`);
}

/** Some clients put platformAccountId inside accountInfo (SERVICE_SPEC part 4). */
function platformAccountIdInside(info: AccountInfo): string | undefined {
  return 'platformAccountId' in info && typeof info.platformAccountId === 'string' ? info.platformAccountId : undefined;
}

export interface ExternalAccountView {
  id: string;
  status: ExternalAccountStatus;
  currency: string;
  accountInfo: AccountInfo;
  customerId: string | null;
  platformAccountId?: string;
  defaultUmaDepositAccount: boolean;
  beneficiaryVerificationStatus: BeneficiaryVerificationStatus;
  beneficiaryVerifiedData?: { fullName: string };
  cryptoNetwork?: string;
  createdAt: string;
  updatedAt: string;
}

export function renderExternalAccount(a: ExternalAccount): ExternalAccountView {
  const view: ExternalAccountView = {
    id: a.id,
    status: a.status,
    currency: a.currency,
    accountInfo: a.accountInfo,
    customerId: a.customerId,
    defaultUmaDepositAccount: a.defaultUmaDepositAccount,
    beneficiaryVerificationStatus: a.beneficiaryVerificationStatus,
    createdAt: isoTime(a.createdAt),
    updatedAt: isoTime(a.updatedAt),
  };
  if (a.platformAccountId !== undefined) view.platformAccountId = a.platformAccountId;
  if (a.beneficiaryVerifiedData !== undefined) view.beneficiaryVerifiedData = { ...a.beneficiaryVerifiedData };
  if (a.cryptoNetwork !== undefined) view.cryptoNetwork = a.cryptoNetwork;
  return view;
}

/**
 * The external accounts. A customer's default UMA deposit account is the customer actor's
 * state (read by decisions that hold the customer); the lists per environment and per
 * customer only serve listings.
 */
export class ExternalAccounts implements RecordKind<ExternalAccount, ExternalAccountEvent> {
  readonly idPrefix = 'ExternalAccount:';
  /** A customer's external accounts are the customer's records, the platform's the environment's. */
  actorOf(account: ExternalAccount): string {
    return account.customerId ?? account.envId;
  }
  readonly #accounts = new RecordMap<ExternalAccount>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly #byCustomer = new Map<string, SortedIds>();
  readonly #defaultDeposit = new Map<string, string>();
  readonly records: ReadonlyMap<string, ExternalAccount> = this.#accounts;

  readonly appliers: Appliers<ExternalAccountEvent> = {
    'externalAccount.created': (event, at) => {
      if (event.replacesDefault !== undefined) {
        const old = this.#accounts.get(event.replacesDefault);
        if (old !== undefined) this.#accounts.set(old.id, { ...old, defaultUmaDepositAccount: false, updatedAt: at });
      }
      this.restore(event.account);
    },
    'externalAccount.deleted': (event, at) => {
      const account = this.#accounts.get(event.id)!;
      this.#accounts.set(account.id, { ...account, deletedAt: at, updatedAt: at });
      this.#byEnv.get(account.envId)?.remove(account.id);
      if (account.customerId !== null) {
        this.#byCustomer.get(account.customerId)?.remove(account.id);
        if (this.#defaultDeposit.get(account.customerId) === account.id) this.#defaultDeposit.delete(account.customerId);
      }
    },
  };

  restore(account: ExternalAccount): void {
    this.#accounts.set(account.id, account);
    if (account.deletedAt !== undefined) return;
    bucket(this.#byEnv, account.envId).insert(account.id);
    if (account.customerId !== null) {
      bucket(this.#byCustomer, account.customerId).insert(account.id);
      if (account.defaultUmaDepositAccount) this.#defaultDeposit.set(account.customerId, account.id);
    }
  }

  /** At most one default UMA deposit account per customer. */
  checkInvariants(): string[] {
    const defaults = new Map<string, number>();
    for (const e of this.#accounts.values()) {
      if (e.customerId !== null && e.defaultUmaDepositAccount && e.deletedAt === undefined) defaults.set(e.customerId, (defaults.get(e.customerId) ?? 0) + 1);
    }
    const problems: string[] = [];
    for (const [customerId, n] of defaults) if (n > 1) problems.push(`${customerId} has ${n} default UMA deposit accounts`);
    return problems;
  }

  /** Deleted accounts included: see ExternalAccount.deletedAt. */
  get(id: string): ExternalAccount | undefined {
    return this.#accounts.get(id);
  }

  /** The environment's accounts, or one customer's; deleted ones are not listed. */
  idsIn(envId: string, customerId?: string): readonly string[] {
    if (customerId !== undefined) return this.#byCustomer.get(customerId)?.ids ?? [];
    return this.#byEnv.get(envId)?.ids ?? [];
  }

  defaultDepositAccount(customerId: string): ExternalAccount | undefined {
    const id = this.#defaultDeposit.get(customerId);
    const account = id === undefined ? undefined : this.#accounts.get(id);
    return account?.defaultUmaDepositAccount === true && account.deletedAt === undefined ? account : undefined;
  }
}
