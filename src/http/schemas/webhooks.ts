// What the service POSTs to a platform's webhookEndpoint (CONTRACT.md "Webhooks";
// actors/webhook-event.ts renders it): one payload per event type, published under the
// OpenAPI document's top-level `webhooks` with the signature header and what each answer
// does. GET /webhooks/events lists the recorded ones (every type but TEST) with their
// delivery state.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { FlatWebhookType } from '../../../actors/webhook-event.js';
import { ENVELOPE_TYPES } from '../../../actors/webhook-envelope.js';
import { APPROVAL_WINDOW_MS } from '../../../actors/incoming.js';
import { ENDPOINT_DOWN_AFTER, MAX_DELIVERY_TRIES } from '../../../actors/webhook-event.js';
import { DELIVERY_TIMEOUT_MS } from '../../webhooks/delivery.js';
import { TransactionView } from './payments.js';
import { CustomerView, ExternalAccountView, IdOf, InternalAccountView } from './resources.js';
import { VerificationView } from '../routes/verifications.js';
import { BulkImportJobView } from '../routes/bulk-imports.js';
import type { Holds, Same } from './same-shape.js';
import { Obj, Str, StringEnum } from '../validation.js';

const id = IdOf('Webhook');
const timestamp = Str({ format: 'date-time', description: 'when the change it reports was made' });

export const IncomingPaymentWebhook = Obj(
  { id, type: Type.Literal('INCOMING_PAYMENT'), timestamp, transaction: TransactionView },
  {
    $id: 'IncomingPaymentWebhook',
    description:
      'An incoming payment was created PENDING (its approval: see the answers) or settled; also money that raised a balance from outside ' +
      '(sandbox funding, transfer-in, realtime funding). The transaction as it was at that change',
  },
);

export const OutgoingPaymentWebhook = Obj(
  { id, type: Type.Literal('OUTGOING_PAYMENT'), timestamp, transaction: TransactionView },
  { $id: 'OutgoingPaymentWebhook', description: 'An outgoing transaction changed status (refunds included). The transaction as it was at that change' },
);

export const AccountStatusWebhook = Obj(
  { id, type: Type.Literal('ACCOUNT_STATUS'), timestamp, account: InternalAccountView },
  { $id: 'AccountStatusWebhook', description: "An internal account's balance changed. The account as that change left it" },
);

export const TestWebhook = Obj(
  { id, type: Type.Literal('TEST'), timestamp: Str({ format: 'date-time', description: 'when it was sent' }) },
  { $id: 'TestWebhook', description: 'POST /webhooks/test (not recorded) and POST /sandbox/webhooks/test (recorded, tried once): a signed event that reports nothing' },
);

/** webhookFormat ENVELOPE: every event, signed in X-Grid-Signature. */
export const EnvelopeWebhook = Obj(
  {
    id,
    type: StringEnum(ENVELOPE_TYPES, { description: "the vendor's OBJECT.EVENT type" }),
    timestamp,
    data: Type.Union([TransactionView, InternalAccountView, CustomerView, ExternalAccountView, VerificationView, BulkImportJobView, Obj({}, { description: 'TEST reports nothing' })], {
      description:
        'The resource as its GET showed it when the event was made: a Transaction (INCOMING_PAYMENT.*, OUTGOING_PAYMENT.*), an InternalAccount ' +
        '(INTERNAL_ACCOUNT.BALANCE_UPDATED), a Customer (CUSTOMER.*), an ExternalAccount (EXTERNAL_ACCOUNT.STATUS_UPDATED), a Verification (VERIFICATION.*), a BulkCustomerImportJob (BULK_UPLOAD.*); {} for TEST',
    }),
  },
  { $id: 'EnvelopeWebhook', description: 'An event of an environment whose webhookFormat is ENVELOPE (it keeps that format if the setting changes later)' },
);

/** The payloads of the events the outbox records: one per FLAT type, TEST, and the envelope. */
export const RECORDED_WEBHOOKS = [IncomingPaymentWebhook, OutgoingPaymentWebhook, AccountStatusWebhook, TestWebhook, EnvelopeWebhook] as const;

