// Embedded-wallet credentials and sessions (SERVICE_SPEC part 4 "Credentials and sessions",
// part 5; CONTRACT.md "Embedded-wallet API") and the wallet export, over HTTP: the schemas,
// and each route parsing its request and running the wallet's command
// (actors/commands/wallet-*.ts) with the service's WalletPorts (src/wallet/ports.ts), or
// reading its queries (actors/queries/wallet.ts).
import { Type, type Static } from '@sinclair/typebox';
import type { Holds, Same } from '../schemas/same-shape.js';
import { embeddedWalletConfigOf } from '../../../actors/platform.js';
import { CHALLENGE_INTERVAL_MS, CREDENTIAL_TYPES } from '../../../actors/wallet.js';
import type { WalletCommandInput } from '../../../actors/commands/wallet.js';
import { liveWalletSessions, walletCredentials } from '../../../actors/queries/wallet.js';
import { addWalletCredential, challengeWalletCredential, revokeWalletCredential, type ChallengedCredential, type IssuedAuthMethod } from '../../../actors/commands/wallet-credentials.js';
import { exportWallet, type ExportedWallet } from '../../../actors/commands/wallet-export.js';
import { refreshWalletSession, revokeWalletSession, verifyWalletCredential, type OpenedSession } from '../../../actors/commands/wallet-sessions.js';
import { updateWalletAccount } from '../../../actors/commands/wallet-account.js';
import type { InternalAccount } from '../../../actors/internal-account.js';
import { recordReply } from '../record-reply.js';
import { InternalAccountView } from '../schemas/resources.js';
import type { Signed, SignedRequestChallenge } from '../../../actors/commands/wallet-signed-request.js';
import { errorBody, statusOf } from '../errors.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { Email, IdOf } from '../schemas/resources.js';
import { List, Obj, Str, StringEnum, Text, validator, type Parsed } from '../validation.js';
import { API_VERSION } from '../server.js';

