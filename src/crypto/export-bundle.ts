// Wallet export bundles (`encryptedWalletCredentials`), byte-compatible with
// @turnkey/crypto's decryptExportBundle:
//
//   bundle = JSON {version: "v1.0.0", data, dataSignature, enclaveQuorumPublic}
//   data   = hex( UTF-8( JSON {encappedPublic, ciphertext, organizationId} ) )
//
// encappedPublic is the 65-byte uncompressed HPKE enc (hex), ciphertext the AES-256-GCM
// output (hex) of the Turnkey HPKE profile (see session-bundle.ts) over the ASCII
// mnemonic. In production dataSignature is the DER hex of ECDSA P-256 SHA-256 over the
// *decoded* data bytes (the JSON text, not its hex), made by the service signer key
// whose uncompressed lowercase hex is enclaveQuorumPublic; in sandbox both are "".
// decryptExportBundle compares enclaveQuorumPublic with its trusted key as strings, so
// the key is always emitted as lowercase hex.
import { fromHex, isHex, toHex, utf8, decodeUtf8Strict } from './bytes.js';
import { BundleError, InvalidPublicKeyError } from './errors.js';
import { parseClientPublicKey, parsePublicKey, signP256, verifyP256, type P256KeyPair } from './p256.js';
import { turnkeyHpkeOpen, turnkeyHpkeSeal, type TurnkeyHpkeOptions } from './session-bundle.js';

export const EXPORT_BUNDLE_VERSION = 'v1.0.0';

/**
 * The key that signs production export bundles and every OTP encryption target (the
 * "enclave quorum" key of {@link enclaveBundle}).
 */
export type ExportSigner = Pick<P256KeyPair, 'privateKey' | 'publicKey'>;

/**
 * The signed envelope that export bundles and OTP encryption targets share: the JSON
 * string {version, data, dataSignature, enclaveQuorumPublic} with `data` the hex of
 * `dataBytes`, `dataSignature` the DER hex ECDSA P-256 SHA-256 over those bytes (not
 * their hex) and `enclaveQuorumPublic` the signer's uncompressed lowercase hex; both ""
 * when `signer` is null (a sandbox export).
 */
export function enclaveBundle(dataBytes: Uint8Array, signer: ExportSigner | null): string {
  return JSON.stringify({
    version: EXPORT_BUNDLE_VERSION,
    data: toHex(dataBytes),
    dataSignature: signer === null ? '' : toHex(signP256(dataBytes, signer.privateKey)),
    enclaveQuorumPublic: signer === null ? '' : toHex(signer.publicKey),
  });
}

export interface CreateExportBundleParams {
  /** Uncompressed P-256 public key, 130 hex characters (validated). */
  readonly clientPublicKey: string;
  /** The wallet's BIP-39 mnemonic; sealed as its ASCII bytes. */
  readonly mnemonic: string;
  /** The InternalAccount id; decryptExportBundle checks it. */
  readonly organizationId: string;
  /** Production: the service signer. Sandbox: null (unsigned bundle). */
  readonly signer: ExportSigner | null;
}

export function createExportBundle(params: CreateExportBundleParams, options: TurnkeyHpkeOptions = {}): string {
  const recipient = parseClientPublicKey(params.clientPublicKey);
  const { enc, ciphertext } = turnkeyHpkeSeal(recipient, utf8.encode(params.mnemonic), options);
  const signedJson = JSON.stringify({
    encappedPublic: toHex(enc),
    ciphertext: toHex(ciphertext),
    organizationId: params.organizationId,
  });
  return enclaveBundle(utf8.encode(signedJson), params.signer);
}

export interface OpenExportBundleParams {
  readonly bundle: string;
  /** The client private key (32 bytes) matching the clientPublicKey of the export. */
  readonly privateKey: Uint8Array;
  readonly organizationId: string;
  /**
   * Trusted signer public key (hex, either encoding). When given, the bundle must be
   * signed by exactly this key. When absent, an unsigned (sandbox) bundle is accepted and
   * a signed one is checked against the key it carries (integrity only, not authenticity).
   */
  readonly signerPublicKey?: string;
}

