// Errors the domain raises when a request cannot be honoured: an API error code, a
// message, and the offending fields. The HTTP front (src/http/errors.ts) maps each code to
// its status. A failure inside `apply` is not one of these: it is a bug, a plain Error.

export type DomainErrorCode =
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
  | 'LOOKUP_EXPIRED'
  | 'LOOKUP_ALREADY_USED'
  | 'MISSING_MANDATORY_PAYEE_DATA'
  | 'TRANSACTION_NOT_PENDING';

/** One offending field: a dotted path into the request, and what is wrong; codes may add facts. */
export interface FieldProblem {
  field: string;
  message: string;
  readonly [fact: string]: unknown;
}

export class DomainError extends Error {
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly fields?: readonly FieldProblem[],
    /** UNAUTHORIZED: the check that failed, in the API's `reason` words. */
    readonly reason?: string,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export function invalidInput(fields: readonly FieldProblem[]): DomainError {
  const first = fields[0];
  return new DomainError('INVALID_INPUT', first === undefined ? 'invalid input' : `${first.field}: ${first.message}`, fields);
}

export function invalidField(field: string, message: string): DomainError {
  return invalidInput([{ field, message }]);
}

/** A refused wallet authorisation: `reason` names the failed check; `message` may say more. */
export function unauthorized(reason: string, message: string = reason): DomainError {
  return new DomainError('UNAUTHORIZED', message, undefined, reason);
}
