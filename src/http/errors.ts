// API errors on the wire: `{status, code, message, details?}` (CONTRACT.md), with `reason`
// on 401s. Every error is a DomainError (actors/errors.ts, the one set of codes), thrown by
// a decision, a route or the front itself; ERROR_STATUS is the one table of their statuses.
// Anything else that escapes a handler is a bug and becomes a logged 500.
import { DomainError, type ErrorCode, type FieldProblem } from '../../actors/errors.js';

/** The status of each error code (CONTRACT.md, and the README's extra codes). */
const ERROR_STATUS: Readonly<Record<ErrorCode, number>> = {
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
  FORBIDDEN: 403,
  TOKEN_NOT_FOUND: 404,
  LOOKUP_EXPIRED: 400,
  LOOKUP_ALREADY_USED: 409,
  MISSING_MANDATORY_PAYEE_DATA: 400,
  TRANSACTION_NOT_PENDING: 409,
  TRANSACTION_NOT_CANCELLABLE: 409,
  RATE_LIMITED: 429,
  WEBHOOK_ENDPOINT_NOT_SET: 400,
  WEBHOOK_DELIVERY_ERROR: 400,
  SANDBOX_ONLY: 403,
  UNSUPPORTED_VERSION: 404,
  METHOD_NOT_ALLOWED: 405,
  IDEMPOTENCY_KEY_REUSED: 409,
  LENGTH_REQUIRED: 411,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
};

/** Every error code, for the published Error schema's enum: the compiler holds ERROR_STATUS to exactly the ErrorCode union. */
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

export interface ErrorBody {
  status: number;
  code: ErrorCode;
  message: string;
  reason?: string;
  details?: readonly FieldProblem[];
  /** The request's X-Request-Id, for a support ticket or a log search. */
  requestId?: string;
}

export function statusOf(err: DomainError): number {
  return ERROR_STATUS[err.code];
}

/** The body of `err`; the front adds the request id (a handler that answers an error has none). */
export function errorBody(err: DomainError, requestId?: string): ErrorBody {
  const body: ErrorBody = { status: statusOf(err), code: err.code, message: err.message };
  if (err.reason !== undefined) body.reason = err.reason;
  if (err.fields !== undefined) body.details = err.fields;
  if (requestId !== undefined) body.requestId = requestId;
  return body;
}
