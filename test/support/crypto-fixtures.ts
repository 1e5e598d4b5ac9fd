// Shared helpers for the crypto-*.test.ts files.
import { ApiKeyStamper } from '@turnkey/api-key-stamper';
import { decryptExportBundle } from '@turnkey/crypto';
import { generateP256KeyPair, keyPairToHex, type P256KeyPairHex } from '../../src/crypto/p256.js';

export const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));
export const toHexString = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const ascii = (s: string): Uint8Array => new TextEncoder().encode(s);

export function newKeyPairHex(): P256KeyPairHex {
  return keyPairToHex(generateP256KeyPair());
}

/**
 * Opens an export bundle as an integrator does, with @turnkey/crypto's decryptExportBundle,
 * trusting `signerPublicKey` (hex) where Turnkey's enclave key would be: the mnemonic.
 */
export function decryptExportAsIntegrator(bundle: string, embeddedKey: string, organizationId: string, signerPublicKey: string): Promise<string> {
  return decryptExportBundle({ exportBundle: bundle, embeddedKey, organizationId, dangerouslyOverrideSignerPublicKey: signerPublicKey, returnMnemonic: true });
}

/** A header value made by Turnkey's own ApiKeyStamper (Node runtime: OpenSSL signer). */
export async function turnkeyStamp(payload: string, key: P256KeyPairHex): Promise<string> {
  const stamper = new ApiKeyStamper({ apiPublicKey: key.publicKeyCompressed, apiPrivateKey: key.privateKey });
  return (await stamper.stamp(payload)).stampHeaderValue;
}

export function encodeStampJson(value: unknown, encoding: 'base64url' | 'base64' = 'base64url'): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString(encoding);
}

export function decodeStampJson(header: string): { publicKey: string; scheme: string; signature: string } {
  return JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { publicKey: string; scheme: string; signature: string };
}

/**
 * RFC 9180 Appendix A.3.1: DHKEM(P-256, HKDF-SHA256), HKDF-SHA256, AES-128-GCM, base mode.
 * Values transcribed from the RFC text (draft-irtf-cfrg-hpke, section B.3.1 of the
 * final draft = RFC A.3.1).
 */
export const RFC9180_A3_1 = {
  mode: 0,
  kemId: 16,
  kdfId: 1,
  aeadId: 1,
  info: '4f6465206f6e2061204772656369616e2055726e',
  ikmE: '4270e54ffd08d79d5928020af4686d8f6b7d35dbe470265f1f5aa22816ce860e',
  pkEm: '04a92719c6195d5085104f469a8b9814d5838ff72b60501e2c4466e5e67b325ac98536d7b61a1af4b78e5b7f951c0900be863c403ce65c9bfcb9382657222d18c4',
  skEm: '4995788ef4b9d6132b249ce59a77281493eb39af373d236a1fe415cb0c2d7beb',
  ikmR: '668b37171f1072f3cf12ea8a236a45df23fc13b82af3609ad1e354f6ef817550',
  pkRm: '04fe8c19ce0905191ebc298a9245792531f26f0cece2460639e8bc39cb7f706a826a779b4cf969b8a0e539c7f62fb3d30ad6aa8f80e30f1d128aafd68a2ce72ea0',
  skRm: 'f3ce7fdae57e1a310d87f1ebbde6f328be0a99cdbcadf4d6589cf29de4b8ffd2',
  enc: '04a92719c6195d5085104f469a8b9814d5838ff72b60501e2c4466e5e67b325ac98536d7b61a1af4b78e5b7f951c0900be863c403ce65c9bfcb9382657222d18c4',
  sharedSecret: 'c0d26aeab536609a572b07695d933b589dcf363ff9d93c93adea537aeabb8cb8',
  key: '868c066ef58aae6dc589b6cfdd18f97e',
  baseNonce: '4e0bc5018beba4bf004cca59',
  exporterSecret: '14ad94af484a7ad3ef40e9f3be99ecc6fa9036df9d4920548424df127ee0d99f',
  plaintext: '4265617574792069732074727574682c20747275746820626561757479',
  encryptions: [
    { seq: 0, aad: '436f756e742d30', nonce: '4e0bc5018beba4bf004cca59', ct: '5ad590bb8baa577f8619db35a36311226a896e7342a6d836d8b7bcd2f20b6c7f9076ac232e3ab2523f39513434' },
    { seq: 1, aad: '436f756e742d31', nonce: '4e0bc5018beba4bf004cca58', ct: 'fa6f037b47fc21826b610172ca9637e82d6e5801eb31cbd3748271affd4ecb06646e0329cbdf3c3cd655b28e82' },
    { seq: 2, aad: '436f756e742d32', nonce: '4e0bc5018beba4bf004cca5b', ct: '895cabfac50ce6c6eb02ffe6c048bf53b7f7be9a91fc559402cbc5b8dcaeb52b2ccc93e466c28fb55fed7a7fec' },
    { seq: 4, aad: '436f756e742d34', nonce: '4e0bc5018beba4bf004cca5d', ct: '8787491ee8df99bc99a246c4b3216d3d57ab5076e18fa27133f520703bc70ec999dd36ce042e44f0c3169a6a8f' },
    { seq: 255, aad: '436f756e742d323535', nonce: '4e0bc5018beba4bf004ccaa6', ct: '2ad71c85bf3f45c6eca301426289854b31448bcf8a8ccb1deef3ebd87f60848aa53c538c30a4dac71d619ee2cd' },
    { seq: 256, aad: '436f756e742d323536', nonce: '4e0bc5018beba4bf004ccb59', ct: '10f179686aa2caec1758c8e554513f16472bd0a11e2a907dde0b212cbe87d74f367f8ffe5e41cd3e9962a6afb2' },
  ],
} as const;

/**
 * Same inputs as A.3.1 with AEAD AES-256-GCM (aead_id 2), the suite the service uses.
 * RFC 9180 prints no P-256/AES-256-GCM vector; these outputs were produced by this
 * library and agree with an unrelated HPKE implementation's AES-256-GCM regression
 * vector for the same inputs, and with the @noble primitives (checked in the test).
 */
export const A3_INPUTS_AES_256_GCM = {
  key: '642ebea3c09bfa219629599a318e0b88aa0a0996148df927dc5a981e22dabb86',
  baseNonce: '883881320125125689d28047',
  ctSeq0: '518c46e6810fbc55362f7d5995b0f54339d93664ca44e5c74d0f289c4f7983b4781b193de04ad3319f177244de',
} as const;
