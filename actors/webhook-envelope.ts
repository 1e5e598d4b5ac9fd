// Webhooks in the data envelope (CONTRACT.md "Today's clients, second wave"): an
// environment whose `webhookFormat` is ENVELOPE gets `{id, type, timestamp, data}`, `type`
// in the vendor's OBJECT.EVENT form and `data` the resource as its GET shows it. This module
// names the vendor's type for a record as it is; actors/webhook-event.ts renders the body.
//
// The type is read off the record the event holds, not logged: the record is that of the
// event's moment (records are immutable), so every rendering of the event names the same
// type, and a status the verification kind adds later flows through by its name.
import type { BulkImportJob } from './bulk-import.js';
import type { Customer } from './customer.js';
import type { TransactionStatus } from './transaction.js';
import type { Verification } from './verification.js';

/** What an ENVELOPE endpoint receives; `data` is empty for TEST. */
export interface EnvelopeBody {
  id: string;
  type: string;
  timestamp: string;
  data: object;
}

/** The vendor's OUTGOING_PAYMENT events by transaction status: a rejection is a failure, a refund completed. */
const OUTGOING_EVENTS: Readonly<Record<TransactionStatus, string>> = {
  CREATED: 'OUTGOING_PAYMENT.PENDING',
  PENDING: 'OUTGOING_PAYMENT.PENDING',
  PROCESSING: 'OUTGOING_PAYMENT.PROCESSING',
  COMPLETED: 'OUTGOING_PAYMENT.COMPLETED',
  REJECTED: 'OUTGOING_PAYMENT.FAILED',
  FAILED: 'OUTGOING_PAYMENT.FAILED',
  REFUNDED: 'OUTGOING_PAYMENT.REFUND_COMPLETED',
  EXPIRED: 'OUTGOING_PAYMENT.EXPIRED',
};

/** The vendor's INCOMING_PAYMENT events, which have no PROCESSING nor EXPIRED: money on its way is pending, expired money failed. */
const INCOMING_EVENTS: Readonly<Record<TransactionStatus, string>> = {
  CREATED: 'INCOMING_PAYMENT.PENDING',
  PENDING: 'INCOMING_PAYMENT.PENDING',
  PROCESSING: 'INCOMING_PAYMENT.PENDING',
  COMPLETED: 'INCOMING_PAYMENT.COMPLETED',
  REJECTED: 'INCOMING_PAYMENT.FAILED',
  FAILED: 'INCOMING_PAYMENT.FAILED',
  REFUNDED: 'INCOMING_PAYMENT.REFUND_COMPLETED',
  EXPIRED: 'INCOMING_PAYMENT.FAILED',
};

export function paymentEnvelopeType(kind: 'INCOMING_PAYMENT' | 'OUTGOING_PAYMENT', status: TransactionStatus): string {
  return (kind === 'INCOMING_PAYMENT' ? INCOMING_EVENTS : OUTGOING_EVENTS)[status];
}

/** A balance change of an internal account (FLAT's ACCOUNT_STATUS). */
export const BALANCE_UPDATED = 'INTERNAL_ACCOUNT.BALANCE_UPDATED';
export const EXTERNAL_ACCOUNT_STATUS_UPDATED = 'EXTERNAL_ACCOUNT.STATUS_UPDATED';

/** The check statuses the vendor has a CUSTOMER event for; UNVERIFIED and a business's HOLD have none. */
const REPORTED_CHECK_STATUSES: ReadonlySet<string> = new Set(['PENDING', 'APPROVED', 'REJECTED']);

/** CUSTOMER.KYC_<status> for a person, CUSTOMER.KYB_<status> for a business; undefined where the vendor names none. */
export function customerEnvelopeType(customer: Customer): string | undefined {
  const [check, status] = customer.customerType === 'BUSINESS' ? ['KYB', customer.kybStatus] : ['KYC', customer.kycStatus];
  return status !== undefined && REPORTED_CHECK_STATUSES.has(status) ? `CUSTOMER.${check}_${status}` : undefined;
}

/** Whether an update of `before` into `after` is a CUSTOMER event: its KYC or KYB status moved to one the vendor names. */
export function customerStatusEvent(before: Customer, after: Customer): boolean {
  const moved = before.kycStatus !== after.kycStatus || before.kybStatus !== after.kybStatus;
  return moved && !after.isDeleted && customerEnvelopeType(after) !== undefined;
}

/**
 * The vendor's VERIFICATION events by verification status: its own names pass through
 * (RESOLVE_ERRORS, IN_PROGRESS, PENDING_MANUAL_REVIEW), PENDING waits for a review; an
 * UNVERIFIED standing has none.
 */
const VERIFICATION_EVENTS: Readonly<Record<string, string>> = {
  APPROVED: 'VERIFICATION.APPROVED',
  REJECTED: 'VERIFICATION.REJECTED',
  RESOLVE_ERRORS: 'VERIFICATION.RESOLVE_ERRORS',
  IN_PROGRESS: 'VERIFICATION.IN_PROGRESS',
  PENDING: 'VERIFICATION.PENDING_MANUAL_REVIEW',
  PENDING_MANUAL_REVIEW: 'VERIFICATION.PENDING_MANUAL_REVIEW',
};

export function verificationEnvelopeType(verification: Pick<Verification, 'verificationStatus'>): string | undefined {
  return Object.hasOwn(VERIFICATION_EVENTS, verification.verificationStatus) ? VERIFICATION_EVENTS[verification.verificationStatus] : undefined;
}

/** A bulk import's end: COMPLETED (row errors included) or FAILED (its file could not be read). */
export function bulkUploadEnvelopeType(job: Pick<BulkImportJob, 'status'>): string {
  return job.status === 'FAILED' ? 'BULK_UPLOAD.FAILED' : 'BULK_UPLOAD.COMPLETED';
}

/** Every type this service sends in the envelope. */
export const ENVELOPE_TYPES: readonly string[] = [
  ...new Set([
    ...Object.values(OUTGOING_EVENTS),
    ...Object.values(INCOMING_EVENTS),
    BALANCE_UPDATED,
    ...['KYC', 'KYB'].flatMap((check) => [...REPORTED_CHECK_STATUSES].map((status) => `CUSTOMER.${check}_${status}`)),
    EXTERNAL_ACCOUNT_STATUS_UPDATED,
    ...Object.values(VERIFICATION_EVENTS),
    'BULK_UPLOAD.COMPLETED',
    'BULK_UPLOAD.FAILED',
    'TEST',
  ]),
];

/** `Webhook:` and the UUID of `recordId`: the id of the one event a record's creation makes, derived when its entry applies. */
export function webhookIdOfRecord(recordId: string): string {
  return `Webhook:${recordId.slice(recordId.indexOf(':') + 1)}`;
}
