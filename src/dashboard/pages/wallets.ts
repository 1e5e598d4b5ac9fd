// Wallets: the environment's embedded wallets (EMBEDDED_WALLET internal accounts) and, for
// one of them, its credentials and live sessions, with the two passkey ceremonies run by
// this browser: registering a passkey (navigator.credentials.create, then POST
// /auth/credentials) and signing in with one (the challenge route, navigator.credentials.get,
// then the verify route). In production the service checks the attestation and the
// assertion against embeddedWalletConfig.webauthn, so the page must be served from one of
// its origins and the relying party is this page's host.
import { call, describe, type Page, type Token } from '../api.js';
import { h, money, show } from '../dom.js';
import { hashOf, type DashboardPage, type PageContext } from '../page.js';

interface WalletAccount {
  id: string;
  type: string;
  customerId: string;
  balance: { amount: number; currency: { code: string; decimals: number } };
}

interface AuthMethod {
  id: string;
  type: 'EMAIL_OTP' | 'OAUTH' | 'PASSKEY';
  nickname: string;
  createdAt: string;
}

interface Session {
  id: string;
  nickname: string;
  expiresAt: string;
}

/** A 202 from POST /auth/credentials: the account already has a credential and the add needs a session's stamp. */
interface SignedRequestChallenge {
  payloadToSign: string;
  requestId: string;
}

interface PasskeyChallenge {
  challenge: string;
  requestId: string;
  expiresAt: string;
}

/** ES256 (ECDSA P-256 with SHA-256): the one COSE algorithm the service verifies passkeys with. */
const COSE_ES256 = -7;
/** A fresh registration challenge's size: WebAuthn asks for at least 16 random bytes. */
const REGISTRATION_CHALLENGE_BYTES = 32;
/** How long the browser waits for the authenticator. */
const CEREMONY_TIMEOUT_MS = 60_000;

export const walletsPage: DashboardPage = { name: 'Wallets', path: 'wallets', render: wallets };

async function wallets(ctx: PageContext): Promise<void> {
  const [accountId] = ctx.params;
  if (accountId === undefined) await walletList(ctx);
  else await walletDetail(ctx, accountId);
}

async function walletList({ token, main }: PageContext): Promise<void> {
  show(main, h('h2', {}, 'Wallets'), h('p', {}, 'Loading…'));
  const page = await call<Page<WalletAccount>>(token, 'GET', '/internal-accounts?type=EMBEDDED_WALLET&limit=100');
  const rows = page.data.map((account) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, h('a', { href: hashOf('wallets', account.id) }, account.id)),
      h('td', {}, account.customerId),
      h('td', {}, money(account.balance.amount, account.balance.currency.decimals, account.balance.currency.code)),
    ),
  );
  show(
    main,
    h('h2', {}, 'Wallets'),
    rows.length === 0
      ? h('p', {}, 'No embedded wallets yet: each customer gets one when it is created.')
      : h(
          'table',
          { 'aria-label': 'Embedded wallets' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Account'), h('th', { scope: 'col' }, 'Customer'), h('th', { scope: 'col' }, 'Balance'))),
          h('tbody', {}, ...rows),
        ),
    page.hasMore ? h('p', {}, `The first ${page.data.length} of ${page.totalCount} wallets.`) : null,
  );
}

