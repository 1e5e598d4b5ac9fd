// The derived-id scheme, in one place: a customer's id is `Customer:` and a UUIDv7 whose
// last byte is 00; the i-th account provisioned with it is `InternalAccount:` and the same
// UUID with last byte i + 1 (there are fewer than 255 currencies). So a customer's
// accounts sort right after it, as accounts made in the same millisecond would, and an
// account id alone says which customer and which provisioned currency it stands for: such
// an account needs no stored record until money first moves through it.
import { hexValue, newBaseId } from '../src/engine/ids.js';

export const CUSTOMER_PREFIX = 'Customer:';
const ACCOUNT_PREFIX = 'InternalAccount:';
const ACCOUNT_ID_LENGTH = ACCOUNT_PREFIX.length + 36;
const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A new customer's id: its accounts' ids are derived from it (newBaseId). */
export function newCustomerId(at: number): string {
  return newBaseId('Customer', at);
}

/**
 * What every derived account id of `customerId` starts with; `derivedAccountIdAt` ends it.
 * A listing of many accounts builds it once per customer.
 */
export function derivedAccountBase(customerId: string): string {
  return `${ACCOUNT_PREFIX}${customerId.slice(CUSTOMER_PREFIX.length, -2)}`;
}

/** The id of the `index`-th account provisioned with the customer whose derivedAccountBase is `base`. */
export function derivedAccountIdAt(base: string, index: number): string {
  return base + HEX_BYTE[index + 1]!;
}

export function derivedAccountId(customerId: string, index: number): string {
  return derivedAccountIdAt(derivedAccountBase(customerId), index);
}

/** True when `accountId` is one of `customerId`'s provisioned (derived) accounts, by the ids alone. */
export function isDerivedId(accountId: string, customerId: string): boolean {
  return (
    customerId.endsWith('00') &&
    !accountId.endsWith('00') &&
    accountId.length === ACCOUNT_ID_LENGTH &&
    accountId.slice(ACCOUNT_PREFIX.length, -2) === customerId.slice(CUSTOMER_PREFIX.length, -2)
  );
}

/** The customer and provisioned index a derived account id stands for, if its shape says it is one. */
export function derivedFrom(accountId: string): { customerId: string; index: number } | undefined {
  if (accountId.length !== ACCOUNT_ID_LENGTH || !accountId.startsWith(ACCOUNT_PREFIX)) return undefined;
  const high = hexValue(accountId.charCodeAt(ACCOUNT_ID_LENGTH - 2));
  const low = hexValue(accountId.charCodeAt(ACCOUNT_ID_LENGTH - 1));
  const index = high * 16 + low - 1;
  if (high < 0 || low < 0 || index < 0) return undefined;
  return { customerId: `${CUSTOMER_PREFIX}${accountId.slice(ACCOUNT_PREFIX.length, -2)}00`, index };
}

/**
 * A quote's execution draws one id, its outgoing transaction's (`Transaction:` and a
 * UUIDv7 ending in 00, like a customer's), and the other records it makes take the same
 * UUID with last byte 01, 02, ... in the order the execution makes them: the receiver's
 * transaction, then its webhook events. So the log names one id and applying the entry
 * makes the same ids on first apply and on replay; they sort right after the transaction,
 * as ids drawn one by one in the same millisecond would.
 */
export function newPaymentTransactionId(at: number): string {
  return newDerivingId('Transaction', at);
}

const QUOTE_PREFIX = 'Quote:';
const TRANSACTION_PREFIX = 'Transaction:';
const TRANSACTION_ID_LENGTH = TRANSACTION_PREFIX.length + 36;

/**
 * A quote executed as it is made (immediatelyExecute) and its payment share one UUID: the
 * quote's id is `Quote:` and a UUIDv7 ending in 00, its outgoing transaction's is the same
 * UUID after `Transaction:` (executionTransactionIdOf), and the payment's other ids derive
 * from that as any execution's do. So either of the payment's transactions names its quote
 * by its id alone (quoteIdSharedBy), and needs no record of its own while it is what the
 * quote makes it (actors/transaction.ts, derivedTransaction).
 */
export function newExecutedQuoteId(at: number): string {
  return newBaseId('Quote', at);
}

