// The accountInfo of an external account, as the domain stores and reasons about it: one
// variant per `accountType`. The HTTP schema that validates requests
// (src/http/schemas/account-info.ts) is checked at compile time to describe exactly these
// types, so the two cannot drift apart.
// Fiat bank rails that pay a named person (USD_ACCOUNT, US_ACCOUNT, CLABE, IBAN) require the
// beneficiary (CONTRACT.md, Customers and accounts); the spec lists no beneficiary for
// BRL_ACCOUNT, AED_ACCOUNT and UPI, so there it is optional.

export type BankAccountType = 'CHECKING' | 'SAVINGS';

export interface PostalAddress {
  line1: string;
  line2?: string;
  city: string;
  state?: string;
  postalCode: string;
  country: string;
}

export interface Beneficiary {
  beneficiaryType: 'INDIVIDUAL';
  fullName: string;
  birthDate?: string;
  nationality?: string;
  address?: PostalAddress;
}

export interface UsdAccountInfo {
  accountType: 'USD_ACCOUNT';
  accountNumber: string;
  routingNumber: string;
  bankAccountType?: BankAccountType;
  bankName?: string;
  platformAccountId?: string;
  beneficiary: Beneficiary;
}

export interface UsAccountInfo {
  accountType: 'US_ACCOUNT';
  accountNumber: string;
  routingNumber: string;
  accountCategory?: BankAccountType;
  bankName?: string;
  beneficiary: Beneficiary;
}

export interface BrlAccountInfo {
  accountType: 'BRL_ACCOUNT';
  pixKey: string;
  pixKeyType: 'CPF' | 'CNPJ' | 'EMAIL' | 'PHONE' | 'RANDOM';
  taxId?: string;
  beneficiary?: Beneficiary;
}

export interface AedAccountInfo {
  accountType: 'AED_ACCOUNT';
  iban: string;
  swiftCode: string;
  beneficiary?: Beneficiary;
}

export interface ClabeAccountInfo {
  accountType: 'CLABE';
  clabe: string;
  bankName?: string;
  beneficiary: Beneficiary;
}

export interface IbanAccountInfo {
  accountType: 'IBAN';
  iban: string;
  swiftCode?: string;
  bankName?: string;
  beneficiary: Beneficiary;
}

export interface UpiAccountInfo {
  accountType: 'UPI';
  vpa: string;
  beneficiary?: Beneficiary;
}

export interface WalletInfo<T extends string> {
  accountType: T;
  address: string;
}

export type AccountInfo =
  | UsdAccountInfo
  | UsAccountInfo
  | BrlAccountInfo
  | AedAccountInfo
  | ClabeAccountInfo
  | IbanAccountInfo
  | UpiAccountInfo
  | WalletInfo<'SPARK_WALLET'>
  | WalletInfo<'LIGHTNING'>
  | WalletInfo<'SOLANA_WALLET'>
  | WalletInfo<'ETHEREUM_WALLET'>
  | WalletInfo<'BASE_WALLET'>;

export type AccountType = AccountInfo['accountType'];
export type AccountInfoOf<T extends AccountType> = Extract<AccountInfo, { accountType: T }>;
