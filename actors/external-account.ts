// External accounts: bank accounts and wallets outside the service that money is paid to
// or pulled from. They are records owned by an actor, not actors: a customer's accounts
// change only under the customer's mailbox, the platform's under its environment's. That
// is what keeps "at most one default UMA deposit account per customer" a local decision.
import { newId } from '../src/engine/ids.js';
import type { AccountInfo } from './account-info.js';
import { DomainError, invalidInput } from './errors.js';
import { beneficiaryVerification, checkAccountSemantics, type BeneficiaryVerificationStatus } from './identifiers.js';
import type { Environment } from './platform.js';

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
}

export type ExternalAccountEvent = {
  type: 'externalAccount.created';
  account: ExternalAccount;
  /** The customer's previous default UMA deposit account, which stops being the default. */
  replacesDefault?: string;
};

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
): ExternalAccountEvent[] {
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
  const event: ExternalAccountEvent = { type: 'externalAccount.created', account };
  if (account.defaultUmaDepositAccount && currentDefault !== undefined) event.replacesDefault = currentDefault.id;
  return [event];
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
    createdAt: new Date(a.createdAt).toISOString(),
    updatedAt: new Date(a.updatedAt).toISOString(),
  };
  if (a.platformAccountId !== undefined) view.platformAccountId = a.platformAccountId;
  if (a.beneficiaryVerifiedData !== undefined) view.beneficiaryVerifiedData = { ...a.beneficiaryVerifiedData };
  if (a.cryptoNetwork !== undefined) view.cryptoNetwork = a.cryptoNetwork;
  return view;
}
