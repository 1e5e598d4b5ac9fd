// Wallet key material: BIP-39 mnemonics (English wordlist) and P-256 private keys, kept
// at rest sealed under the MasterKey (AES-256-GCM). The additional data binds each
// sealed value to its owner, so a sealed mnemonic copied onto another account's record
// does not open there.
import { entropyToMnemonic, mnemonicToSeedSync, validateMnemonic as bip39Validate } from '@scure/bip39';
import { wordlist as english } from '@scure/bip39/wordlists/english.js';
import { drawBytes } from '../engine/entropy.js';
import { decodeBase64Loose, toBase64, utf8, decodeUtf8Strict } from './bytes.js';
import type { MasterKey } from './master-key.js';
import { isValidPrivateKey } from './p256.js';

export type MnemonicWordCount = 12 | 15 | 18 | 21 | 24;

/** A fresh English BIP-39 mnemonic (default 24 words = 256 bits of entropy), from the process's Entropy. */
export function generateMnemonic(words: MnemonicWordCount = 24): string {
  return entropyToMnemonic(drawBytes((words / 3) * 4), english);
}

/** Mnemonic for given entropy (16..32 bytes, multiple of 4). For tests and fixtures. */
export function mnemonicFromEntropy(entropy: Uint8Array): string {
  return entropyToMnemonic(entropy, english);
}

/** True for a valid English BIP-39 mnemonic (word list and checksum). */
export function validateMnemonic(mnemonic: string): boolean {
  return bip39Validate(mnemonic, english);
}

/** BIP-39 seed (PBKDF2-HMAC-SHA512, 2048 rounds): for deriving chain keys later. */
export function mnemonicToSeed(mnemonic: string, passphrase = ''): Uint8Array {
  return mnemonicToSeedSync(mnemonic, passphrase);
}

const MNEMONIC_AAD_PREFIX = 'wallet-mnemonic:v1:';
const PRIVATE_KEY_AAD_PREFIX = 'p256-private-key:v1:';

/** Seals a wallet mnemonic for storage on `ownerId`'s record; returns base64. */
export function sealWalletMnemonic(masterKey: MasterKey, ownerId: string, mnemonic: string): string {
  if (!validateMnemonic(mnemonic)) throw new TypeError('refusing to seal an invalid BIP-39 mnemonic');
  return toBase64(masterKey.seal(utf8.encode(mnemonic), MNEMONIC_AAD_PREFIX + ownerId));
}

export function openWalletMnemonic(masterKey: MasterKey, ownerId: string, sealed: string): string {
  const bytes = decodeBase64Loose(sealed);
  if (bytes === undefined) throw new TypeError('sealed mnemonic is not base64');
  return decodeUtf8Strict(masterKey.open(bytes, MNEMONIC_AAD_PREFIX + ownerId));
}

/** Seals a P-256 private key (webhook key, export signer key) under `label`; returns base64. */
export function sealPrivateKey(masterKey: MasterKey, label: string, privateKey: Uint8Array): string {
  if (!isValidPrivateKey(privateKey)) throw new TypeError('refusing to seal an invalid P-256 private key');
  return toBase64(masterKey.seal(privateKey, PRIVATE_KEY_AAD_PREFIX + label));
}

export function openPrivateKey(masterKey: MasterKey, label: string, sealed: string): Uint8Array {
  const bytes = decodeBase64Loose(sealed);
  if (bytes === undefined) throw new TypeError('sealed private key is not base64');
  const key = new Uint8Array(masterKey.open(bytes, PRIVATE_KEY_AAD_PREFIX + label));
  if (!isValidPrivateKey(key)) throw new Error('sealed value is not a P-256 private key');
  return key;
}
