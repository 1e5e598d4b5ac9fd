// Webhook commands (CONTRACT.md "Webhooks"): redelivery of a recorded event, and a TEST
// event for POST /sandbox/webhooks/test. Each event is an actor of its own; the delivery
// worker's tries run under it too.
import { newId } from '../../src/engine/ids.js';
import { DomainError, notFound } from '../errors.js';
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

/**
 * Records a TEST event for the environment's configured endpoint (held: the endpoint is
 * read from its configuration), in the environment's format; the delivery worker sends it
 * once the entry is durable. No endpoint: 400 WEBHOOK_ENDPOINT_NOT_SET, its message naming the
 * setting (the vendor's error has no field list).
 */
export const recordTestWebhook: DomainCommand<{ envId: string }, WebhookEvent> = {
  name: 'webhook.test',
  actors: ({ envId }) => [envId],
  decide: ({ envId }, world, at) => {
    if (world.envs.get(envId)!.config.webhookEndpoint === '') {
      throw new DomainError('WEBHOOK_ENDPOINT_NOT_SET', 'no webhookEndpoint is configured: set one with PATCH /config');
    }
    const id = newId('Webhook', at);
    return { events: [{ type: 'webhook.test.recorded', id, envId }], reply: () => world.webhookEvents.get(id)! };
  },
};
