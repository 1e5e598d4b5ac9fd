// Passkeys for PASSKEY credentials, verified as WebAuthn ceremonies for the environment's
// relying party (embeddedWalletConfig.webauthn) with @simplewebauthn/server. Registration
// checks the attestation (type, challenge, origin, rpId hash, user presence and
// verification, the attestation statement of its format) and yields the COSE public key to
// keep; an assertion is checked against that key, and its signature counter must move
// forward unless the authenticator keeps none (both 0), so a replayed assertion fails.
//
// Binary fields arrive as base64url (SERVICE_SPEC part 5.7); standard base64 is accepted
// too, since browsers' ArrayBuffer-to-string helpers often produce it.
import type * as SimpleWebauthn from '@simplewebauthn/server';
import type { PasskeyAssertion, PasskeyAttestation } from '../../actors/commands/wallet.js';
import type { WebauthnConfig } from '../../actors/platform.js';
import { WalletAuthError } from './errors.js';

/**
 * @simplewebauthn/server, loaded at the first ceremony: it is a third of the service's module
 * loading (about 0.3 s), which a service that never sees a passkey (and every restart) is spared.
 */
let simpleWebauthn: Promise<typeof SimpleWebauthn> | undefined;
const webauthnLibrary = (): Promise<typeof SimpleWebauthn> => (simpleWebauthn ??= import('@simplewebauthn/server'));

/** WebAuthn Level 3's AuthenticatorTransport values: hints for later ceremonies, not verified. */
export type PasskeyTransport = 'ble' | 'cable' | 'hybrid' | 'internal' | 'nfc' | 'smart-card' | 'usb';
const TRANSPORTS: readonly PasskeyTransport[] = ['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'];

/** The relying party a ceremony must have been made for. */
export type RelyingParty = Pick<WebauthnConfig, 'rpId' | 'origins'>;

export interface RegisteredPasskey {
  /** base64url */
  credentialId: string;
  /** COSE_Key, base64url */
  publicKey: string;
  counter: number;
  /** The transports given that WebAuthn knows (others are ignored, as the spec asks of relying parties). */
  transports: PasskeyTransport[];
}

export async function verifyPasskeyRegistration(input: {
  attestation: PasskeyAttestation;
  expectedChallenge: string;
  webauthn: RelyingParty;
}): Promise<RegisteredPasskey> {
  const { attestation } = input;
  const credentialId = base64url(attestation.credentialId);
  const transports = TRANSPORTS.filter((t) => attestation.transports?.includes(t) === true);
  const { verifyRegistrationResponse } = await webauthnLibrary();
  let credential;
  try {
    const result = await verifyRegistrationResponse({
      response: {
        id: credentialId,
        rawId: credentialId,
        type: 'public-key',
        response: { clientDataJSON: base64url(attestation.clientDataJson), attestationObject: base64url(attestation.attestationObject) },
        clientExtensionResults: {},
      },
      expectedChallenge: base64url(input.expectedChallenge),
      expectedOrigin: [...input.webauthn.origins],
      expectedRPID: input.webauthn.rpId,
      requireUserVerification: true,
    });
    if (!result.verified) throw new Error('attestation not verified');
    credential = result.registrationInfo.credential;
  } catch (error) {
    throw new WalletAuthError('Invalid passkey registration', messageOf(error));
  }
  // The id the client names must be the one the authenticator put in its signed data.
  if (credential.id !== credentialId) throw new WalletAuthError('Invalid passkey registration', 'credentialId differs from the attested credential id');
  return { credentialId, publicKey: Buffer.from(credential.publicKey).toString('base64url'), counter: credential.counter, transports };
}

export interface StoredPasskey {
  credentialId: string;
  /** COSE_Key, base64url, as verifyPasskeyRegistration returned it */
  publicKey: string;
  counter: number;
}

/** Returns the counter to store; throws WalletAuthError('Invalid passkey signature') naming the failed check in `detail`. */
export async function verifyPasskeyAssertion(input: {
  assertion: PasskeyAssertion;
  expectedChallenge: string;
  webauthn: RelyingParty;
  credential: StoredPasskey;
}): Promise<{ newCounter: number }> {
  const { assertion, credential } = input;
  const credentialId = base64url(assertion.credentialId);
  if (credentialId !== credential.credentialId) throw new WalletAuthError('Invalid passkey signature', 'the assertion names another credential');
  const { verifyAuthenticationResponse } = await webauthnLibrary();
  try {
    const result = await verifyAuthenticationResponse({
      response: {
        id: credentialId,
        rawId: credentialId,
        type: 'public-key',
        response: {
          clientDataJSON: base64url(assertion.clientDataJson),
          authenticatorData: base64url(assertion.authenticatorData),
          signature: base64url(assertion.signature),
          ...(assertion.userHandle !== undefined ? { userHandle: base64url(assertion.userHandle) } : {}),
        },
        clientExtensionResults: {},
      },
      expectedChallenge: base64url(input.expectedChallenge),
      expectedOrigin: [...input.webauthn.origins],
      expectedRPID: input.webauthn.rpId,
      credential: { id: credential.credentialId, publicKey: new Uint8Array(Buffer.from(credential.publicKey, 'base64url')), counter: credential.counter },
      requireUserVerification: true,
    });
    if (!result.verified) throw new Error('signature not verified');
    return { newCounter: result.authenticationInfo.newCounter };
  } catch (error) {
    throw new WalletAuthError('Invalid passkey signature', messageOf(error));
  }
}

/** base64 or base64url in, unpadded base64url out (what WebAuthn's JSON forms carry). */
function base64url(value: string): string {
  return value.replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
