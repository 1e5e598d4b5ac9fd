// Embedded-wallet credentials and sessions (SERVICE_SPEC part 4 "Credentials and sessions",
// part 5; CONTRACT.md "Embedded-wallet API") and the wallet export. Every decision holds
// the wallet's internal account (and, to create a credential, its customer); cryptography
// runs here and its results go into the wallet's events (actors/wallet.ts).
//
// Sandbox checks the magic values of SERVICE_SPEC 5.8 and accepts real stamps and seals
// real keys as well. Production verifies for real (src/wallet/): OTP codes mailed by
// an effect and kept as keyed hashes, OIDC tokens against the environment's issuers,
// WebAuthn registrations and assertions for its relying party (embeddedWalletConfig).
import { createHash, randomBytes } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { Holds, Same } from '../schemas/same-shape.js';
import { assertActive } from '../../../actors/customer.js';
import { invalidField, notFound, rateLimited, unauthorized } from '../../../actors/errors.js';
import type { InternalAccount } from '../../../actors/internal-account.js';
import { embeddedWalletConfigOf, type EmbeddedWalletConfig, type PlatformEnv } from '../../../actors/platform.js';
import {
  assertNotLast,
  assertTypeFree,
  CHALLENGE_INTERVAL_MS,
  challengeRetryAfter,
  changed,
  CREDENTIAL_TYPES,
  credentialOf,
  renderAuthMethod,
  renderSession,
  replaceCredential,
  revokeCredential,
  revokeSession,
  sessionOf,
  sessionRetryAfter,
  SIGNED_REQUEST_WINDOW_MS,
  walletOf,
  withCredential,
  withSession,
  type Credential,
  type OtpState,
  type Wallet,
  type WalletSession,
} from '../../../actors/wallet.js';
import type { DomainEvent, TimerMessage } from '../../../actors/world.js';
import { checkClientPublicKey } from '../../crypto/p256.js';
import { generateMnemonic, openWalletMnemonic, sealWalletMnemonic } from '../../crypto/wallet-secrets.js';
import { newId, uuidv7 } from '../../engine/ids.js';
import type { EngineEvent } from '../../engine/state-machine.js';
import type { Services } from '../../services.js';
import { acceptSignedRequest, isRetry, openSignedRequest, type SignedRequestSpec } from '../../wallet/signed-request.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { Email, IdOf } from '../schemas/resources.js';
import { List, Obj, Str, StringEnum, validator } from '../validation.js';
import { API_VERSION } from '../server.js';
import { WalletAuthError } from '../../wallet/errors.js';
import { OTP_MAIL_EFFECT, otpMail } from '../../wallet/mail.js';
import { parseSandboxOidc } from '../../wallet/oidc.js';
import { newOtp, OTP_TRIES, otpMatches } from '../../wallet/otp.js';
import { verifyPasskeyAssertion, verifyPasskeyRegistration } from '../../wallet/webauthn.js';
import { isoTime } from '../../../actors/iso-time.js';

const SANDBOX_OTP = '000000';
const SANDBOX_PASSKEY_SIGNATURE = 'sandbox-valid-passkey-signature';
const SANDBOX_OIDC_TOKEN = 'sandbox-valid-oidc-token';

