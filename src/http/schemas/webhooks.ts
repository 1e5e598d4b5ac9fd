// What the service POSTs to a platform's webhookEndpoint (CONTRACT.md "Webhooks";
// actors/webhook-event.ts renders it): one payload per event type, published under the
// OpenAPI document's top-level `webhooks` with the signature header and what each answer
// does. GET /webhooks/events lists the recorded ones (every type but TEST) with their
// delivery state.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import type { WebhookEventType } from '../../../actors/webhook-event.js';
import { APPROVAL_WINDOW_MS } from '../../../actors/incoming.js';
import { ENDPOINT_DOWN_AFTER, MAX_DELIVERY_TRIES } from '../../../actors/webhook-event.js';
import { DELIVERY_TIMEOUT_MS } from '../../webhooks/delivery.js';
import { TransactionView } from './payments.js';
import { IdOf, InternalAccountView } from './resources.js';
import type { Holds, Same } from './same-shape.js';
import { Obj, Str } from '../validation.js';

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
  { $id: 'TestWebhook', description: 'POST /webhooks/test: a signed event that reports nothing and is not recorded' },
);

/** The payloads of the events the outbox records, one per WebhookEventType. */
export const RECORDED_WEBHOOKS = [IncomingPaymentWebhook, OutgoingPaymentWebhook, AccountStatusWebhook] as const;

/** Fails to compile when an event type is added to the domain without a published payload, or the reverse. */
export type RecordedWebhookTypesCheck = Holds<Same<Static<(typeof RECORDED_WEBHOOKS)[number]>['type'], WebhookEventType>>;

export interface WebhookDefinition {
  /** Its key under the document's `webhooks`. */
  name: string;
  operationId: string;
  summary: string;
  payload: TSchema;
  /** What the platform's answer does, by status, status range (`2XX`) or `default`. */
  answers: Readonly<Record<string, string>>;
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
    summary: 'TEST: sent by POST /webhooks/test',
    payload: TestWebhook,
    answers: { '2XX': 'delivered: true in the POST /webhooks/test answer', default: `delivered: false, with the status (0: no answer ${DEADLINE}); never retried` },
  },
];
