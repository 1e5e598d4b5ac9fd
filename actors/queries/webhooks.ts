// Reads of the webhook outbox: one event, and the list with its filters, newest first.
import type { DeliveryStatus, WebhookEvent, WebhookEventType } from '../webhook-event.js';
import { webhookEventIn } from '../commands/webhooks.js';
import { paginate, paginateAll, type Page, type PageRequest } from '../page.js';
import type { DomainQuery } from '../world.js';

export interface WebhookEventFilter {
  type?: WebhookEventType;
  deliveryStatus?: DeliveryStatus;
}

export const webhookEventPage: DomainQuery<{ envId: string; filter: WebhookEventFilter; page: PageRequest }, Page<WebhookEvent>> = ({ envId, filter, page }, world) => {
  const events = world.webhookEvents;
  const ids = events.idsIn(envId);
  if (filter.type === undefined && filter.deliveryStatus === undefined) return paginateAll(ids, page, (id) => events.get(id)!, (e) => e);
  const select = (id: string): WebhookEvent | undefined => {
    const e = events.get(id)!;
    if (filter.type !== undefined && e.type !== filter.type) return undefined;
    if (filter.deliveryStatus !== undefined && e.deliveryStatus !== filter.deliveryStatus) return undefined;
    return e;
  };
  return paginate(ids, page, select, (e) => e);
};

export const webhookEvent: DomainQuery<{ envId: string; eventId: string }, WebhookEvent> = ({ envId, eventId }, world) => webhookEventIn(world, envId, eventId);
