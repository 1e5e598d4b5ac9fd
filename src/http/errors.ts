// API errors: `{status, code, message, details?}` (CONTRACT.md), with `reason` on 401s.
// The HTTP layer throws ApiError; the domain throws DomainError (actors/errors.ts), which
// `fromDomainError` maps to its status. Anything else that escapes a handler is a bug and
// becomes a logged 500.
import { DomainError, type DomainErrorCode } from '../../actors/errors.js';

/** One offending field: a dotted path into the request (`address.country`, `query.limit`). */
export interface FieldError {
  field: string;
  message: string;
}

export type ErrorCode =
  | 'INVALID_INPUT'
  | 'INSUFFICIENT_BALANCE'
  | 'QUOTE_EXPIRED'
  | 'QUOTE_ALREADY_EXECUTED'
  | 'INSUFFICIENT_FUNDS'
  | 'ACCOUNT_CLOSED'
  | 'INVALID_CURRENCY_COMBINATION'
  | 'UMA_ADDRESS_TAKEN'
  | 'INVALID_ACCOUNT'
  | 'UNAUTHORIZED'
  | 'SANDBOX_ONLY'
  | 'NOT_FOUND'
  | 'UNSUPPORTED_VERSION'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'INTERNAL_ERROR'
  | 'SIMULATED_ERROR'
  | 'SERVICE_UNAVAILABLE'
  | 'CREDENTIAL_EXISTS'
  | 'LAST_CREDENTIAL'
  | 'LOOKUP_EXPIRED'
  | 'LOOKUP_ALREADY_USED'
  | 'MISSING_MANDATORY_PAYEE_DATA'
  | 'TRANSACTION_NOT_PENDING';

export interface ErrorBody {
  status: number;
  code: ErrorCode;
  message: string;
  reason?: string;
  details?: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly reason?: string,
    /** Seconds, for 429 and 503. */
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { status: this.status, code: this.code, message: this.message };
    if (this.reason !== undefined) body.reason = this.reason;
    if (this.details !== undefined) body.details = this.details;
    return body;
  }
}

/** The status of each domain error code (CONTRACT.md, and the README's extra codes). */
const DOMAIN_STATUS: Readonly<Record<DomainErrorCode, number>> = {
  INVALID_INPUT: 400,
  INVALID_CURRENCY_COMBINATION: 400,
  UMA_ADDRESS_TAKEN: 400,
  INVALID_ACCOUNT: 400,
  INSUFFICIENT_BALANCE: 400,
  QUOTE_EXPIRED: 400,
  QUOTE_ALREADY_EXECUTED: 409,
  INSUFFICIENT_FUNDS: 400,
  ACCOUNT_CLOSED: 400,
  NOT_FOUND: 404,
  CONFLICT: 409,
  SIMULATED_ERROR: 500,
  CREDENTIAL_EXISTS: 409,
  LAST_CREDENTIAL: 400,
  UNAUTHORIZED: 401,
  LOOKUP_EXPIRED: 400,
  LOOKUP_ALREADY_USED: 409,
  MISSING_MANDATORY_PAYEE_DATA: 400,
  TRANSACTION_NOT_PENDING: 409,
};

export function fromDomainError(err: DomainError): ApiError {
  return new ApiError(DOMAIN_STATUS[err.code], err.code, err.message, err.fields, err.reason);
}

export function invalidInput(errors: FieldError[], message?: string): ApiError {
  const first = errors[0];
  const text = message ?? (first === undefined ? 'invalid input' : `${first.field}: ${first.message}`);
  return new ApiError(400, 'INVALID_INPUT', text, errors);
}

export function invalidField(field: string, message: string): ApiError {
  return invalidInput([{ field, message }]);
}

export function notFound(what: string, id: string): ApiError {
  return new ApiError(404, 'NOT_FOUND', `${what} ${id} not found`);
}

export function unauthorized(reason: string): ApiError {
  return new ApiError(401, 'UNAUTHORIZED', reason, undefined, reason);
}

export function rateLimited(message: string, retryAfterSeconds: number): ApiError {
  return new ApiError(429, 'RATE_LIMITED', message, undefined, undefined, retryAfterSeconds);
}