/** Fails to compile when a FLAT event type is added to the domain without a published payload, or the reverse. */
export type RecordedWebhookTypesCheck = Holds<Same<Static<typeof IncomingPaymentWebhook | typeof OutgoingPaymentWebhook | typeof AccountStatusWebhook | typeof TestWebhook>['type'], FlatWebhookType | 'TEST'>>;

export interface WebhookDefinition {
  /** Its key under the document's `webhooks`. */
  name: string;
  operationId: string;
  summary: string;
  payload: TSchema;
  /** What the platform's answer does, by status, status range (`2XX`) or `default`. */
  answers: Readonly<Record<string, string>>;
  /** Signed in X-Grid-Signature (webhookFormat ENVELOPE); else X-Service-Signature. */
  envelope?: true;
}

const DEADLINE = `within ${DELIVERY_TIMEOUT_MS / 1000} s`;
const RETRIED = `Not delivered: tried again 1 s later, doubling, ${MAX_DELIVERY_TRIES} tries in all, then FAILED (redeliverable). An endpoint that does not answer ${ENDPOINT_DOWN_AFTER} times in a row (no answer, 429, 502, 503, 504) is DOWN and probed on its own backoff without spending tries`;
const DELIVERED = `Delivered (any 2xx ${DEADLINE})`;

export const WEBHOOKS: readonly WebhookDefinition[] = [
  {
    name: 'incomingPayment',
    operationId: 'incomingPaymentWebhook',
    summary: 'INCOMING_PAYMENT: an incoming payment, or money from outside, reached an account',
    payload: IncomingPaymentWebhook,
    answers: {
      '200': 'Delivered. For the event of a PENDING incoming UMA payment (its approval, tried once, never retried): approve it',
      '202': `Delivered. For an approval: the platform calls POST /transactions/{transactionId}/approve or /reject within ${APPROVAL_WINDOW_MS / 1000} s, else the payment FAILS with PAYMENT_APPROVAL_TIMED_OUT`,
      '403': 'For an approval: reject the payment (REJECTED). Any other event: not delivered, retried',
      '2XX': `${DELIVERED}. For an approval, a 2xx other than 200 and 202 FAILS the payment with PAYMENT_APPROVAL_WEBHOOK_ERROR`,
      default: `For an approval: the payment FAILS with PAYMENT_APPROVAL_WEBHOOK_ERROR. ${RETRIED}`,
    },
  },
  {
    name: 'outgoingPayment',
    operationId: 'outgoingPaymentWebhook',
    summary: 'OUTGOING_PAYMENT: an outgoing transaction changed status',
    payload: OutgoingPaymentWebhook,
    answers: { '2XX': DELIVERED, default: RETRIED },
  },
  {
    name: 'accountStatus',
    operationId: 'accountStatusWebhook',
    summary: "ACCOUNT_STATUS: an internal account's balance changed",
    payload: AccountStatusWebhook,
    answers: { '2XX': DELIVERED, default: RETRIED },
  },
  {
    name: 'test',
    operationId: 'testWebhook',
    summary: 'TEST: sent by POST /webhooks/test and POST /sandbox/webhooks/test',
    payload: TestWebhook,
    answers: {
      '2XX': 'delivered: true in the POST /webhooks/test answer; a 200 of POST /sandbox/webhooks/test',
      default: `delivered: false, with the status (0: no answer ${DEADLINE}); a 400 WEBHOOK_DELIVERY_ERROR of POST /sandbox/webhooks/test. Never retried`,
    },
  },
  {
    name: 'envelope',
    operationId: 'envelopeWebhook',
    summary: 'ENVELOPE: every event of an environment whose webhookFormat is ENVELOPE, signed in X-Grid-Signature',
    payload: EnvelopeWebhook,
    envelope: true,
    answers: {
      '200': 'Delivered. For INCOMING_PAYMENT.PENDING of an incoming UMA payment: approve it (as incomingPayment describes)',
      '202': 'Delivered. For INCOMING_PAYMENT.PENDING: the platform approves or rejects later, as incomingPayment describes',
      '403': 'For INCOMING_PAYMENT.PENDING: reject the payment. Any other event: not delivered, retried',
      '2XX': DELIVERED,
      default: RETRIED,
    },
  },
];
