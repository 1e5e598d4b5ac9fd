// Typed failures of the wallet cryptography library. Each carries a machine-readable
// `kind` (for the HTTP layer to branch on) and a human `reason` (safe to return in a
// 401 body: it names the failed check and never echoes secret material).

/** Why a `Service-Wallet-Signature` stamp was refused. */
export type StampErrorKind =
  /** The header could not be parsed: see `check` for the part that was wrong. */
  | 'STAMP_MALFORMED'
  /** Well-formed, but the signature does not verify over the payload with the stamped key. */
  | 'STAMP_SIGNATURE_INVALID'
  /** Well-formed, but the stamped public key is not one the caller accepts. */
  | 'STAMP_KEY_MISMATCH';

/** Which part of a malformed stamp was wrong. */
export type StampMalformedCheck =
  | 'HEADER' // missing, empty or too long
  | 'BASE64' // not base64url / base64
  | 'JSON' // not UTF-8 JSON, or not an object
  | 'FIELDS' // publicKey / scheme / signature missing or not strings
  | 'SCHEME' // scheme is not SIGNATURE_SCHEME_TK_API_P256
  | 'PUBLIC_KEY' // publicKey is not a compressed SEC1 P-256 point in hex
  | 'SIGNATURE'; // signature is not hex DER of an ECDSA P-256 signature

export interface StampFailure {
  readonly kind: StampErrorKind;
  /** Present when kind is STAMP_MALFORMED. */
  readonly check?: StampMalformedCheck;
  readonly reason: string;
}

export class StampError extends Error implements StampFailure {
  override readonly name = 'StampError';
  readonly kind: StampErrorKind;
  readonly check?: StampMalformedCheck;
  readonly reason: string;

  constructor(failure: StampFailure) {
    super(failure.reason);
    this.kind = failure.kind;
    if (failure.check !== undefined) this.check = failure.check;
    this.reason = failure.reason;
  }
}

/** A `clientPublicKey` (or any public key input) that is not acceptable. */
export class InvalidPublicKeyError extends Error {
  override readonly name = 'InvalidPublicKeyError';
  readonly kind = 'INVALID_PUBLIC_KEY' as const;
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** A sealed bundle (session or export) that cannot be opened or fails its checks. */
export class BundleError extends Error {
  override readonly name = 'BundleError';
  readonly kind = 'INVALID_BUNDLE' as const;
  constructor(readonly reason: string, options?: { cause?: unknown }) {
    super(reason, options);
  }
}

/** The crypto worker pool has a full queue: the caller should answer 429/503 and retry later. */
export class CryptoOverloadedError extends Error {
  override readonly name = 'CryptoOverloadedError';
  readonly kind = 'CRYPTO_OVERLOADED' as const;
  constructor(readonly queued: number, readonly limit: number) {
    super(`crypto worker pool is overloaded (${queued} tasks waiting, limit ${limit})`);
  }
}
