// Wallet export (SERVICE_SPEC 5.6, CONTRACT.md "Embedded-wallet cryptography"): the
// wallet's mnemonic, sealed to the client's key, on a signed retry that binds that key at
// step 1. The mnemonic is made on first need and only its sealed form is logged. Holds the
// wallet's account; the stamp and the bundle are prepared before it is held.
import { FactsOutdatedError, type Decision } from '../../src/engine/state-machine.js';
import { changed, walletOf, type Wallet } from '../wallet.js';
import type { InternalAccount } from '../internal-account.js';
import type { DomainCommand, DomainEvent, World } from '../world.js';
import { requireClientPublicKey, walletAccountIn } from './wallet.js';
import { acceptSignedRetry, isRetry, openSignedRequest, verifySignedRetry, type Signed, type SignedCommandInput, type SignedRequestSpec, type SignedRetryFact } from './wallet-signed-request.js';

export interface ExportWalletInput extends SignedCommandInput {
  accountId: string;
  body: { clientPublicKey: string };
}

export interface ExportedWallet {
  id: string;
  /** JSON: version, data, dataSignature, enclaveQuorumPublic */
  encryptedWalletCredentials: string;
}

/**
 * A step 2 prepared: the stamp verified, and the bundle made from the wallet's mnemonic as
 * it was then, the mnemonic made on first need (kept only sealed).
 */
interface ExportFacts {
  verified: SignedRetryFact;
  sealedMnemonic: string;
  encryptedWalletCredentials: string;
}

async function prepareExport(input: ExportWalletInput, existing: Wallet | undefined, spec: SignedRequestSpec, clientPublicKey: string, at: number): Promise<ExportFacts> {
  const { ports, env, accountId } = input;
  const verified = await verifySignedRetry(ports, env.environment, existing, input.retry, spec, at);
  const sealed = existing?.sealedMnemonic;
  const mnemonic = sealed === undefined ? ports.newMnemonic() : ports.openMnemonic(accountId, sealed);
  const sealedMnemonic = sealed ?? ports.sealMnemonic(accountId, mnemonic);
  // Production signs the bundle with the service's export key; sandbox leaves it unsigned.
  const encryptedWalletCredentials = await ports.exportBundle({ clientPublicKey, mnemonic, organizationId: accountId, signed: env.environment === 'production' });
  return { verified, sealedMnemonic, encryptedWalletCredentials };
}

/**
 * The export on the held wallet. Its bundle holds the mnemonic the wallet keeps: one made
 * for it is kept now, unless another export kept one first, whose mnemonic this one then
 * prepares again.
 */
function exportOnceSigned(input: ExportWalletInput, existing: Wallet | undefined, spec: SignedRequestSpec, facts: ExportFacts, at: number): Decision<DomainEvent, Signed<ExportedWallet>> {
  const accepted = acceptSignedRetry(input.ports, existing, input.retry, spec, facts.verified, at);
  const kept = accepted.wallet.sealedMnemonic;
  if (kept !== undefined && kept !== facts.sealedMnemonic) throw new FactsOutdatedError('wallet.export');
  const wallet = { ...accepted.wallet, sealedMnemonic: facts.sealedMnemonic };
  return { events: [changed(wallet, at)], reply: () => ({ done: { id: input.accountId, encryptedWalletCredentials: facts.encryptedWalletCredentials } }) };
}

/** The account an export names, its client's key (400 unless uncompressed P-256), the wallet as it is and the signed request. */
function exporting(input: ExportWalletInput, world: World): { account: InternalAccount; clientPublicKey: string; existing: Wallet | undefined; spec: SignedRequestSpec } {
  const account = walletAccountIn(world, input.env.id, input.accountId, 'id');
  const clientPublicKey = requireClientPublicKey(input.ports, input.body.clientPublicKey);
  const spec: SignedRequestSpec = { action: 'EXPORT_WALLET', method: 'POST', path: input.path, body: input.body, clientPublicKey: clientPublicKey.toLowerCase() };
  return { account, clientPublicKey, existing: world.wallets.ofAccount(account.id), spec };
}

/** POST /internal-accounts/{id}/export: 202, then 200 on the signed retry. */
export const exportWallet: DomainCommand<ExportWalletInput, Signed<ExportedWallet>, ExportFacts | undefined> = {
  name: 'wallet.export',
  prepare: async (input, world, at) => {
    if (!isRetry(input.retry)) return undefined;
    const { clientPublicKey, existing, spec } = exporting(input, world);
    return prepareExport(input, existing, spec, clientPublicKey, at);
  },
  actors: ({ env, accountId }, world) => [walletAccountIn(world, env.id, accountId, 'id').id],
  decide: (input, world, at, facts) => {
    const { account, existing, spec } = exporting(input, world);
    if (facts !== undefined) return exportOnceSigned(input, existing, spec, facts, at);
    return openSignedRequest(input.ports, walletOf(existing, account, at), spec, at);
  },
};