/** One wallet; `notice` is what the last action did, shown in the outcome's status. */
async function walletDetail(ctx: PageContext, accountId: string, notice = ''): Promise<void> {
  const { token, main } = ctx;
  const heading = `Wallet ${accountId}`;
  show(main, h('h2', {}, heading), h('p', {}, 'Loading…'));
  const query = `?accountId=${encodeURIComponent(accountId)}`;
  const [account, credentials, sessions] = await Promise.all([
    call<WalletAccount>(token, 'GET', `/internal-accounts/${encodeURIComponent(accountId)}`),
    call<{ data: AuthMethod[] }>(token, 'GET', `/auth/credentials${query}`),
    call<{ data: Session[] }>(token, 'GET', `/auth/sessions${query}`),
  ]);
  // Outcomes of the ceremonies: what succeeded in a status, what failed in an alert.
  const outcome = h('p', { role: 'status' }, notice);
  const problem = h('p', { role: 'alert' });
  const report = (ok: string): void => {
    show(problem);
    show(outcome, ok);
  };
  const fail = (err: unknown): void => {
    show(outcome);
    show(problem, describe(err));
  };
  const credentialRows = credentials.data.map((credential) => {
    const signIn =
      credential.type === 'PASSKEY'
        ? h('button', { type: 'button', 'aria-label': `Sign in with passkey ${credential.nickname}` }, 'Sign in with passkey')
        : null;
    signIn?.addEventListener('click', () => {
      signIn.disabled = true;
      signInWithPasskey(token, credential).then(
        (session) => report(`Signed in with passkey ${credential.nickname}: session ${session.id} expires at ${session.expiresAt}.`),
        fail,
      ).finally(() => {
        signIn.disabled = false;
      });
    });
    return h('tr', {}, h('th', { scope: 'row' }, credential.nickname), h('td', {}, credential.type), h('td', {}, credential.createdAt), h('td', {}, signIn));
  });
  const sessionRows = sessions.data.map((session) => h('tr', {}, h('th', { scope: 'row' }, session.id), h('td', {}, session.nickname), h('td', {}, session.expiresAt)));
  const adding = passkeyAddition(ctx, credentials.data, account, fail);
  show(
    main,
    h('h2', {}, heading),
    h('p', {}, `Customer ${account.customerId}; balance ${money(account.balance.amount, account.balance.currency.decimals, account.balance.currency.code)}`),
    h('h3', {}, 'Credentials'),
    credentialRows.length === 0
      ? h('p', {}, 'No credentials yet.')
      : h(
          'table',
          { 'aria-label': 'Credentials' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Name'), h('th', { scope: 'col' }, 'Type'), h('th', { scope: 'col' }, 'Added'), h('th', { scope: 'col' }, 'Sign in'))),
          h('tbody', {}, ...credentialRows),
        ),
    adding,
    outcome,
    problem,
    h('h3', {}, 'Sessions'),
    sessionRows.length === 0
      ? h('p', {}, 'No live sessions.')
      : h(
          'table',
          { 'aria-label': 'Sessions' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'Credential'), h('th', { scope: 'col' }, 'Expires'))),
          h('tbody', {}, ...sessionRows),
        ),
  );
}

/**
 * The Add passkey form, where the service would take a passkey without more: a wallet holds
 * one credential of each type, and only its first comes without a session's stamp (which
 * this page cannot make). Asked before the ceremony, so the authenticator is not left with
 * a passkey the service refuses.
 */
function passkeyAddition(ctx: PageContext, credentials: readonly AuthMethod[], account: WalletAccount, fail: (err: unknown) => void): HTMLElement {
  if (credentials.some((credential) => credential.type === 'PASSKEY')) return h('p', {}, 'This wallet has its passkey: a wallet holds one.');
  if (credentials.length > 0) return h('p', {}, 'Adding a passkey to this wallet needs a stamp by one of its sessions, which the dashboard cannot make yet.');
  const nickname = h('input', { id: 'passkey-nickname', name: 'nickname', required: true, maxlength: 255, autocomplete: 'off' });
  const form = h(
    'form',
    { 'aria-label': 'Add passkey' },
    h('label', { for: 'passkey-nickname' }, 'Passkey name'),
    nickname,
    h('button', { type: 'submit' }, 'Add passkey'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    addPasskey(ctx.token, account, nickname.value.trim()).then((added) => {
      // Another tab added a credential since this page was shown.
      if (added === 'needs a stamp') {
        fail(new Error('This wallet has a credential now: adding another needs a stamp by one of its sessions, which the dashboard cannot make yet.'));
        return;
      }
      // Re-rendered so the new passkey is listed with its sign-in button.
      walletDetail(ctx, account.id, `Passkey ${added.nickname} added.`).catch(fail);
    }, fail);
  });
  return form;
}

