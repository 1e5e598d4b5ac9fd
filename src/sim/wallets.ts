// The embedded-wallet part of the simulation's workload and model: credentials, sessions,
// signed retries (a 202 naming the payload to sign, then the same request stamped by a
// session key with its Request-Id), exports, and stamps on payments from a wallet. It runs
// in sandbox, where the OTP is the magic value, but every stamp is real: the client's keys
// are drawn from the seed and the session key is the client's own (a compressed
// clientPublicKey), so the service checks each stamp with ECDSA.
//
// A wallet request has no Idempotency-Key (a Request-Id is single use), so one a crash left
// unanswered is not sent again: the wallet turns uncertain, the client lists its credentials
// and sessions and adopts what it finds, and until then the check asks less of it.
import { keyPairFromPrivateKey, isValidPrivateKey, PRIVATE_KEY_BYTES } from '../crypto/p256.js';
import { createStamp } from '../crypto/stamp.js';
import { MAX_ACTIVE_SESSIONS, SANDBOX_OIDC_TOKEN, SANDBOX_OTP, type Wallets } from '../../actors/wallet.js';
import { Weights, type Rng } from './random.js';
import type { Json, Operation, SimRequest } from './operation.js';

/** A session and its key (undefined: one adopted from a listing, which the client cannot stamp with). */
interface SessionKnown {
  privateKey: Uint8Array | undefined;
  expiresAt: number;
}

/** The credential types the simulation uses: a wallet holds at most one of each. */
type SimCredentialType = 'EMAIL_OTP' | 'OAUTH';

export interface SimWallet {
  accountId: string;
  email: string;
  /** Live credentials the answers named, by id. */
  credentials: Map<string, SimCredentialType>;
  /** Sessions the answers opened and nothing revoked. */
  sessions: Map<string, SessionKnown>;
  /** Sessions whose revocation was acknowledged. */
  revoked: Set<string>;
  /** Wallet requests a crash left unanswered since the client last listed what the wallet holds. */
  uncertain: number;
  /** A request of the wallet, or a chain of them (a signed action), is under way: the client sends one at a time. */
  busy: boolean;
}

/** A stamp must not meet its session's expiry on the way: sessions this close to it are not used. */
const SESSION_MARGIN_MS = 60_000;
const WALLET_OPERATIONS = new Weights({ credential: 2, login: 3, revokeSession: 1, exportWallet: 1 });
/** Chance that a done signed request is sent again with its spent Request-Id (it must be refused). */
const REPLAY_CHANCE = 0.2;

export class WalletWorkload {
  readonly wallets = new Map<string, SimWallet>();
  readonly #rng: Rng;
  readonly #now: () => number;
  /** Follow-ups (the signed step of a 202, a replay, a listing) the workload sends next, drawn when sent. */
  readonly #next: (op: () => Operation) => void;
  /** Follow-ups queued so far: an answer that queued none leaves its wallet free. */
  #followUps = 0;

  constructor(rng: Rng, now: () => number, next: (op: () => Operation) => void) {
    this.#rng = rng;
    this.#now = now;
    this.#next = next;
  }

  addWallet(accountId: string, email: string): void {
    if (!this.wallets.has(accountId)) this.wallets.set(accountId, { accountId, email, credentials: new Map(), sessions: new Map(), revoked: new Set(), uncertain: 0, busy: false });
  }

  busy(accountId: string): boolean {
    return this.wallets.get(accountId)?.busy === true;
  }

  /** The key of a session of `wallet` that the client holds and that outlives a request. */
  liveSessionKey(wallet: SimWallet): Uint8Array | undefined {
    const now = this.#now();
    const live = [...wallet.sessions.values()].filter((s) => s.privateKey !== undefined && s.expiresAt > now + SESSION_MARGIN_MS);
    return live.length === 0 ? undefined : this.#rng.pick(live).privateKey;
  }