const Timestamp = Str({ format: 'date-time' });
const CredentialTypeSchema = StringEnum(CREDENTIAL_TYPES);
const AuthMethodView = Obj({
  id: Str(),
  accountId: Str(),
  type: CredentialTypeSchema,
  nickname: Str(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
const PasskeyAuthChallengeView = Obj({ ...AuthMethodView.properties, challenge: Str(), requestId: Str(), expiresAt: Timestamp });
const SessionListItem = Obj({ ...AuthMethodView.properties, expiresAt: Timestamp });
const SessionView = Obj({ ...SessionListItem.properties, encryptedSessionSigningKey: Type.String({ description: 'base58check HPKE bundle of the session private key; only here' }) });
const SignedRequestChallengeView = Obj({
  payloadToSign: Type.String({ description: 'sign these exact bytes' }),
  requestId: Str(),
  expiresAt: Timestamp,
  type: Type.Optional(CredentialTypeSchema),
});
const ExportView = Obj({ id: Str(), encryptedWalletCredentials: Type.String({ description: 'JSON: version, data, dataSignature, enclaveQuorumPublic' }) });

const ClientPublicKey = Str({ maxLength: 130, description: 'uncompressed P-256 public key: 130 hex characters starting with 04' });
const Token = Str({ minLength: 1, maxLength: 8192 });
const Attestation = Obj({
  credentialId: Str({ minLength: 1 }),
  clientDataJson: Str({ minLength: 1, maxLength: 8192 }),
  attestationObject: Str({ minLength: 1, maxLength: 16384 }),
  transports: Type.Optional(List(Str({ maxLength: 32 }), { maxItems: 10 })),
});
const Assertion = Obj({
  credentialId: Str({ minLength: 1 }),
  clientDataJson: Str({ minLength: 1, maxLength: 8192 }),
  authenticatorData: Str({ minLength: 1, maxLength: 8192 }),
  signature: Str({ minLength: 1 }),
  userHandle: Type.Optional(Str()),
});

const CreateCredential = Obj({
  type: CredentialTypeSchema,
  accountId: IdOf('InternalAccount'),
  email: Type.Optional(Email),
  oidcToken: Type.Optional(Token),
  nickname: Type.Optional(Str({ minLength: 1, maxLength: 255 })),
  challenge: Type.Optional(Str({ minLength: 1 })),
  attestation: Type.Optional(Attestation),
});
const ChallengeBody = Obj({ clientPublicKey: Type.Optional(ClientPublicKey) });
const VerifyBody = Obj({
  otp: Type.Optional(Str({ minLength: 1, maxLength: 32 })),
  oidcToken: Type.Optional(Token),
  assertion: Type.Optional(Assertion),
  clientPublicKey: Type.Optional(ClientPublicKey),
});
const ExportBody = Obj({ clientPublicKey: ClientPublicKey });
const AccountQuery = Obj({ accountId: IdOf('InternalAccount') });
const CredentialIdParam = validator(Obj({ id: IdOf('AuthMethod') }));
const SessionIdParam = validator(Obj({ id: IdOf('Session') }));
const AccountIdParam = validator(Obj({ id: IdOf('InternalAccount') }));

type Events = Array<DomainEvent | EngineEvent<TimerMessage>>;

function accountOf(services: Services, env: PlatformEnv, id: string, field = 'accountId'): InternalAccount {
  const account = services.world.internalAccounts.inEnv(env.id, id);
  if (account === undefined) throw notFound(field, 'internal account', id);
  if (account.type !== 'EMBEDDED_WALLET') throw invalidField(field, `${id} is an ${account.type} account; only EMBEDDED_WALLET accounts take credentials`);
  return account;
}

/** The wallet holding a credential or session id of this environment, else 404. */
function walletHolding(services: Services, env: PlatformEnv, id: string, what: string): Wallet {
  const wallet = services.world.wallets.holding(id);
  if (wallet === undefined || wallet.envId !== env.id) throw notFound('id', what, id);
  return wallet;
}

function versioned(path: string): string {
  return `/${API_VERSION}${path}`;
}

function requireClientPublicKey(value: string | undefined): string {
  const check = checkClientPublicKey(value);
  if (!check.ok) throw invalidField('clientPublicKey', check.reason);
  return value!;
}

/** A production check's refusal as the API's 401 (its detail names the check; it stays out of the answer). */
async function walletAuth<T>(check: () => Promise<T> | T): Promise<T> {
  try {
    return await check();
  } catch (err) {
    if (err instanceof WalletAuthError) throw unauthorized(err.reason);
    throw err;
  }
}

function walletConfig(env: PlatformEnv): EmbeddedWalletConfig {
  return embeddedWalletConfigOf(env.config);
}

/** A fresh OTP for `email`: its hash to keep, and the effect that mails the code (sealed) once the entry is durable. */
function issueOtp(services: Services, env: PlatformEnv, accountId: string, email: string, at: number): { otp: OtpState; mail: EngineEvent<TimerMessage> } {
  const config = walletConfig(env);
  const { code, codeHash } = newOtp(config.otpLength, services.otpHasher);
  const expiresAt = at + config.expirationSeconds * 1000;
  return {
    otp: { codeHash, expiresAt, triesLeft: OTP_TRIES },
    mail: services.engine.effect(OTP_MAIL_EFFECT, [accountId], otpMail({ to: email, code, expiresAt, config }, services.masterKey), at),
  };
}

type CreateInput = Static<typeof CreateCredential>;
type Attestation = Static<typeof Attestation>;

/** A create body with the fields its type needs (checked before anything is decided, so a missing field is a 400 even where a 202 would follow). */
type CreateRequest =
  | { type: 'EMAIL_OTP'; email?: string }
  | { type: 'OAUTH'; oidcToken: string }
  | { type: 'PASSKEY'; nickname: string; challenge: string; attestation: Attestation };

function createRequestOf(input: CreateInput): CreateRequest {
  switch (input.type) {
    case 'EMAIL_OTP':
      return input.email === undefined ? { type: 'EMAIL_OTP' } : { type: 'EMAIL_OTP', email: input.email };
    case 'OAUTH':
      if (input.oidcToken === undefined) throw invalidField('oidcToken', 'required for OAUTH');
      return { type: 'OAUTH', oidcToken: input.oidcToken };
    case 'PASSKEY':
      if (input.nickname === undefined) throw invalidField('nickname', 'required for PASSKEY');
      if (input.challenge === undefined) throw invalidField('challenge', 'required for PASSKEY');
      if (input.attestation === undefined) throw invalidField('attestation', 'required for PASSKEY');
      return { type: 'PASSKEY', nickname: input.nickname, challenge: input.challenge, attestation: input.attestation };
  }
}

/** The new credential, checked for its type, and the effects it causes (the OTP mail). */
async function newCredential(services: Services, env: PlatformEnv, account: InternalAccount, input: CreateRequest, at: number): Promise<{ credential: Credential; effects: Events }> {
  const base = { id: newId('AuthMethod', at), type: input.type, createdAt: at, updatedAt: at };
  const production = env.environment === 'production';
  const config = walletConfig(env);
  switch (input.type) {
    case 'EMAIL_OTP': {
      const email = input.email ?? services.world.customers.get(account.customerId)?.email;
      if (email === undefined) throw invalidField('email', 'required: the customer record has no email address');
      // The OTP sent with the credential counts as its first challenge. Sandbox sends none (the OTP is the magic value).
      const credential: Credential = { ...base, nickname: email, email, lastChallengeAt: at };
      if (!production) return { credential, effects: [] };
      const issued = issueOtp(services, env, account.id, email, at);
      return { credential: { ...credential, otp: issued.otp }, effects: [issued.mail] };
    }
    case 'OAUTH': {
      const token = input.oidcToken;
      const claims = production
        ? await walletAuth(() => services.oidc.verify(token, config.oidcIssuers, at))
        : await walletAuth(() => parseSandboxOidc(token, config.oidcIssuers.map((i) => i.issuer)));
      const subject = claims.subject ?? '';
      return { credential: { ...base, nickname: claims.email ?? (subject || claims.issuer), oauth: { issuer: claims.issuer, subject } }, effects: [] };
    }
    case 'PASSKEY': {
      const { nickname, challenge, attestation } = input;
      // Sandbox stores the attestation as given: nothing in sandbox verifies with its key.
      const passkey = production
        ? await walletAuth(() => verifyPasskeyRegistration({ attestation, expectedChallenge: challenge, webauthn: config.webauthn }))
        : { credentialId: attestation.credentialId, publicKey: '', counter: 0, transports: attestation.transports ?? [] };
      return { credential: { ...base, nickname, passkey }, effects: [] };
    }
  }
}

function createCredential(ctx: RouteContext<CreateInput, undefined>): Promise<Reply> {
  const { services, env, body, headers } = ctx;
  const account = accountOf(services, env, body.accountId);
  const request = createRequestOf(body);
  const spec: SignedRequestSpec = {
    action: 'ADD_CREDENTIAL',
    method: 'POST',
    path: versioned('/auth/credentials'),
    body,
    credentialType: body.type,
  };
  return ctx.exec([account.customerId, account.id], async (at) => {
    assertActive(services.world.customers.get(account.customerId)!);
    let wallet = walletOf(services.world.wallets.ofAccount(account.id), account, at);
    if (wallet.credentials.length > 0) {
      if (!isRetry(headers)) {
        assertTypeFree(wallet, body.type);
        const opened = openSignedRequest(services, wallet, spec, at);
        return { events: opened.events, reply: () => ({ status: 202, body: opened.body }) };
      }
      wallet = (await acceptSignedRequest(services, env.environment, wallet, headers, spec, at)).wallet;
    }
    const { credential, effects } = await newCredential(services, env, account, request, at);
    const next = withCredential(wallet, credential);
    return { events: [changed(next, at), ...effects], reply: () => ({ status: 201, body: renderAuthMethod(next, credential) }) };
  });
}

function challenge(ctx: RouteContext<Static<typeof ChallengeBody>, undefined>): Promise<Reply> {
  const { services, env, body } = ctx;
  const { id } = CredentialIdParam.parse(ctx.params);
  const { accountId } = walletHolding(services, env, id, 'credential');
  return ctx.exec([accountId], (at) => {
    const wallet = walletHolding(services, env, id, 'credential');
    const credential = credentialOf(wallet, id)!;
    const clientPublicKey = credential.type === 'PASSKEY' ? requireClientPublicKey(body.clientPublicKey).toLowerCase() : undefined;
    const wait = challengeRetryAfter(credential, at);
    if (wait !== undefined) throw rateLimited(`credential ${id} was challenged less than ${CHALLENGE_INTERVAL_MS / 1000} seconds ago`, wait);
    if (clientPublicKey === undefined) {
      // EMAIL_OTP: a new code, mailed in production (sandbox sends none: the OTP is the magic value). OAUTH has nothing to issue.
      let renewed: Credential = { ...credential, lastChallengeAt: at, updatedAt: at };
      const events: Events = [];
      if (credential.type === 'EMAIL_OTP' && env.environment === 'production') {
        const issued = issueOtp(services, env, accountId, credential.email!, at);
        renewed = { ...renewed, otp: issued.otp };
        events.push(issued.mail);
      }
      const next = replaceCredential(wallet, renewed);
      return { events: [changed(next, at), ...events], reply: () => ({ status: 200, body: renderAuthMethod(next, credentialOf(next, id)!) }) };
    }
    // The WebAuthn challenge is the hash of the session-creation payload, which names the
    // clientPublicKey: the authenticator's signature commits to the key the session goes to.
    const requestId = uuidv7(at);
    const expiresAt = at + SIGNED_REQUEST_WINDOW_MS;
    const sessionPayload = JSON.stringify({
      action: 'CREATE_SESSION',
      credentialId: id,
      clientPublicKey,
      requestId,
      nonce: randomBytes(16).toString('hex'),
      expiresAt: isoTime(expiresAt),
    });
    const passkeyChallenge = { requestId, challenge: createHash('sha256').update(sessionPayload).digest('base64url'), clientPublicKey, expiresAt };
    const next = replaceCredential(wallet, { ...credential, lastChallengeAt: at, updatedAt: at, passkeyChallenge });
    return {
      events: [changed(next, at)],
      reply: () => ({
        status: 200,
        body: {
          ...renderAuthMethod(next, credentialOf(next, id)!),
          challenge: passkeyChallenge.challenge,
          requestId: passkeyChallenge.requestId,
          expiresAt: isoTime(passkeyChallenge.expiresAt),
        },
      }),
    };
  });
}

type VerifyInput = Static<typeof VerifyBody>;

/** A wrong production OTP: the try is spent (and logged), and the answer is still 401. */
interface WrongOtp {
  wrongOtp: Credential;
}

/**
 * Proof of possession of a credential: the sandbox magic values, or in production the
 * OTP, the OIDC token of the same issuer and subject, or the passkey assertion over the
 * challenge. Returns the credential as it is after use (an OTP or passkey challenge
 * answers once; a passkey's counter moves).
 */
async function prove(services: Services, env: PlatformEnv, credential: Credential, body: VerifyInput, requestId: string | undefined, clientPublicKey: string, at: number): Promise<Credential | WrongOtp> {
  const production = env.environment === 'production';
  switch (credential.type) {
    case 'EMAIL_OTP': {
      if (body.otp === undefined) throw invalidField('otp', 'required for EMAIL_OTP');
      if (!production) {
        if (body.otp !== SANDBOX_OTP) throw unauthorized('Invalid OTP code');
        return credential;
      }
      const { otp, ...rest } = credential;
      if (otp === undefined || otp.expiresAt <= at) throw unauthorized('Invalid OTP code', 'Invalid OTP code: no code is live; request a new one with /challenge');
      if (otpMatches(otp.codeHash, body.otp, services.otpHasher)) return { ...rest, updatedAt: at };
      // Five tries per code: the last wrong one spends it.
      return { wrongOtp: otp.triesLeft > 1 ? { ...credential, otp: { ...otp, triesLeft: otp.triesLeft - 1 } } : rest };
    }
    case 'OAUTH': {
      const token = body.oidcToken;
      if (token === undefined) throw invalidField('oidcToken', 'required for OAUTH');
      if (!production) {
        if (token !== SANDBOX_OIDC_TOKEN) throw unauthorized('Invalid OIDC token');
        return credential;
      }
      const claims = await walletAuth(() => services.oidc.verify(token, walletConfig(env).oidcIssuers, at));
      if (claims.issuer !== credential.oauth?.issuer || claims.subject !== credential.oauth.subject) {
        throw unauthorized('Invalid OIDC token', 'Invalid OIDC token: it names another user than the credential');
      }
      return credential;
    }
    case 'PASSKEY': {
      const assertion = body.assertion;
      if (assertion === undefined) throw invalidField('assertion', 'required for PASSKEY');
      const issued = credential.passkeyChallenge;
      if (requestId === undefined) throw unauthorized('Request-Id missing', 'PASSKEY verify needs the Request-Id of the challenge');
      if (issued === undefined || issued.requestId !== requestId) throw unauthorized('Invalid passkey challenge', 'Request-Id names no challenge issued for this credential');
      if (issued.expiresAt <= at) throw unauthorized('Passkey challenge expired');
      if (issued.clientPublicKey !== clientPublicKey.toLowerCase()) throw unauthorized('clientPublicKey differs from the one bound into the challenge');
      // A challenge answers one verify.
      const { passkeyChallenge: _answered, ...rest } = credential;
      if (!production) {
        if (assertion.signature !== SANDBOX_PASSKEY_SIGNATURE) throw unauthorized('Invalid passkey signature');
        return rest;
      }
      const stored = credential.passkey!;
      const { newCounter } = await walletAuth(() =>
        verifyPasskeyAssertion({ assertion, expectedChallenge: issued.challenge, webauthn: walletConfig(env).webauthn, credential: stored }),
      );
      return { ...rest, passkey: { ...stored, counter: newCounter }, updatedAt: at };
    }
  }
}

function verify(ctx: RouteContext<VerifyInput, undefined>): Promise<Reply> {
  const { services, env, body, headers } = ctx;
  const { id } = CredentialIdParam.parse(ctx.params);
  const { accountId } = walletHolding(services, env, id, 'credential');
  const clientPublicKey = requireClientPublicKey(body.clientPublicKey);
  return ctx.exec([accountId], async (at) => {
    const wallet = walletHolding(services, env, id, 'credential');
    const proven = await prove(services, env, credentialOf(wallet, id)!, body, headers.requestId, clientPublicKey, at);
    if ('wrongOtp' in proven) {
      const refusal = unauthorized('Invalid OTP code');
      return {
        events: [changed(replaceCredential(wallet, proven.wrongOtp), at)],
        reply: () => ({ status: 401, body: { status: 401, code: refusal.code, message: refusal.message, reason: refusal.reason } }),
      };
    }
    const wait = sessionRetryAfter(wallet, at);
    if (wait !== undefined) throw rateLimited(`account ${accountId} has too many active sessions; revoke one or wait`, wait);
    const issued = await services.crypto.issueSessionKey(clientPublicKey);
    const session: WalletSession = {
      id: newId('Session', at),
      credentialId: id,
      publicKey: issued.sessionPublicKey,
      createdAt: at,
      expiresAt: at + walletConfig(env).sessionLifetimeSeconds * 1000,
    };
    const next = withSession(replaceCredential(wallet, proven), session, at);
    return {
      events: [
        changed(next, at),
        services.engine.timer(session.expiresAt, [accountId], { type: 'wallet.session.expire', accountId, sessionId: session.id }, at, session.id),
      ],
      reply: () => ({ status: 200, body: { ...renderSession(next, session), encryptedSessionSigningKey: issued.encryptedSessionSigningKey } }),
    };
  });
}

function revokeCredentialRoute(ctx: RouteContext<undefined, undefined>): Promise<Reply> {
  const { services, env, headers } = ctx;
  const { id } = CredentialIdParam.parse(ctx.params);
  const { accountId } = walletHolding(services, env, id, 'credential');
  return ctx.exec([accountId], async (at) => {
    const wallet = walletHolding(services, env, id, 'credential');
    const credential = credentialOf(wallet, id)!;
    assertNotLast(wallet, id);
    const spec: SignedRequestSpec = {
      action: 'REVOKE_CREDENTIAL',
      method: 'DELETE',
      path: versioned(`/auth/credentials/${id}`),
      body: {},
      credentialType: credential.type,
      binds: { credentialId: id },
    };
    if (!isRetry(headers)) {
      const opened = openSignedRequest(services, wallet, spec, at);
      return { events: opened.events, reply: () => ({ status: 202, body: opened.body }) };
    }
    const accepted = await acceptSignedRequest(services, env.environment, wallet, headers, spec, at);
    if (accepted.signer.credentialId === id) {
      throw unauthorized('Stamp must come from a session of another credential', 'a credential cannot authorise its own revocation');
    }
    const ending = wallet.sessions.filter((s) => s.credentialId === id);
    const events: Events = [changed(revokeCredential(accepted.wallet, id, at), at), ...ending.map((s) => services.engine.cancelTimer(s.id))];
    return { events, reply: () => ({ status: 204, body: undefined }) };
  });
}

function revokeSessionRoute(ctx: RouteContext<undefined, undefined>): Promise<Reply> {
  const { services, env, headers } = ctx;
  const { id } = SessionIdParam.parse(ctx.params);
  const { accountId } = walletHolding(services, env, id, 'session');
  return ctx.exec([accountId], async (at) => {
    const wallet = walletHolding(services, env, id, 'session');
    const session = sessionOf(wallet, id)!;
    const spec: SignedRequestSpec = {
      action: 'REVOKE_SESSION',
      method: 'DELETE',
      path: versioned(`/auth/sessions/${id}`),
      body: {},
      credentialType: credentialOf(wallet, session.credentialId)!.type,
      binds: { sessionId: id },
    };
    if (!isRetry(headers)) {
      const opened = openSignedRequest(services, wallet, spec, at);
      return { events: opened.events, reply: () => ({ status: 202, body: opened.body }) };
    }
    // The signing session may be this one (self-logout).
    const accepted = await acceptSignedRequest(services, env.environment, wallet, headers, spec, at);
    return {
      events: [changed(revokeSession(accepted.wallet, id, at), at), services.engine.cancelTimer(id)],
      reply: () => ({ status: 204, body: undefined }),
    };
  });
}

function exportWallet(ctx: RouteContext<Static<typeof ExportBody>, undefined>): Promise<Reply> {
  const { services, env, body, headers } = ctx;
  const { id } = AccountIdParam.parse(ctx.params);
  const account = accountOf(services, env, id, 'id');
  const clientPublicKey = requireClientPublicKey(body.clientPublicKey);
  const spec: SignedRequestSpec = { action: 'EXPORT_WALLET', method: 'POST', path: versioned(`/internal-accounts/${id}/export`), body, clientPublicKey: clientPublicKey.toLowerCase() };
  return ctx.exec([account.id], async (at) => {
    const existing = services.world.wallets.ofAccount(account.id);
    if (!isRetry(headers)) {
      const opened = openSignedRequest(services, walletOf(existing, account, at), spec, at);
      return { events: opened.events, reply: () => ({ status: 202, body: opened.body }) };
    }
    const accepted = await acceptSignedRequest(services, env.environment, existing, headers, spec, at);
    let wallet = accepted.wallet;
    let mnemonic: string;
    if (wallet.sealedMnemonic === undefined) {
      // Made on first need; only the sealed form is logged.
      mnemonic = generateMnemonic();
      wallet = { ...wallet, sealedMnemonic: sealWalletMnemonic(services.masterKey, account.id, mnemonic) };
    } else {
      mnemonic = openWalletMnemonic(services.masterKey, account.id, wallet.sealedMnemonic);
    }
    const encryptedWalletCredentials = await services.crypto.createExportBundle({
      clientPublicKey,
      mnemonic,
      organizationId: account.id,
      signer: env.environment === 'production' ? services.exportSigner : null,
    });
    return { events: [changed(wallet, at)], reply: () => ({ status: 200, body: { id: account.id, encryptedWalletCredentials } }) };
  });
}

export const authRoutes: Route[] = [
  route<CreateInput>({
    method: 'POST',
    path: '/auth/credentials',
    summary: "Register a credential on an embedded wallet: 201 for the account's first, else 202 then 201 on the signed retry",
    tag: 'Credentials and sessions',
    body: validator(CreateCredential),
    response: AuthMethodView,
    status: 201,
    alsoAnswers: [{ status: 202, response: SignedRequestChallengeView }],
    handle: createCredential,
  }),
  route<undefined, Static<typeof AccountQuery>>({
    method: 'GET',
    path: '/auth/credentials',
    summary: "List an embedded wallet's credentials (not paginated)",
    tag: 'Credentials and sessions',
    query: validator(AccountQuery, { coerce: true }),
    response: Obj({ data: List(AuthMethodView) }),
    status: 200,
    handle: async ({ services, env, query }) => {
      const account = accountOf(services, env, query.accountId);
      await services.engine.settled();
      const wallet = services.world.wallets.ofAccount(account.id);
      return { status: 200, body: { data: wallet === undefined ? [] : wallet.credentials.map((c) => renderAuthMethod(wallet, c)) } };
    },
  }),
  route<Static<typeof ChallengeBody>>({
    method: 'POST',
    path: '/auth/credentials/{id}/challenge',
    summary: 'Re-issue a challenge: a new OTP (EMAIL_OTP) or a PasskeyAuthChallenge bound to clientPublicKey; one per 30 s',
    tag: 'Credentials and sessions',
    body: validator(ChallengeBody),
    response: Type.Union([AuthMethodView, PasskeyAuthChallengeView]),
    status: 200,
    handle: challenge,
  }),
  route<VerifyInput>({
    method: 'POST',
    path: '/auth/credentials/{id}/verify',
    summary: 'Verify a credential and open a session whose signing key is sealed to clientPublicKey',
    tag: 'Credentials and sessions',
    body: validator(VerifyBody),
    response: SessionView,
    status: 200,
    handle: verify,
  }),
  route({
    method: 'DELETE',
    path: '/auth/credentials/{id}',
    summary: "Revoke a credential and its sessions (signed retry by another credential's session: 202, then 204)",
    tag: 'Credentials and sessions',
    status: 204,
    alsoAnswers: [{ status: 202, response: SignedRequestChallengeView }],
    handle: revokeCredentialRoute,
  }),
  route<undefined, Static<typeof AccountQuery>>({
    method: 'GET',
    path: '/auth/sessions',
    summary: "List an embedded wallet's active sessions",
    tag: 'Credentials and sessions',
    query: validator(AccountQuery, { coerce: true }),
    response: Obj({ data: List(SessionListItem) }),
    status: 200,
    handle: async ({ services, env, query }) => {
      const account = accountOf(services, env, query.accountId);
      await services.engine.settled();
      const now = services.engine.clock.now();
      const wallet = services.world.wallets.ofAccount(account.id);
      const live = wallet === undefined ? [] : wallet.sessions.filter((s) => s.expiresAt > now);
      return { status: 200, body: { data: live.map((s) => renderSession(wallet!, s)) } };
    },
  }),
  route({
    method: 'DELETE',
    path: '/auth/sessions/{id}',
    summary: 'Revoke a session (signed retry, self-logout allowed: 202, then 204)',
    tag: 'Credentials and sessions',
    status: 204,
    alsoAnswers: [{ status: 202, response: SignedRequestChallengeView }],
    handle: revokeSessionRoute,
  }),
  route<Static<typeof ExportBody>>({
    method: 'POST',
    path: '/internal-accounts/{id}/export',
    summary: "Export an embedded wallet's mnemonic sealed to clientPublicKey (signed retry: 202, then 200)",
    tag: 'Internal accounts',
    body: validator(ExportBody),
    response: ExportView,
    status: 200,
    alsoAnswers: [{ status: 202, response: SignedRequestChallengeView }],
    handle: exportWallet,
  }),
];

/** Fails to compile when the published view and the domain's drift apart. */
export type AuthMethodViewCheck = Holds<Same<Static<typeof AuthMethodView>, import('../../../actors/wallet.js').AuthMethodView>>;
/** The session as listed (the signing key goes out only once, when the session is made). */
export type SessionViewCheck = Holds<Same<Static<typeof SessionListItem>, import('../../../actors/wallet.js').SessionView>>;
