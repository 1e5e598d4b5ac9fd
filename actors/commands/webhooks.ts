// Webhook commands (CONTRACT.md "Webhooks"): redelivery of a recorded event. Each event is
// an actor of its own; the delivery worker's tries run under it too.
import { notFound } from '../errors.js';
import { decideRequeue, type WebhookEvent } from '../webhook-event.js';
import type { DomainCommand, World } from '../world.js';

/** The webhook event `id` of environment `envId`; a 404 names the path parameter `id`. */
export function webhookEventIn(world: World, envId: string, id: string): WebhookEvent {
  const event = world.webhookEvents.get(id);
  if (event?.envId !== envId) throw notFound('id', 'webhook event', id);
  return event;
}

/** Queues a delivered or failed event again; a pending one is queued already. */
export const redeliverWebhookEvent: DomainCommand<{ envId: string; eventId: string }, WebhookEvent> = {
  name: 'webhook.redeliver',
  actors: ({ envId, eventId }, world) => [webhookEventIn(world, envId, eventId).id],
  decide: ({ envId, eventId }, world) => ({
    events: decideRequeue(webhookEventIn(world, envId, eventId)),
    reply: () => world.webhookEvents.get(eventId)!,
  }),
};