  /**
   * A stamp over `payload` by a live session of `wallet`, or by a key no session has (which
   * the service must refuse). An uncertain wallet stamps with no session's key until it
   * relearns: a revocation a crash left unanswered may have taken any session it knows.
   */
  stamp(wallet: SimWallet, payload: string): { header: string; valid: boolean } {
    const key = wallet.uncertain > 0 ? undefined : this.liveSessionKey(wallet);
    return key === undefined ? { header: createStamp(payload, this.#newKey()), valid: false } : { header: createStamp(payload, key), valid: true };
  }

  /** A wallet operation drawn at random, or undefined when the chosen wallet cannot take it now. */
  draw(): Operation | undefined {
    const free = [...this.wallets.values()].filter((w) => !w.busy);
    if (free.length === 0) return undefined;
    const wallet = this.#rng.pick(free);
    if (wallet.uncertain > 0) return this.#relearn(wallet);
    const now = this.#now();
    for (const [id, session] of wallet.sessions) if (session.expiresAt <= now) wallet.sessions.delete(id);
    switch (this.#rng.weighted(WALLET_OPERATIONS)) {
      case 'credential':
        return this.#addCredential(wallet);
      case 'login':
        // A full wallet refuses a new session until one expires (the expired ones are pruned above).
        return wallet.credentials.size > 0 && wallet.sessions.size < MAX_ACTIVE_SESSIONS - 1 ? this.#login(wallet, this.#rng.pick([...wallet.credentials.keys()])) : undefined;
      case 'revokeSession': {
        const sessions = [...wallet.sessions].filter(([, s]) => s.expiresAt > now + SESSION_MARGIN_MS);
        if (sessions.length === 0) return undefined;
        const [id, target] = this.#rng.pick(sessions);
        const request: SimRequest = { method: 'DELETE', path: `/auth/sessions/${id}`, auth: 'sandbox' };
        // A long step may outlast the session: its expiry timer took it, and the revocation finds nothing.
        return this.#signed(wallet, 'revoke a session', request, 204, () => this.#revoked(wallet, id), () => target.expiresAt <= this.#now());
      }
      case 'exportWallet':
        return this.#signed(wallet, 'export a wallet', { method: 'POST', path: `/internal-accounts/${wallet.accountId}/export`, body: { clientPublicKey: this.#publicKey('uncompressed') }, auth: 'sandbox' }, 200, (body) =>
          body.str('encryptedWalletCredentials').length > 0 ? undefined : 'an export carries empty encryptedWalletCredentials',
        );
    }
  }

  #newKey(): Uint8Array {
    return this.#rng.bytes(PRIVATE_KEY_BYTES, isValidPrivateKey);
  }