/** The outgoing transaction id of the immediate execution of the quote `quoteId` (a newExecutedQuoteId). */
export function executionTransactionIdOf(quoteId: string): string {
  return TRANSACTION_PREFIX + quoteId.slice(QUOTE_PREFIX.length);
}

/**
 * The quote whose UUID `transactionId` shares when it is the outgoing (last byte 00) or the
 * receiver's (02) transaction of an immediate execution; undefined for an id of another shape.
 * The quote may not exist: an execution of an earlier quote draws its own UUID.
 */
export function quoteIdSharedBy(transactionId: string): string | undefined {
  if (transactionId.length !== TRANSACTION_ID_LENGTH || !transactionId.startsWith(TRANSACTION_PREFIX)) return undefined;
  if (transactionId.charCodeAt(TRANSACTION_ID_LENGTH - 2) !== 0x30) return undefined;
  const last = transactionId.charCodeAt(TRANSACTION_ID_LENGTH - 1);
  if (last !== 0x30 && last !== 0x32) return undefined;
  return `${QUOTE_PREFIX}${transactionId.slice(TRANSACTION_PREFIX.length, -2)}00`;
}

/** A new id whose UUID ends in 00, from which the others of its step are derived (paymentIdsFrom, idsStartingAt). */
export function newDerivingId(kind: 'Transaction' | 'Webhook', at: number): string {
  return newBaseId(kind, at);
}

/** `first` (a newDerivingId), then the ids of its kind derived from it: each call the next. */
export function idsStartingAt(first: string, kind: 'Transaction' | 'Webhook'): () => string {
  const derived = paymentIdsFrom(first);
  let given = false;
  return () => {
    if (given) return derived(kind);
    given = true;
    return first;
  };
}

/**
 * What the ids of `kind` derived from a payment's transaction id start with: the id without
 * its last byte's two hex digits (a webhook step's stem; `+ HEX` of the byte makes the id
 * paymentIdsFrom gives at that byte).
 */
export function paymentStemOf(transactionId: string, kind: 'Transaction' | 'Webhook'): string {
  return `${kind}:${derivingUuidStem(transactionId)}`;
}

/**
 * Whether `stemId` (`<Kind>:` and a UUID without its last byte) is `paymentStemOf` the
 * transaction `transactionId`, compared in place (the snapshot's writer asks it of every
 * transaction a webhook step reports).
 */
export function isPaymentStemOf(stemId: string, transactionId: string): boolean {
  const stemAt = stemId.indexOf(':') + 1;
  const uuidAt = transactionId.indexOf(':') + 1;
  return stemAt > 0 && uuidAt > 0 && transactionId.length - uuidAt === stemId.length - stemAt + 2 && transactionId.startsWith(stemId.slice(stemAt), uuidAt);
}

/** The transaction id whose UUID is that of `stemId` (`<Kind>:` and a UUID without its last byte, as paymentStemOf gives it) with the last byte `byte`. */
export function transactionIdAtStem(stemId: string, byte: number): string {
  return TRANSACTION_PREFIX + stemId.slice(stemId.indexOf(':') + 1) + HEX_BYTE[byte]!;
}

/** The quote whose UUID is that of `stemId` (a webhook step's stem) with the last byte 00: a quote executed as it was made, whose step has that stem. */
export function quoteIdAtStem(stemId: string): string {
  return QUOTE_PREFIX + stemId.slice(stemId.indexOf(':') + 1) + '00';
}

/** A deriving id's UUID without its last byte's two hex digits. */
function derivingUuidStem(id: string): string {
  return id.slice(id.indexOf(':') + 1, -2);
}

/** The id of `kind` derived from a payment's transaction id at the last byte `byte` (1 to 255): paymentIdsFrom's `byte`-th. */
export function paymentIdAt(transactionId: string, kind: 'Transaction' | 'Webhook', byte: number): string {
  return paymentStemOf(transactionId, kind) + HEX_BYTE[byte]!;
}

/** The ids derived from a payment's transaction id, in order: each call the next (at most 255). */
export function paymentIdsFrom(transactionId: string): (kind: 'Transaction' | 'Webhook') => string {
  const uuid = derivingUuidStem(transactionId);
  let next = 1;
  return (kind) => {
    if (next > 0xff) throw new Error(`payment ${transactionId} derives more than 255 ids`);
    return `${kind}:${uuid}${HEX_BYTE[next++]!}`;
  };
}
