// Refusals of the production credential checks (OTP, OIDC, WebAuthn). `reason` is the
// client-facing text of SERVICE_SPEC part 5.8 that the route puts in its 401 body;
// `detail` says which check failed, for logs only: it may name issuers, key ids or
// counters, never a secret (no codes, tokens or signatures).
export type WalletAuthReason =
  | 'Invalid OTP code'
  | 'Invalid OIDC token'
  | 'Invalid passkey signature'
  | 'Invalid passkey registration';

export class WalletAuthError extends Error {
  constructor(
    readonly reason: WalletAuthReason,
    readonly detail: string,
  ) {
    super(`${reason}: ${detail}`);
    this.name = 'WalletAuthError';
  }
}
