// Wallet export (SERVICE_SPEC 5.6, CONTRACT.md "Embedded-wallet cryptography"): the
// wallet's mnemonic, sealed to the client's key, on a signed retry that binds that key at
// step 1. The mnemonic is made on first need and only its sealed form is logged. Holds the
// wallet's account.
import type { Decision } from '../../src/engine/state-machine.js';
import { changed, walletOf, type Wallet } from '../wallet.js';
import type { DomainCommand, DomainEvent } from '../world.js';
import { requireClientPublicKey, walletAccountIn, type WalletCommandInput } from './wallet.js';
import { acceptSignedRequest, isRetry, openSignedRequest, type Signed, type SignedRequestSpec, type SignedRetryHeaders } from './wallet-signed-request.js';

export interface ExportWalletInput extends WalletCommandInput {
  accountId: string;
  body: { clientPublicKey: string };
  path: string;
  retry: SignedRetryHeaders;
}

export interface ExportedWallet {
  id: string;
  /** JSON: version, data, dataSignature, enclaveQuorumPublic */
  encryptedWalletCredentials: string;
}

async function exportOnceSigned(
  input: ExportWalletInput,
  existing: Wallet | undefined,
  spec: SignedRequestSpec,
  clientPublicKey: string,
  at: number,
): Promise<Decision<DomainEvent, Signed<ExportedWallet>>> {
  const { ports, env, accountId } = input;
  const accepted = await acceptSignedRequest(ports, env.environment, existing, input.retry, spec, at);
  let wallet = accepted.wallet;
  let mnemonic: string;
  if (wallet.sealedMnemonic === undefined) {
    mnemonic = ports.newMnemonic();
    wallet = { ...wallet, sealedMnemonic: ports.sealMnemonic(accountId, mnemonic) };
  } else {
    mnemonic = ports.openMnemonic(accountId, wallet.sealedMnemonic);
  }
  // Production signs the bundle with the service's export key; sandbox leaves it unsigned.
  const encryptedWalletCredentials = await ports.exportBundle({ clientPublicKey, mnemonic, organizationId: accountId, signed: env.environment === 'production' });
  return { events: [changed(wallet, at)], reply: () => ({ done: { id: accountId, encryptedWalletCredentials } }) };
}

/** POST /internal-accounts/{id}/export: 202, then 200 on the signed retry. */
export const exportWallet: DomainCommand<ExportWalletInput, Signed<ExportedWallet>> = {
  name: 'wallet.export',
  actors: ({ env, accountId }, world) => [walletAccountIn(world, env.id, accountId, 'id').id],
  decide: (input, world, at) => {
    const account = walletAccountIn(world, input.env.id, input.accountId, 'id');
    const clientPublicKey = requireClientPublicKey(input.ports, input.body.clientPublicKey);
    const spec: SignedRequestSpec = { action: 'EXPORT_WALLET', method: 'POST', path: input.path, body: input.body, clientPublicKey: clientPublicKey.toLowerCase() };
    const existing = world.wallets.ofAccount(account.id);
    if (isRetry(input.retry)) return exportOnceSigned(input, existing, spec, clientPublicKey, at);
    return openSignedRequest(input.ports, walletOf(existing, account, at), spec, at);
  },
};
