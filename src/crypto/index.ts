// Public surface of the wallet cryptography library. The HTTP layer should need only
// this module (plus master-key.ts for loading the MasterKey).
export {
  BundleError,
  CryptoOverloadedError,
  InvalidPublicKeyError,
  StampError,
  type StampErrorKind,
  type StampFailure,
  type StampMalformedCheck,
} from './errors.js';
export {
  checkClientPublicKey,
  checkSessionClientKey,
  CLIENT_PUBLIC_KEY_RE,
  compressPublicKey,
  decompressPublicKey,
  generateP256KeyPair,
  keyPairFromPrivateKey,
  keyPairToHex,
  parseClientPublicKey,
  parsePublicKey,
  signP256,
  verifyP256,
  type ClientPublicKeyCheck,
  type P256KeyPair,
  type P256KeyPairHex,
} from './p256.js';
export {
  assertStamp,
  createStamp,
  parseStamp,
  STAMP_SCHEME,
  verifyStamp,
  type ParsedStamp,
  type StampParseResult,
  type StampVerification,
  type VerifyStampInput,
} from './stamp.js';
export {
  issueSessionKey,
  openBundle,
  openSessionBundle,
  sealToBundle,
  TURNKEY_HPKE_INFO,
  turnkeyHpkeOpen,
  turnkeyHpkeSeal,
  type IssuedSessionKey,
} from './session-bundle.js';
export {
  createExportBundle,
  enclaveBundle,
  EXPORT_BUNDLE_VERSION,
  openExportBundle,
  type CreateExportBundleParams,
  type ExportSigner,
  type OpenedExportBundle,
  type OpenExportBundleParams,
} from './export-bundle.js';
export { openOtpBundle, otpTargetBundle, type EncryptedOtp } from './otp-bundle.js';
export { signWebhookBody, verifyWebhookSignature } from './webhook-signature.js';
export {
  generateMnemonic,
  mnemonicFromEntropy,
  mnemonicToSeed,
  openPrivateKey,
  openWalletMnemonic,
  sealPrivateKey,
  sealWalletMnemonic,
  validateMnemonic,
  type MnemonicWordCount,
} from './wallet-secrets.js';
export { CryptoPool, createCryptoPool, DEFAULT_ROUTES, type CryptoOp, type CryptoPoolOptions, type CryptoPoolStats, type CryptoRoute } from './pool.js';
export { loadMasterKey, MasterKey } from './master-key.js';
export { EXPORT_SIGNER_KEY_NAME, loadOrCreateServiceKey } from './signer-key.js';
