// The wallet stamp check for decisions outside the wallet's own commands (quote execution):
// the check itself is actors/commands/wallet-signed-request.ts, reached here with the
// service's WalletPorts.
import type { Environment } from '../../actors/platform.js';
import { checkWalletStamp, type WalletSigner } from '../../actors/commands/wallet-signed-request.js';
import type { Services } from '../services.js';
import { ServiceWalletPorts } from './ports.js';

/**
 * Verifies a `Service-Wallet-Signature` over `payload` (the service's own copy) against
 * the live sessions of the embedded wallet `accountId` at `at`; throws 401 with the failed
 * check as `reason`. Call it inside a decision holding `accountId` (quote execution does,
 * with the quote's payloadToSign), so no revocation or expiry can slip in between; the
 * wallet is read before the first await, in the caller's synchronous part when it has
 * awaited nothing yet.
 */
export function verifyWalletStamp(
  services: Services,
  environment: Environment,
  accountId: string,
  header: string | undefined,
  payload: string,
  at: number,
): Promise<WalletSigner> {
  const wallet = services.world.wallets.ofAccount(accountId);
  return checkWalletStamp(new ServiceWalletPorts(services), environment, wallet, header, payload, at);
}
