// The webhook outbox as a platform reads it (CONTRACT.md "Webhooks"): the events recorded
// with every payment change, their delivery status and attempts; redelivery, and a signed
// TEST event. Delivery itself is src/webhooks/delivery.ts.
import { Type, type Static } from '@sinclair/typebox';
import { DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES, webhookBody, type WebhookBody, type WebhookEvent } from '../../../actors/webhook-event.js';
import { redeliverWebhookEvent } from '../../../actors/commands/webhooks.js';
import { webhookEvent, webhookEventPage } from '../../../actors/queries/webhooks.js';
import { platformEnv } from '../../../actors/queries/records.js';
import { invalidField } from '../../../actors/errors.js';
import { PageQuery } from '../pagination.js';
import { route, type Reply, type Route } from '../route.js';
import { IdOf, ListOf } from '../schemas/resources.js';
import { RECORDED_WEBHOOKS } from '../schemas/webhooks.js';
import { List, Obj, Str, StringEnum, Text, validator } from '../validation.js';
import { isoTime } from '../../../actors/iso-time.js';

/** How the outbox has delivered an event so far. */
const deliveryState = {
  deliveryStatus: StringEnum(DELIVERY_STATUSES),
  attempts: List(Obj({ at: Str({ format: 'date-time' }), statusCode: Type.Integer(), ms: Type.Integer() })),
  failureReason: Type.Optional(Str({ description: 'FAILED without its tries spent: why (dropped from a full backlog)' })),
};

const WebhookEventView = Type.Union(
  RECORDED_WEBHOOKS.map((payload) => Obj({ ...payload.properties, ...deliveryState })),
  { $id: 'WebhookEvent', description: 'A recorded event: the payload its endpoint gets, told apart by type, and its delivery' },
);

const EndpointStateView = Obj(
  {
    state: StringEnum(['UP', 'DOWN'] as const),
    downSince: Type.Optional(Str({ format: 'date-time' })),
    nextAttemptAt: Type.Optional(Str({ format: 'date-time', description: 'when the oldest pending event is tried next, if it waits' })),
    unansweredTries: Type.Integer({ description: 'tries in a row the endpoint did not answer (no answer, 429, 502, 503, 504); at 3 it is DOWN and probed every 5 s doubling to 5 min' }),
  },
  { $id: 'WebhookEndpointState', description: 'the configured webhookEndpoint as its tries left it' },
);
/** The list envelope around the events, with the endpoint's state beside it. */
const EventList = Obj({ ...ListOf(WebhookEventView).properties, endpoint: EndpointStateView }, { $id: 'WebhookEventList' });

const ListEvents = Obj({ type: Type.Optional(StringEnum(WEBHOOK_EVENT_TYPES)), deliveryStatus: Type.Optional(StringEnum(DELIVERY_STATUSES)), ...PageQuery });
type ListQuery = Static<typeof ListEvents>;
const EventIdParam = validator(Obj({ id: IdOf('Webhook') }));
const TestBody = Obj({ url: Type.Optional(Text({ maxLength: 2048, description: 'http(s) URL, held to the same address rule as webhookEndpoint; the configured webhookEndpoint when left out' })) }, { $id: 'SendTestWebhookRequest' });
const TestResult = Obj({ url: Str(), delivered: Type.Boolean(), statusCode: Type.Integer({ description: "the endpoint's status; 0 when no answer came within 5 s" }) }, { $id: 'WebhookTestResult' });

interface WebhookEventListed extends WebhookBody {
  deliveryStatus: WebhookEvent['deliveryStatus'];
  attempts: Array<{ at: string; statusCode: number; ms: number }>;
  failureReason?: string;
}

function renderEvent(event: WebhookEvent): WebhookEventListed {
  const listed: WebhookEventListed = {
    ...webhookBody(event),
    deliveryStatus: event.deliveryStatus,
    attempts: event.attempts.map((a) => ({ at: isoTime(a.at), statusCode: a.statusCode, ms: a.ms })),
  };
  if (event.failureReason !== undefined) listed.failureReason = event.failureReason;
  return listed;
}

const eventReply = (event: WebhookEvent): Reply => ({ status: 200, body: renderEvent(event) });

export const webhookRoutes: Route[] = [
  route<undefined, ListQuery>({
    method: 'GET',
    path: '/webhooks/events',
    operationId: 'listWebhookEvents',
    summary: "List recorded webhook events, newest first, with the endpoint's state",
    tag: 'Webhooks',
    permission: 'VIEW',
    query: validator(ListEvents, { coerce: true }),
    response: EventList,
    status: 200,
    handle: async ({ read, ports, env, query }) => {
      const { type, deliveryStatus } = query;
      const page = await read(webhookEventPage, { envId: env.id, filter: { type, deliveryStatus }, page: query });
      return { status: 200, body: { ...page, data: page.data.map(renderEvent), endpoint: ports.webhooks.endpointState(env.id) } };
    },
  }),
  route({
    method: 'GET',
    path: '/webhooks/events/{id}',
    operationId: 'getWebhookEvent',
    summary: 'Read one webhook event',
    tag: 'Webhooks',
    permission: 'VIEW',
    params: EventIdParam,
    response: WebhookEventView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderEvent(await read(webhookEvent, { envId: env.id, eventId: params.id })) }),
  }),
  route({
    method: 'POST',
    path: '/webhooks/events/{id}/redeliver',
    operationId: 'redeliverWebhookEvent',
    summary: 'Queue a delivered or failed event again (a pending one is queued already)',
    tag: 'Webhooks',
    permission: 'MANAGE',
    params: EventIdParam,
    response: WebhookEventView,
    status: 200,
    handle: (ctx) => ctx.run(redeliverWebhookEvent, { envId: ctx.env.id, eventId: ctx.params.id }, eventReply),
  }),
  route<Static<typeof TestBody>>({
    method: 'POST',
    path: '/webhooks/test',
    operationId: 'sendTestWebhook',
    summary: 'Send a signed TEST event to `url` or the configured endpoint',
    tag: 'Webhooks',
    permission: 'MANAGE',
    body: validator(TestBody),
    response: TestResult,
    status: 200,
    handle: async ({ read, ports, env, body }) => {
      const configured = (await read(platformEnv, { envId: env.id })).config.webhookEndpoint;
      const url = body.url ?? configured;
      if (url === '') throw invalidField('url', 'is required when no webhookEndpoint is configured');
      // The same rule as a configured endpoint (a stored one is checked again: it may predate it).
      await ports.outboundTargets.check(env.environment, 'url', url);
      return { status: 200, body: await ports.webhooks.sendTest(env.id, url) };
    },
  }),
];
