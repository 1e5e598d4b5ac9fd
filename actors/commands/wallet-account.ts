// PATCH /internal-accounts/{id} (the vendor's updateInternalAccount): an embedded wallet's
// own settings, today its privacy (`privateEnabled`), changed only on a signed retry as
// every other wallet-authorised request is (wallet-signed-request.ts). Step 1 binds the
// update (its body's hash) into the payload to sign; the retry repeats it, stamped by a live
// session of the wallet, and the account changes in the entry that uses up the request.
// Holds the wallet's account.
import type { Decision } from '../../src/engine/state-machine.js';
import { invalidField } from '../errors.js';
import type { InternalAccount } from '../internal-account.js';
import { changed, walletOf } from '../wallet.js';
import type { DomainCommand, DomainEvent, World } from '../world.js';
import { walletAccountIn } from './wallet.js';
import { acceptSignedRetry, openSignedRequest, prepareSignedStep, type Signed, type SignedCommandInput, type SignedStep, type SignedTarget } from './wallet-signed-request.js';

/** The fields an update may change; at least one. */
export interface WalletAccountUpdate {
  privateEnabled?: boolean;
}

export interface UpdateWalletAccountInput extends SignedCommandInput {
  accountId: string;
  body: WalletAccountUpdate;
}

/** The EMBEDDED_WALLET account an update names (404, or 400 for another type), and the signed request that authorises it. */
function updating(input: UpdateWalletAccountInput, world: World, at: number): SignedTarget & { account: InternalAccount; privateEnabled: boolean } {
  const account = walletAccountIn(world, input.env.id, input.accountId, 'id');
  const privateEnabled = input.body.privateEnabled;
  if (privateEnabled === undefined) throw invalidField('privateEnabled', 'an update needs at least one field to change');
  const wallet = walletOf(world.wallets.ofAccount(account.id), account, at);
  return { account, privateEnabled, wallet, spec: { action: 'UPDATE_ACCOUNT', method: 'PATCH', path: input.path, body: input.body } };
}

/** PATCH /internal-accounts/{id}: 202 with the payload to sign, then 200 with the account updated on the signed retry. */
export const updateWalletAccount: DomainCommand<UpdateWalletAccountInput, Signed<InternalAccount>, SignedStep> = {
  name: 'wallet.account.update',
  prepare: (input, world, at) => prepareSignedStep(input, updating(input, world, at), at),
  actors: ({ env, accountId }, world) => [walletAccountIn(world, env.id, accountId, 'id').id],
  decide: (input, world, at, prepared): Decision<DomainEvent, Signed<InternalAccount>> => {
    const target = updating(input, world, at);
    if (prepared.step === 'open') return openSignedRequest(input.ports, target.wallet, target.spec, at);
    const accepted = acceptSignedRetry(input.ports, target.wallet, input.retry, target.spec, prepared.verified, at);
    const accountId = target.account.id;
    return {
      events: [changed(accepted.wallet, at), { type: 'account.privacy.set', accountId, privateEnabled: target.privateEnabled }],
      reply: () => ({ done: world.internalAccounts.get(accountId)! }),
    };
  },
};
