// Webhook events (CONTRACT.md "Webhooks"): a transactional outbox. An event is written in
// the same log entry as the change it reports, so a change is never without its event nor
// an event without its change. Delivery (attempts, retries, signatures) is a later issue;
// until then every event waits as PENDING with no attempts.
//
// The body carries the transaction as it was rendered when the event was made: a later
// change of the transaction is a later event, and an old event keeps saying what it said.
import type { Appliers, RecordKind } from './registry.js';
import { bucket, type SortedIds } from './registry.js';
import type { PaymentRecorded, TransactionView } from './transaction.js';

export type WebhookEventType = 'INCOMING_PAYMENT' | 'OUTGOING_PAYMENT';
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = ['INCOMING_PAYMENT', 'OUTGOING_PAYMENT'];
export type DeliveryStatus = 'PENDING' | 'DELIVERED' | 'FAILED';
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['PENDING', 'DELIVERED', 'FAILED'];

export interface DeliveryAttempt {
  readonly at: number;
  readonly statusCode: number;
  readonly ms: number;
}

export interface WebhookEvent {
  /** `Webhook:<uuid>` */
  readonly id: string;
  readonly envId: string;
  readonly type: WebhookEventType;
  readonly timestamp: number;
  readonly transaction: TransactionView;
  readonly deliveryStatus: DeliveryStatus;
  readonly attempts: readonly DeliveryAttempt[];
}

/** What the platform's endpoint receives. */
export interface WebhookBody {
  id: string;
  type: WebhookEventType;
  timestamp: string;
  transaction: TransactionView;
}

export function webhookBody(event: WebhookEvent): WebhookBody {
  return { id: event.id, type: event.type, timestamp: new Date(event.timestamp).toISOString(), transaction: event.transaction };
}

/**
 * The webhook events, listed per environment in creation order (their UUIDv7 ids). Events
 * are only ever added by the entry that makes the change they report; no decision reads
 * this list.
 */
export class WebhookEvents implements RecordKind<WebhookEvent, PaymentRecorded> {
  readonly idPrefix = 'Webhook:';
  readonly #events = new Map<string, WebhookEvent>();
  readonly #byEnv = new Map<string, SortedIds>();
  readonly records: ReadonlyMap<string, WebhookEvent> = this.#events;

  readonly appliers: Appliers<PaymentRecorded> = {
    'payment.recorded': (event) => {
      for (const webhook of event.webhooks) {
        if (this.#events.has(webhook.id)) throw new Error(`webhook event ${webhook.id} exists already`);
        this.restore(webhook);
      }
    },
  };

  restore(event: WebhookEvent): void {
    this.#events.set(event.id, event);
    bucket(this.#byEnv, event.envId).insert(event.id);
  }

  checkInvariants(): string[] {
    return [];
  }

  get(id: string): WebhookEvent | undefined {
    return this.#events.get(id);
  }

  idsIn(envId: string): readonly string[] {
    return this.#byEnv.get(envId)?.ids ?? [];
  }
}
