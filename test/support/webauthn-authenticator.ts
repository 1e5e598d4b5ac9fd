// A software passkey authenticator for tests: a P-256 key made here, attestationObject
// (fmt "none") and authenticatorData assembled by hand in CBOR, clientDataJSON with type,
// challenge and origin, assertions signed over authenticatorData || SHA-256(clientDataJSON).
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';

/** The relying party the authenticator signs for unless told otherwise. */
export const RP = { rpId: 'acme.example', origins: ['https://acme.example', 'https://app.acme.example'] };
export const ORIGIN = 'https://acme.example';

type Cbor = number | string | Uint8Array | Map<Cbor, Cbor>;

/** Just the CBOR WebAuthn needs: unsigned and negative integers, byte and text strings, maps. */
function cbor(value: Cbor): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.of((major << 5) | n);
    if (n < 0x100) return Buffer.of((major << 5) | 24, n);
    if (n < 0x10000) return Buffer.of((major << 5) | 25, n >> 8, n & 0xff);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(n, 1);
    return b;
  };
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value);
  if (typeof value === 'string') {
    const bytes = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, bytes.length), bytes]);
  }
  if (value instanceof Uint8Array) return Buffer.concat([head(2, value.length), value]);
  const parts = [head(5, value.size)];
  for (const [k, v] of value) parts.push(cbor(k), cbor(v));
  return Buffer.concat(parts);
}

const sha256 = (data: Uint8Array | string): Buffer => createHash('sha256').update(data).digest();
export const b64u = (data: Uint8Array | string): string => Buffer.from(data).toString('base64url');

export const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
export const FLAG_AT = 0x40;

export class SoftwareAuthenticator {
  readonly credentialId = randomBytes(32);
  readonly #privateKey: KeyObject;
  readonly cose: Buffer;
  counter = 0;

  constructor() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.#privateKey = privateKey;
    const jwk = publicKey.export({ format: 'jwk' });
    // COSE_Key: kty EC2 (1: 2), alg ES256 (3: -7), crv P-256 (-1: 1), x (-2), y (-3).
    this.cose = cbor(new Map<Cbor, Cbor>([[1, 2], [3, -7], [-1, 1], [-2, Buffer.from(jwk.x!, 'base64url')], [-3, Buffer.from(jwk.y!, 'base64url')]]));
  }

  register(challenge: string, options: { origin?: string; rpId?: string; flags?: number; type?: string } = {}) {
    const clientDataJson = JSON.stringify({ type: options.type ?? 'webauthn.create', challenge, origin: options.origin ?? ORIGIN, crossOrigin: false });
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const authData = Buffer.concat([
      sha256(options.rpId ?? RP.rpId),
      Buffer.of(options.flags ?? FLAG_UP | FLAG_UV | FLAG_AT),
      Buffer.alloc(4), // signCount 0
      Buffer.alloc(16), // AAGUID: none
      idLength,
      this.credentialId,
      this.cose,
    ]);
    const attestationObject = cbor(new Map<Cbor, Cbor>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    return { credentialId: b64u(this.credentialId), clientDataJson: b64u(clientDataJson), attestationObject: b64u(attestationObject), transports: ['internal', 'hybrid', 'carrier-pigeon'] };
  }

  /** An assertion with the next counter (or `counter` as given: a cloned or replaying authenticator). */
  assert(challenge: string, options: { origin?: string; rpId?: string; flags?: number; counter?: number; signer?: KeyObject } = {}) {
    const counter = options.counter ?? ++this.counter;
    const clientDataJson = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: options.origin ?? ORIGIN, crossOrigin: false }));
    const signCount = Buffer.alloc(4);
    signCount.writeUInt32BE(counter);
    const authenticatorData = Buffer.concat([sha256(options.rpId ?? RP.rpId), Buffer.of(options.flags ?? FLAG_UP | FLAG_UV), signCount]);
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientDataJson)]), options.signer ?? this.#privateKey);
    return {
      credentialId: b64u(this.credentialId),
      clientDataJson: b64u(clientDataJson),
      authenticatorData: b64u(authenticatorData),
      signature: b64u(signature),
      userHandle: b64u('user-1'),
    };
  }
}

