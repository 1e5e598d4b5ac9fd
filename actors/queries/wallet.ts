// Reads of an embedded wallet: its credentials, and its live sessions.
import { isSessionLive, renderAuthMethod, renderSession, type AuthMethodView, type SessionView } from '../wallet.js';
import { walletAccountIn } from '../commands/wallet.js';
import type { DomainQuery } from '../world.js';

/** The wallet's credentials (none before its first); the account must be an EMBEDDED_WALLET of the environment. */
export const walletCredentials: DomainQuery<{ envId: string; accountId: string }, AuthMethodView[]> = ({ envId, accountId }, world) => {
  const wallet = world.wallets.ofAccount(walletAccountIn(world, envId, accountId).id);
  return wallet === undefined ? [] : wallet.credentials.map((c) => renderAuthMethod(wallet, c));
};

/** The wallet's sessions live at `at`: one past its expiry is gone from the list before its timer ends it. */
export const liveWalletSessions: DomainQuery<{ envId: string; accountId: string }, SessionView[]> = ({ envId, accountId }, world, at) => {
  const wallet = world.wallets.ofAccount(walletAccountIn(world, envId, accountId).id);
  return wallet === undefined ? [] : wallet.sessions.filter((s) => isSessionLive(s, at)).map((s) => renderSession(wallet, s));
};