const Timestamp = Str({ format: 'date-time' });
const CredentialTypeSchema = StringEnum(CREDENTIAL_TYPES);
const AuthMethodView = Obj(
  {
    id: Str(),
    accountId: Str(),
    type: CredentialTypeSchema,
    nickname: Str(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'AuthMethod' },
);
/** What create and challenge answer for a credential: an EMAIL_OTP one names the key its new code may be encrypted to. */
const IssuedAuthMethodView = Obj(
  {
    ...AuthMethodView.properties,
    otpEncryptionTargetBundle: Type.Optional(
      Type.String({
        description:
          'EMAIL_OTP: JSON {version: "v1.0.0", data, dataSignature, enclaveQuorumPublic}; data is the hex of JSON {"targetPublic": uncompressed P-256 hex}, ' +
          'dataSignature the DER hex ECDSA P-256 SHA-256 over the data bytes by the service signer (embeddedWalletConfig.signerPublicKey), enclaveQuorumPublic that key. ' +
          'Encrypt the code to targetPublic for encryptedOtpBundle; each create and challenge makes a new target',
      }),
    ),
  },
  { $id: 'IssuedAuthMethod', description: 'An AuthMethod as create and challenge answer it: an EMAIL_OTP one names the key its new code may be encrypted to' },
);
const PasskeyAuthChallengeView = Obj(
  {
    ...AuthMethodView.properties,
    challenge: Str({ description: 'the WebAuthn challenge to assert: base64url SHA-256 of a session-creation payload naming clientPublicKey' }),
    requestId: Str({ description: 'a UUID: send it as Request-Id on the verify it answers' }),
    expiresAt: Timestamp,
  },
  { $id: 'PasskeyAuthChallenge' },
);
const ChallengeView = Type.Union([IssuedAuthMethodView, PasskeyAuthChallengeView], { $id: 'CredentialChallenge' });
const SessionListItem = Obj({ ...AuthMethodView.properties, expiresAt: Timestamp }, { $id: 'Session' });
const SessionView = Obj(
  {
    ...SessionListItem.properties,
    encryptedSessionSigningKey: Type.Optional(
      Type.String({ description: 'base58check HPKE bundle of the session private key, sealed to an uncompressed clientPublicKey; only here. Absent when clientPublicKey was compressed: that key is the session key' }),
    ),
  },
  { $id: 'OpenedSession', description: 'A new session, as verify answers it: the only answer that carries its sealed signing key' },
);
const SignedRequestChallengeView = Obj(
  {
    payloadToSign: Type.String({
      description:
        'the bytes to stamp, signed byte for byte (never re-serialised): the JSON {action, accountId, requestId, method, path, [credentialId|sessionId], [clientPublicKey], bodySha256, expiresAt} ' +
        'the service keeps and verifies against, bodySha256 being the SHA-256 hex of the canonical JSON body ({} for DELETE); on an encrypted-OTP verify, the verificationToken',
    }),
    requestId: Str({ description: 'Request:<uuid>: the retry sends it as Request-Id; single use' }),
    expiresAt: Str({ format: 'date-time', description: 'the retry must arrive before it (5 minutes after issue)' }),
    type: Type.Optional(
      StringEnum(CREDENTIAL_TYPES, { description: 'the credential type being added, being revoked, or that issued the session being revoked; absent for an export' }),
    ),
  },
  { $id: 'SignedRequestChallenge' },
);
const ExportView = Obj(
  {
    id: Str({ description: 'the InternalAccount id' }),
    encryptedWalletCredentials: Type.String({ description: 'JSON: version, data, dataSignature, enclaveQuorumPublic' }),
  },
  { $id: 'WalletExport' },
);

const STAMPED_RETRY =
  'Sign payloadToSign with that session key and send the same request again (same method, path and body) before expiresAt, ' +
  'with the stamp as Service-Wallet-Signature (or Grid-Wallet-Signature) and requestId as Request-Id. A requestId is single use, at most 16 are pending per wallet (else 429), ' +
  'and a refused retry changes nothing. A retry is refused with 401 and a reason: Request-Id unknown, Request-Id missing, Request-Id expired, Request-Id already used, ' +
  'Request-Id was issued for another request, Request body differs from the first request, clientPublicKey differs from the one bound at step 1, ' +
  'Invalid Service-Wallet-Signature, Session expired, Session revoked, Stamp must come from a session of another credential, Stamp must come from the session being refreshed.';

/** The 202 of a signed action's first step: `needs` says which stamp it takes, then how to send it. */
function signedRetryChallenge(needs: string): { status: 202; response: typeof SignedRequestChallengeView; description: string } {
  return { status: 202, response: SignedRequestChallengeView, description: `${needs}. ${STAMPED_RETRY}` };
}

const ClientPublicKey = Text({ maxLength: 130, description: 'uncompressed P-256 public key: 130 hex characters starting with 04' });
const SessionClientKey = Text({
  maxLength: 130,
  description:
    "P-256 public key in hex. Uncompressed (130 characters, 04): the session key is made by the service and sealed to it (encryptedSessionSigningKey). " +
    'Compressed (66 characters, 02 or 03): the client keeps its private key as the session key, and stamps are checked against this key',
});
const Token = Text({ minLength: 1, maxLength: 8192 });
const Attestation = Obj({
  credentialId: Text({ minLength: 1 }),
  clientDataJson: Text({ minLength: 1, maxLength: 8192 }),
  attestationObject: Text({ minLength: 1, maxLength: 16384 }),
  transports: Type.Optional(List(Text({ maxLength: 32 }), { maxItems: 10 })),
});
const Assertion = Obj({
  credentialId: Text({ minLength: 1 }),
  clientDataJson: Text({ minLength: 1, maxLength: 8192 }),
  authenticatorData: Text({ minLength: 1, maxLength: 8192 }),
  signature: Text({ minLength: 1 }),
  userHandle: Type.Optional(Text()),
});

const CreateCredential = Obj(
  {
    type: CredentialTypeSchema,
    accountId: IdOf('InternalAccount'),
    email: Type.Optional(Email),
    oidcToken: Type.Optional(Token),
    nickname: Type.Optional(Text({ minLength: 1, maxLength: 255 })),
    challenge: Type.Optional(Text({ minLength: 1 })),
    attestation: Type.Optional(Attestation),
  },
  { $id: 'CreateCredentialRequest' },
);
const ChallengeBody = Obj({ clientPublicKey: Type.Optional(SessionClientKey) }, { $id: 'ChallengeCredentialRequest' });
const VerifyBody = Obj(
  {
    otp: Type.Optional(Text({ minLength: 1, maxLength: 32 })),
    encryptedOtpBundle: Type.Optional(
      Text({
        minLength: 1,
        maxLength: 4096,
        description:
          'EMAIL_OTP, instead of otp: JSON {encappedPublic, ciphertext} (hex), HPKE as encryptedSessionSigningKey to the targetPublic of the latest otpEncryptionTargetBundle, ' +
          'over JSON {"otp_code", "public_key"}. A right code answers 202 whose payloadToSign is the verificationToken (ES256 JWT by the service signer); ' +
          'the same request again, stamped by the key of public_key with Request-Id, answers 200 with the session for that key',
      }),
    ),
    oidcToken: Type.Optional(Token),
    assertion: Type.Optional(Assertion),
    clientPublicKey: Type.Optional(SessionClientKey),
  },
  { $id: 'VerifyCredentialRequest' },
);
const ExportBody = Obj({ clientPublicKey: ClientPublicKey }, { $id: 'ExportWalletRequest' });
const RefreshBody = Obj({ clientPublicKey: SessionClientKey }, { $id: 'AuthSessionRefreshRequest' });
const UpdateAccountBody = Obj(
  { privateEnabled: Type.Optional(Type.Boolean({ description: 'wallet privacy of the embedded wallet' })) },
  { $id: 'InternalAccountUpdateRequest', description: 'At least one field. Step 1 binds it into payloadToSign; the retry repeats it' },
);
const AccountQuery = Obj({ accountId: IdOf('InternalAccount') });
const CredentialIdParam = validator(Obj({ id: IdOf('AuthMethod') }));
const SessionIdParam = validator(Obj({ id: IdOf('Session') }));
const AccountIdParam = validator(Obj({ id: IdOf('InternalAccount') }));
type IdParams = Parsed<typeof CredentialIdParam>;

/** What every wallet command gets: the ports to src/, and the environment as the request found it. */
function walletInput(ctx: RouteContext<unknown, unknown, unknown>): WalletCommandInput {
  const { ports, env } = ctx;
  return { ports: ports.wallet, env: { id: env.id, environment: env.environment, config: embeddedWalletConfigOf(env.config) } };
}

function versioned(path: string): string {
  return `/${API_VERSION}${path}`;
}

/** A signed action's reply: 202 with the payload to sign at step 1, `status` once the signed retry is done. */
function signedReply<R>(status: number): (outcome: Signed<R>) => Reply {
  return (outcome) => ('challenge' in outcome ? { status: 202, body: outcome.challenge } : { status, body: outcome.done });
}

function ok(body: unknown): Reply {
  return { status: 200, body };
}

type CreateInput = Static<typeof CreateCredential>;
type VerifyInput = Static<typeof VerifyBody>;

function createCredential(ctx: RouteContext<CreateInput, undefined>): Promise<Reply> {
  const input = { ...walletInput(ctx), body: ctx.body, path: versioned('/auth/credentials'), retry: ctx.headers };
  return ctx.run(addWalletCredential, input, signedReply(201));
}

function challenge(ctx: RouteContext<Static<typeof ChallengeBody>, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  return ctx.run(challengeWalletCredential, { ...walletInput(ctx), credentialId: id, clientPublicKey: ctx.body.clientPublicKey }, ok);
}

function verify(ctx: RouteContext<VerifyInput, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  const input = { ...walletInput(ctx), credentialId: id, proof: ctx.body, path: versioned(`/auth/credentials/${id}/verify`), headers: ctx.headers };
  const signed = signedReply<OpenedSession>(200);
  return ctx.run(verifyWalletCredential, input, (outcome) =>
    // A wrong OTP is refused with its spent try logged: a 401 that is not a thrown refusal.
    'refused' in outcome ? { status: statusOf(outcome.refused), body: errorBody(outcome.refused) } : signed(outcome),
  );
}

function revokeCredentialRoute(ctx: RouteContext<undefined, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  const input = { ...walletInput(ctx), credentialId: id, path: versioned(`/auth/credentials/${id}`), retry: ctx.headers };
  return ctx.run(revokeWalletCredential, input, signedReply(204));
}

function revokeSessionRoute(ctx: RouteContext<undefined, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  const input = { ...walletInput(ctx), sessionId: id, path: versioned(`/auth/sessions/${id}`), retry: ctx.headers };
  return ctx.run(revokeWalletSession, input, signedReply(204));
}

function exportWalletRoute(ctx: RouteContext<Static<typeof ExportBody>, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  const input = { ...walletInput(ctx), accountId: id, body: ctx.body, path: versioned(`/internal-accounts/${id}/export`), retry: ctx.headers };
  return ctx.run(exportWallet, input, signedReply(200));
}

function refreshSessionRoute(ctx: RouteContext<Static<typeof RefreshBody>, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  const input = { ...walletInput(ctx), sessionId: id, body: ctx.body, path: versioned(`/auth/sessions/${id}/refresh`), retry: ctx.headers };
  return ctx.run(refreshWalletSession, input, signedReply(201));
}

function updateAccountRoute(ctx: RouteContext<Static<typeof UpdateAccountBody>, undefined, IdParams>): Promise<Reply> {
  const { id } = ctx.params;
  const input = { ...walletInput(ctx), accountId: id, body: ctx.body, path: versioned(`/internal-accounts/${id}`), retry: ctx.headers };
  return ctx.run(updateWalletAccount, input, (outcome: Signed<InternalAccount>) => ('challenge' in outcome ? { status: 202, body: outcome.challenge } : recordReply(200, 'InternalAccount', outcome.done)));
}

export const authRoutes: Route[] = [
  route<CreateInput>({
    method: 'POST',
    path: '/auth/credentials',
    operationId: 'createCredential',
    summary: "Register a credential on an embedded wallet: 201 for the account's first, else 202 then 201 on the signed retry",
    tag: 'Credentials and sessions',
    permission: 'MANAGE',
    body: validator(CreateCredential),
    response: IssuedAuthMethodView,
    status: 201,
    alsoAnswers: [signedRetryChallenge("Step 1 of the account's second or later credential: it needs a stamp by a session of the account")],
    walletStamp: 'signed retry',
    handle: createCredential,
  }),
  route<undefined, Static<typeof AccountQuery>>({
    method: 'GET',
    path: '/auth/credentials',
    operationId: 'listCredentials',
    summary: "List an embedded wallet's credentials (not paginated)",
    tag: 'Credentials and sessions',
    permission: 'VIEW',
    query: validator(AccountQuery, { coerce: true }),
    response: Obj({ data: List(AuthMethodView) }, { $id: 'AuthMethodList' }),
    status: 200,
    handle: async ({ read, env, query }) => ({ status: 200, body: { data: await read(walletCredentials, { envId: env.id, accountId: query.accountId }) } }),
  }),
  route<Static<typeof ChallengeBody>, undefined, IdParams>({
    method: 'POST',
    path: '/auth/credentials/{id}/challenge',
    operationId: 'challengeCredential',
    summary: `Re-issue a challenge: a new OTP and the otpEncryptionTargetBundle to encrypt it to (EMAIL_OTP), or a PasskeyAuthChallenge bound to clientPublicKey; one per ${CHALLENGE_INTERVAL_MS / 1000} s`,
    tag: 'Credentials and sessions',
    permission: 'TRANSACT',
    body: validator(ChallengeBody),
    params: CredentialIdParam,
    response: ChallengeView,
    status: 200,
    handle: challenge,
  }),
  route<VerifyInput, undefined, IdParams>({
    method: 'POST',
    path: '/auth/credentials/{id}/verify',
    operationId: 'verifyCredential',
    summary:
      'Verify a credential and open a session: its signing key sealed to an uncompressed clientPublicKey, or a compressed clientPublicKey as the session key. ' +
      'An encryptedOtpBundle answers 202, then 200 on the retry stamped by its public_key',
    tag: 'Credentials and sessions',
    permission: 'TRANSACT',
    body: validator(VerifyBody),
    params: CredentialIdParam,
    response: SessionView,
    status: 200,
    alsoAnswers: [
      {
        status: 202,
        response: SignedRequestChallengeView,
        description:
          'EMAIL_OTP with encryptedOtpBundle and the right code: payloadToSign is the verificationToken, an ES256 JWT by the service signer (embeddedWalletConfig.signerPublicKey) ' +
          "whose id is the requestId. Send the same verify again before expiresAt with requestId as Request-Id and a stamp over the token by the key of the bundle's public_key " +
          '(sandbox: or the literal); it answers 200 with a session for that key',
      },
    ],
    walletStamp: 'signed retry',
    handle: verify,
  }),
  route({
    method: 'DELETE',
    path: '/auth/credentials/{id}',
    operationId: 'revokeCredential',
    summary: "Revoke a credential and its sessions (signed retry by another credential's session: 202, then 204)",
    tag: 'Credentials and sessions',
    permission: 'MANAGE',
    params: CredentialIdParam,
    status: 204,
    alsoAnswers: [signedRetryChallenge('Step 1: the revocation needs a stamp by a session of another credential of the account')],
    walletStamp: 'signed retry',
    handle: revokeCredentialRoute,
  }),
  route<undefined, Static<typeof AccountQuery>>({
    method: 'GET',
    path: '/auth/sessions',
    operationId: 'listSessions',
    summary: "List an embedded wallet's active sessions",
    tag: 'Credentials and sessions',
    permission: 'VIEW',
    query: validator(AccountQuery, { coerce: true }),
    response: Obj({ data: List(SessionListItem) }, { $id: 'SessionList' }),
    status: 200,
    handle: async ({ read, env, query }) => ({ status: 200, body: { data: await read(liveWalletSessions, { envId: env.id, accountId: query.accountId }) } }),
  }),
  route({
    method: 'DELETE',
    path: '/auth/sessions/{id}',
    operationId: 'revokeSession',
    summary: 'Revoke a session (signed retry, self-logout allowed: 202, then 204)',
    tag: 'Credentials and sessions',
    permission: 'TRANSACT',
    params: SessionIdParam,
    status: 204,
    alsoAnswers: [signedRetryChallenge('Step 1: the revocation needs a stamp by a live session of the account (the session itself may sign)')],
    walletStamp: 'signed retry',
    handle: revokeSessionRoute,
  }),
  route<Static<typeof RefreshBody>, undefined, IdParams>({
    method: 'POST',
    path: '/auth/sessions/{id}/refresh',
    permission: 'TRANSACT',
    operationId: 'refreshAuthSession',
    summary:
      'Replace a live session by a new one for clientPublicKey, with a full lifetime (signed retry by the session itself: 202, then 201); the refreshed session ends. ' +
      'Compressed key: the client keeps it as the session key; uncompressed: the new key comes sealed to it',
    tag: 'Credentials and sessions',
    body: validator(RefreshBody),
    params: SessionIdParam,
    response: SessionView,
    status: 201,
    alsoAnswers: [signedRetryChallenge('Step 1: the refresh needs a stamp by the session being refreshed, still live; the retry must carry the same clientPublicKey')],
    walletStamp: 'signed retry',
    handle: refreshSessionRoute,
  }),
  route<Static<typeof UpdateAccountBody>, undefined, IdParams>({
    method: 'PATCH',
    path: '/internal-accounts/{id}',
    permission: 'MANAGE',
    operationId: 'updateInternalAccount',
    summary: "Change an embedded wallet's settings (privateEnabled) by signed retry: 202, then 200 with the account",
    tag: 'Internal accounts',
    body: validator(UpdateAccountBody),
    params: AccountIdParam,
    response: InternalAccountView,
    status: 200,
    alsoAnswers: [signedRetryChallenge('Step 1: the update needs a stamp by a live session of the account; the retry must repeat the same fields')],
    walletStamp: 'signed retry',
    handle: updateAccountRoute,
  }),
  route<Static<typeof ExportBody>, undefined, IdParams>({
    method: 'POST',
    path: '/internal-accounts/{id}/export',
    operationId: 'exportWallet',
    summary: "Export an embedded wallet's mnemonic sealed to clientPublicKey (signed retry: 202, then 200)",
    tag: 'Internal accounts',
    permission: 'MANAGE',
    body: validator(ExportBody),
    params: AccountIdParam,
    response: ExportView,
    status: 200,
    alsoAnswers: [signedRetryChallenge('Step 1: the export needs a stamp by a session of the account; the retry must carry the same clientPublicKey')],
    walletStamp: 'signed retry',
    handle: exportWalletRoute,
  }),
];

/** Fails to compile when the published view and the domain's drift apart. */
export type AuthMethodViewCheck = Holds<Same<Static<typeof AuthMethodView>, import('../../../actors/wallet.js').AuthMethodView>>;
export type IssuedAuthMethodViewCheck = Holds<Same<Static<typeof IssuedAuthMethodView>, IssuedAuthMethod>>;
/** The session as listed (the signing key goes out only once, when the session is made). */
export type SessionViewCheck = Holds<Same<Static<typeof SessionListItem>, import('../../../actors/wallet.js').SessionView>>;
/** The new session, with its sealed signing key unless the client holds it. */
export type OpenedSessionViewCheck = Holds<Same<Static<typeof SessionView>, OpenedSession>>;
export type ChallengeViewCheck = Holds<Same<Static<typeof ChallengeView>, ChallengedCredential>>;
export type SignedRequestChallengeViewCheck = Holds<Same<Static<typeof SignedRequestChallengeView>, SignedRequestChallenge>>;
export type ExportViewCheck = Holds<Same<Static<typeof ExportView>, ExportedWallet>>;