export interface OpenedExportBundle {
  readonly mnemonic: string;
  /** How the signature was checked: against the trusted key, the embedded key, or not signed. */
  readonly signature: 'trusted' | 'embedded' | 'unsigned';
}

function field(obj: Record<string, unknown>, name: string): string {
  const value = obj[name];
  if (typeof value !== 'string') throw new BundleError(`export bundle field ${name} must be a string`);
  return value;
}

/** `text` as a JSON object; a BundleError naming `what` otherwise. Shared with otp-bundle.ts. */
export function parseJsonObject(text: string, what: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new BundleError(`${what} is not JSON`, { cause });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new BundleError(`${what} is not a JSON object`);
  return parsed as Record<string, unknown>;
}

/** A P-256 public key in hex (either SEC1 form), as its 65 uncompressed bytes; a BundleError naming `what` otherwise. */
export function publicKeyBytes(hex: string, what: string): Uint8Array {
  if (!isHex(hex)) throw new BundleError(`${what} is not hex`);
  try {
    return parsePublicKey(fromHex(hex)).uncompressed;
  } catch (cause) {
    if (cause instanceof InvalidPublicKeyError) throw new BundleError(`${what}: ${cause.reason}`, { cause });
    throw cause;
  }
}

export function openExportBundle(params: OpenExportBundleParams): OpenedExportBundle {
  const outer = parseJsonObject(params.bundle, 'export bundle');
  const version = field(outer, 'version');
  if (version !== EXPORT_BUNDLE_VERSION) throw new BundleError(`unsupported export bundle version ${JSON.stringify(version)}`);
  const dataHex = field(outer, 'data');
  const signatureHex = field(outer, 'dataSignature');
  const quorumHex = field(outer, 'enclaveQuorumPublic');
  if (!isHex(dataHex) || dataHex.length === 0) throw new BundleError('export bundle data is not hex');
  const dataBytes = fromHex(dataHex);

  let signature: OpenedExportBundle['signature'];
  if (params.signerPublicKey !== undefined) {
    const trusted = publicKeyBytes(params.signerPublicKey, 'signer public key');
    if (quorumHex === '') throw new BundleError('export bundle is unsigned but a signer key was required');
    const embedded = publicKeyBytes(quorumHex, 'enclaveQuorumPublic');
    if (toHex(embedded) !== toHex(trusted)) throw new BundleError('export bundle is signed by a different key than the trusted signer');
    if (!isHex(signatureHex) || !verifyP256(dataBytes, fromHex(signatureHex), trusted)) {
      throw new BundleError('export bundle dataSignature does not verify');
    }
    signature = 'trusted';
  } else if (signatureHex === '' && quorumHex === '') {
    signature = 'unsigned';
  } else {
    const embedded = publicKeyBytes(quorumHex, 'enclaveQuorumPublic');
    if (!isHex(signatureHex) || !verifyP256(dataBytes, fromHex(signatureHex), embedded)) {
      throw new BundleError('export bundle dataSignature does not verify');
    }
    signature = 'embedded';
  }

  let text: string;
  try {
    text = decodeUtf8Strict(dataBytes);
  } catch (cause) {
    throw new BundleError('export bundle data is not UTF-8', { cause });
  }
  const inner = parseJsonObject(text, 'export bundle data');
  const organizationId = field(inner, 'organizationId');
  if (organizationId !== params.organizationId) {
    throw new BundleError(`export bundle is for organization ${JSON.stringify(organizationId)}, expected ${JSON.stringify(params.organizationId)}`);
  }
  const enc = publicKeyBytes(field(inner, 'encappedPublic'), 'encappedPublic');
  const ciphertextHex = field(inner, 'ciphertext');
  if (!isHex(ciphertextHex)) throw new BundleError('export bundle ciphertext is not hex');
  const plaintext = turnkeyHpkeOpen(enc, fromHex(ciphertextHex), params.privateKey);
  let mnemonic: string;
  try {
    mnemonic = decodeUtf8Strict(plaintext);
  } catch (cause) {
    throw new BundleError('export bundle plaintext is not text', { cause });
  }
  return { mnemonic, signature };
}