  #publicKey(form: 'uncompressed' | 'compressed', privateKey = this.#newKey()): string {
    const pair = keyPairFromPrivateKey(privateKey);
    return Buffer.from(form === 'compressed' ? pair.publicKeyCompressed : pair.publicKey).toString('hex');
  }

  /** The account's first credential answers 201; a later one 202, then 201 on the signed retry. */
  #addCredential(wallet: SimWallet): Operation | undefined {
    const held = new Set(wallet.credentials.values());
    const type = (['EMAIL_OTP', 'OAUTH'] as const).find((t) => !held.has(t));
    if (type === undefined) return undefined;
    const body = type === 'EMAIL_OTP' ? { type, accountId: wallet.accountId, email: wallet.email } : { type, accountId: wallet.accountId, oidcToken: oidcToken(wallet.email) };
    const request: SimRequest = { method: 'POST', path: '/auth/credentials', body, auth: 'sandbox' };
    const first = wallet.credentials.size === 0;
    const created = (answer: Json): undefined => {
      wallet.credentials.set(answer.str('id'), type);
      return undefined;
    };
    if (!first) return this.#signed(wallet, 'add a credential', request, 201, created);
    return this.walletOp(wallet, {
      label: 'add a first credential',
      request,
      retry: false,
      answered: (status, body) => {
        if (status !== 201) return `a wallet's first credential answered ${status}`;
        return created(body);
      },
    });
  }

  /** Verify with the sandbox's proof and a compressed clientPublicKey: the client's key is the session's. */
  #login(wallet: SimWallet, credentialId: string): Operation {
    const privateKey = this.#newKey();
    const clientPublicKey = this.#publicKey('compressed', privateKey);
    const proof = wallet.credentials.get(credentialId) === 'EMAIL_OTP' ? { otp: SANDBOX_OTP } : { oidcToken: SANDBOX_OIDC_TOKEN };
    return this.walletOp(wallet, {
      label: 'open a session',
      request: { method: 'POST', path: `/auth/credentials/${credentialId}/verify`, body: { ...proof, clientPublicKey }, auth: 'sandbox' },
      retry: false,
      answered: (status, body) => {
        if (status !== 200) return `verifying a credential answered ${status}`;
        if (body.text('encryptedSessionSigningKey') !== undefined) return 'a session for a compressed clientPublicKey came with a sealed key';
        wallet.sessions.set(body.str('id'), { privateKey, expiresAt: Date.parse(body.str('expiresAt')) });
        return undefined;
      },
    });
  }

  /**
   * A signed action: the first request answers 202 with the payload to sign; the same request,
   * stamped by a live session and carrying the Request-Id, answers `done` (a stamp by a key no
   * session has is refused with 401, and nothing changes). Sometimes the done request is sent
   * again: its Request-Id is spent, so it must be refused and apply nothing.
   */
  #signed(wallet: SimWallet, label: string, request: SimRequest, done: number, applied: (body: Json) => string | undefined, gone: () => boolean = () => false): Operation {
    return this.walletOp(wallet, {
      label: `${label} (step 1)`,
      request,
      retry: false,
      answered: (status, body) => {
        if (status !== 202) return `${label} answered ${status} at step 1`;
        const payload = body.str('payloadToSign');
        const requestId = body.str('requestId');
        const expiresAt = Date.parse(body.str('expiresAt'));
        const drawStamped = (): Operation => {
          const stamp = this.stamp(wallet, payload);
          const stamped: SimRequest = { ...request, headers: { 'request-id': requestId, 'service-wallet-signature': stamp.header } };
          return this.walletOp(wallet, {
            label: `${label} (signed)`,
            request: stamped,
            retry: false,
            answered: (signedStatus, signedBody) => {
              // Time moved past the request's window before the retry came (a long step): refused, nothing applied.
              if (signedStatus === 401 && signedBody.text('reason') === 'Request-Id expired' && this.#now() >= expiresAt) return undefined;
              if (signedStatus === 404 && gone()) return undefined;
              if (!stamp.valid) return signedStatus === 401 ? undefined : `${label} with a stamp by no session answered ${signedStatus}`;
              if (signedStatus !== done) return `${label} answered ${signedStatus} to the signed retry`;
              const problem = applied(signedBody);
              if (problem === undefined && this.#rng.chance(REPLAY_CHANCE)) this.#follow(() => this.walletOp(wallet, replayed(label, stamped)));
              return problem;
            },
          });
        };
        this.#follow(drawStamped);
        return undefined;
      },
    });
  }

  #revoked(wallet: SimWallet, id: string): undefined {
    wallet.sessions.delete(id);
    wallet.revoked.add(id);
    return undefined;
  }

  /** After a crash left a wallet request unanswered: what the wallet holds now, adopted. */
  #relearn(wallet: SimWallet): Operation {
    return this.walletOp(wallet, {
      label: 'list credentials',
      request: { method: 'GET', path: '/auth/credentials', query: `accountId=${encodeURIComponent(wallet.accountId)}`, auth: 'sandbox' },
      retry: false,
      answered: (status, body) => {
        if (status !== 200) return `listing credentials answered ${status}`;
        const listed = new Map(body.list('data').map((c) => [c.str('id'), c.str('type') as SimCredentialType]));
        for (const id of wallet.credentials.keys()) if (!listed.has(id)) return `acknowledged credential ${id} is not listed`;
        wallet.credentials = listed;
        this.#follow(() => this.walletOp(wallet, {
          label: 'list sessions',
          request: { method: 'GET', path: '/auth/sessions', query: `accountId=${encodeURIComponent(wallet.accountId)}`, auth: 'sandbox' },
          retry: false,
          answered: (sessionsStatus, sessionsBody) => {
            if (sessionsStatus !== 200) return `listing sessions answered ${sessionsStatus}`;
            const now = this.#now();
            const sessions = new Map<string, SessionKnown>();
            for (const listedSession of sessionsBody.list('data')) {
              const id = listedSession.str('id');
              if (wallet.revoked.has(id)) return `revoked session ${id} is listed`;
              sessions.set(id, wallet.sessions.get(id) ?? { privateKey: undefined, expiresAt: Date.parse(listedSession.str('expiresAt')) });
            }
            for (const [id, session] of wallet.sessions) {
              if (sessions.has(id) || session.expiresAt <= now) continue;
              // Gone before its time: a revocation the crash left unanswered took it.
              wallet.revoked.add(id);
            }
            wallet.sessions = sessions;
            wallet.uncertain = 0;
            return undefined;
          },
        }));
        return undefined;
      },
    });
  }

  /**
   * A request of `wallet`: the wallet is busy until it is answered and what it queued is
   * done; one a crash leaves unanswered makes the wallet uncertain.
   */
  walletOp(wallet: SimWallet, op: Operation): Operation {
    wallet.busy = true;
    return {
      ...op,
      answered: (status, body) => {
        const queued = this.#followUps;
        try {
          return op.answered(status, body);
        } finally {
          if (this.#followUps === queued) wallet.busy = false;
        }
      },
      unanswered: () => {
        wallet.busy = false;
        wallet.uncertain++;
      },
    };
  }

  #follow(op: () => Operation): void {
    this.#followUps++;
    this.#next(op);
  }

  /**
   * What the service holds against what the answers acknowledged, per wallet: the same live
   * credentials, the same live sessions (none past its expiry: the expiry timer fired), no
   * revoked session back. An uncertain wallet may hold more than the model knows, and fewer sessions.
   */
  check(wallets: Wallets, now: number): string | undefined {
    for (const wallet of this.wallets.values()) {
      const stored = wallets.ofAccount(wallet.accountId);
      const credentials = new Set(stored?.credentials.map((c) => c.id) ?? []);
      const sessions = stored?.sessions ?? [];
      for (const id of wallet.credentials.keys()) if (!credentials.has(id)) return `wallet ${wallet.accountId}: acknowledged credential ${id} is gone`;
      for (const session of sessions) {
        if (session.expiresAt <= now) return `wallet ${wallet.accountId}: session ${session.id} is still live after it expired`;
        if (wallet.revoked.has(session.id)) return `wallet ${wallet.accountId}: revoked session ${session.id} is live`;
      }
      // An uncertain wallet may hold more, and fewer sessions too: a revocation the crash left
      // unanswered may have taken one (the wallet relearns them next, as #relearn says).
      if (wallet.uncertain > 0) continue;
      const live = new Set(sessions.map((s) => s.id));
      for (const [id, session] of wallet.sessions) {
        if (session.expiresAt > now && !live.has(id)) return `wallet ${wallet.accountId}: acknowledged session ${id} is gone before its expiry`;
      }
      if (credentials.size !== wallet.credentials.size) return `wallet ${wallet.accountId}: holds ${credentials.size} credentials, ${wallet.credentials.size} were acknowledged`;
      for (const id of live) if (!wallet.sessions.has(id)) return `wallet ${wallet.accountId}: session ${id} was never acknowledged`;
    }
    return undefined;
  }
}

/** A JWT of a recognised issuer, as sandbox reads one (unsigned: sandbox checks the structure and the issuer). */
function oidcToken(email: string): string {
  const parts = [{ alg: 'RS256', typ: 'JWT' }, { iss: 'https://accounts.google.com', sub: email, email }];
  return `${parts.map((part) => Buffer.from(JSON.stringify(part)).toString('base64url')).join('.')}.c2lnbmF0dXJl`;
}

/** The done signed request again, its Request-Id spent: refused (401, or 404 when what it revoked is gone), nothing applied. */
function replayed(label: string, stamped: SimRequest): Operation {
  return {
    label: `${label} (signed, again)`,
    request: stamped,
    retry: false,
    refused: true,
    answered: (status) => (status === 401 || status === 404 ? undefined : `a spent Request-Id answered ${status}`),
  };
}
