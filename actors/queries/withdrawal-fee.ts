// POST /crypto/estimate-withdrawal-fee (CONTRACT.md "Today's clients, second wave"): what a
// withdrawal from a crypto internal account to a blockchain address would cost, priced by
// the function that prices quotes (fx.ts priceTransfer), so the estimate is what a quote of
// the same amount to a wallet on that network charges. A read: nothing is logged.
import { priceTransfer } from '../fx.js';
import { ACCOUNT_CURRENCIES, checkAccountSemantics, WALLET_NETWORKS, type CryptoNetwork, type WalletType } from '../identifiers.js';
import { CURRENCIES, isCrypto } from '../reference.js';
import { invalidField, invalidInput, type FieldProblem } from '../errors.js';
import { internalAccountIn } from '../commands/accounts.js';
import type { DomainQuery } from '../world.js';

export interface WithdrawalFeeInput {
  envId: string;
  internalAccountId: string;
  currency: string;
  /** A network family (`SOLANA`, the vendor's words) or one network (`SOLANA_DEVNET`, as external accounts name it). */
  cryptoNetwork: string;
  /** Smallest units of `currency`, fees included: what leaves the account. */
  amount: number;
  destinationAddress: string;
}

/** The vendor's EstimateCryptoWithdrawalFeeResponse. */
export interface WithdrawalFeeEstimate {
  /** 0: the service pays no network fee of its own; its fees are the quote's. */
  networkFee: number;
  networkFeeAsset: string;
  applicationFee: number;
  totalFee: number;
  netAmount: number;
}

/** The asset each wallet's chain charges its network fee in: a property of the chain, not a price. */
const NETWORK_FEE_ASSET: Readonly<Record<WalletType, string>> = {
  SOLANA_WALLET: 'SOL',
  ETHEREUM_WALLET: 'ETH',
  BASE_WALLET: 'ETH',
  SPARK_WALLET: 'BTC',
  LIGHTNING: 'BTC',
};

/** A network's family: SOLANA of SOLANA_MAINNET and SOLANA_DEVNET. */
function familyOf(network: CryptoNetwork): string {
  return network.slice(0, network.lastIndexOf('_'));
}

const WALLETS = Object.entries(WALLET_NETWORKS) as Array<[WalletType, readonly CryptoNetwork[]]>;
const NETWORK_NAMES = [...new Set(WALLETS.flatMap(([, networks]) => networks.map(familyOf)))];

/** The wallet a withdrawal on `name` pays to, and the networks `name` may mean; undefined when no wallet of the service is on it. */
function walletOn(name: string): { type: WalletType; networks: readonly CryptoNetwork[] } | undefined {
  for (const [type, networks] of WALLETS) {
    const exact = networks.find((network) => network === name);
    if (exact !== undefined) return { type, networks: [exact] };
    if (networks.some((network) => familyOf(network) === name)) return { type, networks };
  }
  return undefined;
}

/**
 * The destination's problems, as the estimate's fields: none when the address is valid on
 * one of the networks the request may mean (a family names mainnet and testnet both).
 */
function addressProblems(type: WalletType, networks: readonly CryptoNetwork[], currency: string, address: string): FieldProblem[] {
  let first: FieldProblem[] = [];
  for (const network of networks) {
    const problems = checkAccountSemantics({ accountType: type, address }, currency, network);
    if (problems.length === 0) return [];
    if (first.length === 0) first = problems;
  }
  return first.map((problem) => ({ ...problem, field: 'destinationAddress' }));
}

/**
 * The estimate, or the 404 of an unknown account (naming internalAccountId) and 400s naming
 * the field: an account that holds no crypto, a currency it does not hold, a network no
 * wallet of the service is on or that does not carry the currency, an address not valid there.
 */
export const withdrawalFee: DomainQuery<WithdrawalFeeInput, WithdrawalFeeEstimate> = (input, world) => {
  const account = internalAccountIn(world, input.envId, input.internalAccountId, 'internalAccountId');
  if (!isCrypto(account.currency)) throw invalidField('internalAccountId', `${account.id} holds ${account.currency}: withdrawals to a blockchain address are from a crypto account`);
  if (!CURRENCIES.has(input.currency)) throw invalidField('currency', `${input.currency} is not a supported currency`);
  if (input.currency !== account.currency) throw invalidField('currency', `${account.id} holds ${account.currency}, not ${input.currency}`);
  const wallet = walletOn(input.cryptoNetwork);
  if (wallet === undefined) throw invalidField('cryptoNetwork', `must be one of ${NETWORK_NAMES.join(', ')}, or one of their networks (${WALLETS.flatMap(([, n]) => n).join(', ')})`);
  const carried = ACCOUNT_CURRENCIES[wallet.type];
  if (!carried.includes(input.currency)) throw invalidField('cryptoNetwork', `${input.cryptoNetwork} carries ${carried.join(' and ')}, not ${input.currency}`);
  const problems = addressProblems(wallet.type, wallet.networks, input.currency, input.destinationAddress);
  if (problems.length > 0) throw invalidInput(problems);
  const price = priceTransfer(account.currency, input.currency, 'SENDING', input.amount);
  return {
    networkFee: 0,
    networkFeeAsset: NETWORK_FEE_ASSET[wallet.type],
    applicationFee: price.feesIncluded,
    totalFee: price.feesIncluded,
    netAmount: price.totalReceivingAmount,
  };
};