/**
 * Registers a passkey on this browser's authenticator for `account` and adds it as the
 * wallet's credential. The challenge is the browser's own: the service checks that the
 * attestation's clientDataJSON carries the challenge sent beside it.
 */
async function addPasskey(token: Token, account: WalletAccount, nickname: string): Promise<AuthMethod | 'needs a stamp'> {
  const challenge = crypto.getRandomValues(new Uint8Array(REGISTRATION_CHALLENGE_BYTES));
  const created = await navigator.credentials.create({
    publicKey: {
      challenge,
      rp: { id: location.hostname, name: 'Payments dashboard' },
      // The user handle is the wallet's account id: a discoverable passkey names its wallet.
      user: { id: new TextEncoder().encode(account.id), name: nickname, displayName: nickname },
      pubKeyCredParams: [{ type: 'public-key', alg: COSE_ES256 }],
      // Discoverable, because sign-in cannot name the credential: the API's AuthMethod does not carry its WebAuthn id.
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      attestation: 'none',
      timeout: CEREMONY_TIMEOUT_MS,
    },
  });
  if (!(created instanceof PublicKeyCredential) || !(created.response instanceof AuthenticatorAttestationResponse)) throw new Error('The browser made no passkey.');
  const response = created.response;
  const added = await call<AuthMethod | SignedRequestChallenge>(token, 'POST', '/auth/credentials', {
    type: 'PASSKEY',
    accountId: account.id,
    nickname,
    challenge: base64url(challenge),
    attestation: {
      credentialId: created.id,
      clientDataJson: base64url(response.clientDataJSON),
      attestationObject: base64url(response.attestationObject),
      transports: response.getTransports(),
    },
  });
  return 'payloadToSign' in added ? 'needs a stamp' : added;
}

/**
 * Opens a session with a passkey. The session's key is made here and stays here: its
 * private half is not extractable, and the service is sent the compressed public key,
 * which the route takes as the session key itself (an uncompressed one would have the
 * service make the key and seal it to ours, for nothing here to open).
 */
async function signInWithPasskey(token: Token, credential: AuthMethod): Promise<Session> {
  const sessionKey = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  const clientPublicKey = compressedHex(new Uint8Array(await crypto.subtle.exportKey('raw', sessionKey.publicKey)));
  const path = `/auth/credentials/${encodeURIComponent(credential.id)}`;
  const issued = await call<PasskeyChallenge>(token, 'POST', `${path}/challenge`, { clientPublicKey });
  const asserted = await navigator.credentials.get({
    publicKey: { challenge: fromBase64url(issued.challenge), rpId: location.hostname, userVerification: 'required', timeout: CEREMONY_TIMEOUT_MS },
  });
  if (!(asserted instanceof PublicKeyCredential) || !(asserted.response instanceof AuthenticatorAssertionResponse)) throw new Error('The browser gave no passkey assertion.');
  const response = asserted.response;
  const assertion = {
    credentialId: asserted.id,
    clientDataJson: base64url(response.clientDataJSON),
    authenticatorData: base64url(response.authenticatorData),
    signature: base64url(response.signature),
    ...(response.userHandle === null ? {} : { userHandle: base64url(response.userHandle) }),
  };
  return call<Session>(token, 'POST', `${path}/verify`, { assertion, clientPublicKey }, { 'Request-Id': issued.requestId });
}

/** A raw (uncompressed, 04 || x || y) P-256 point as compressed hex: 02 or 03 by y's parity, then x. */
function compressedHex(uncompressed: Uint8Array): string {
  const x = uncompressed.subarray(1, 33);
  const yIsOdd = (uncompressed[64]! & 1) === 1;
  return (yIsOdd ? '03' : '02') + [...x].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

function base64url(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let binary = '';
  for (const byte of view) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
