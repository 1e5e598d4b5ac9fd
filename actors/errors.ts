// The service's errors, one set: an API error code, a message, the offending fields, and
// for some codes a reason or a wait. The domain raises them when a request cannot be
// honoured, and so does the HTTP front for what it refuses before a route runs;
// src/http/errors.ts maps each code to its status in one table. A failure inside `apply`
// is not one of these: it is a bug, a plain Error.

export type ErrorCode =
  | 'INVALID_INPUT'
  | 'INVALID_CURRENCY_COMBINATION'
  | 'UMA_ADDRESS_TAKEN'
  | 'INVALID_ACCOUNT'
  | 'INSUFFICIENT_BALANCE'
  | 'QUOTE_EXPIRED'
  | 'QUOTE_ALREADY_EXECUTED'
  | 'INSUFFICIENT_FUNDS'
  | 'ACCOUNT_CLOSED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'SIMULATED_ERROR'
  | 'CREDENTIAL_EXISTS'
  | 'LAST_CREDENTIAL'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'TOKEN_NOT_FOUND'
  | 'LOOKUP_EXPIRED'
  | 'LOOKUP_ALREADY_USED'
  | 'MISSING_MANDATORY_PAYEE_DATA'
  | 'TRANSACTION_NOT_PENDING'
  | 'TRANSACTION_NOT_CANCELLABLE'
  | 'RATE_LIMITED'
  | 'WEBHOOK_ENDPOINT_NOT_SET'
  | 'WEBHOOK_DELIVERY_ERROR'
  // Raised by the HTTP front only:
  | 'SANDBOX_ONLY'
  | 'UNSUPPORTED_VERSION'
  | 'METHOD_NOT_ALLOWED'
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'LENGTH_REQUIRED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'INTERNAL_ERROR'
  | 'SERVICE_UNAVAILABLE';

/** One offending field: a dotted path into the request (`address.country`, `query.limit`), and what is wrong; codes may add facts. */
export interface FieldProblem {
  field: string;
  message: string;
  readonly [fact: string]: unknown;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fields?: readonly FieldProblem[],
    /** UNAUTHORIZED: the check that failed, in the API's `reason` words. */
    readonly reason?: string,
    /** RATE_LIMITED, SERVICE_UNAVAILABLE: seconds to wait before trying again (`Retry-After`). */
    readonly retryAfter?: number,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

/** INVALID_INPUT naming every offending field; the message defaults to the first. */
export function invalidInput(fields: readonly FieldProblem[], message?: string): DomainError {
  const first = fields[0];
  return new DomainError('INVALID_INPUT', message ?? (first === undefined ? 'invalid input' : `${first.field}: ${first.message}`), fields);
}

export function invalidField(field: string, message: string): DomainError {
  return invalidInput([{ field, message }]);
}

/**
 * The one 404 of a record: `field` is where the request named it (a path parameter or a
 * body field). A record of another environment gets the same answer as one that does not
 * exist, so the answer says nothing about other tenants.
 */
export function notFound(field: string, what: string, id: string): DomainError {
  return new DomainError('NOT_FOUND', `${what} ${id} not found`, [{ field, message: `no ${what} ${id} in this environment` }]);
}

/** A refused authorisation: `reason` names the failed check; `message` may say more. */
export function unauthorized(reason: string, message: string = reason): DomainError {
  return new DomainError('UNAUTHORIZED', message, undefined, reason);
}

export function rateLimited(message: string, retryAfterSeconds: number): DomainError {
  return new DomainError('RATE_LIMITED', message, undefined, undefined, retryAfterSeconds);
}
