// The webhook outbox as a platform reads it (CONTRACT.md "Webhooks"): the events recorded
// with every payment change, their delivery status and attempts, each in the format it was
// made in; redelivery, and a signed TEST event (POST /webhooks/test, sent at once and not
// recorded; POST /sandbox/webhooks/test, the vendor's, recorded and sent by the delivery
// worker like any event). Delivery itself is src/webhooks/delivery.ts.
import { Type, type Static } from '@sinclair/typebox';
import { DELIVERY_STATUSES, WEBHOOK_EVENT_TYPES, webhookBody, type WebhookBody, type WebhookEvent } from '../../../actors/webhook-event.js';
import { recordTestWebhook, redeliverWebhookEvent } from '../../../actors/commands/webhooks.js';
import { DomainError } from '../../../actors/errors.js';
import type { EnvelopeBody } from '../../../actors/webhook-envelope.js';
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
const TestWebhookResponse = Obj(
  { url: Str({ description: 'the configured webhookEndpoint it was sent to' }), response_status: Type.Integer({ description: "the endpoint's status (a 2xx; any other is a 400 WEBHOOK_DELIVERY_ERROR)" }) },
  { $id: 'TestWebhookResponse' },
);
/** How long POST /sandbox/webhooks/test waits for its event's try: older events of the endpoint go first. */
const TEST_ANSWER_WAIT_MS = 15_000;

type WebhookEventListed = (WebhookBody | EnvelopeBody) & {
  deliveryStatus: WebhookEvent['deliveryStatus'];
  attempts: Array<{ at: string; statusCode: number; ms: number }>;
  failureReason?: string;
};

/** The event as its endpoint gets it, in its own format (not the environment's current one), with its delivery. */
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
    operationId: 'sendTestWebhookTo',
    summary: 'Send a signed TEST event to `url` or the configured endpoint, at once and unrecorded',
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
  route({
    method: 'POST',
    path: '/sandbox/webhooks/test',
    permission: 'MANAGE',
    operationId: 'sendTestWebhook',
    summary: "Record a TEST event for the configured endpoint and answer with its try (sandbox only): 200 on a 2xx, else 400 WEBHOOK_DELIVERY_ERROR",
    tag: 'Sandbox',
    response: TestWebhookResponse,
    status: 200,
    sandboxOnly: true,
    handle: async (ctx) => {
      const { ports, env, read } = ctx;
      const url = (await read(platformEnv, { envId: env.id })).config.webhookEndpoint;
      // A stored endpoint may predate the address rule: checked again, as POST /webhooks/test does.
      if (url !== '') await ports.outboundTargets.check(env.environment, 'webhookEndpoint', url);
      let made: WebhookEvent | undefined;
      await ctx.run(recordTestWebhook, { envId: env.id }, (event) => {
        made = event;
        return { status: 200, body: {} };
      });
      const tried = await ports.webhooks.triedWithin(made!.id, TEST_ANSWER_WAIT_MS);
      return testAnswer(url, made!.id, tried);
    },
  }),
];

/** The vendor's answer to sendTestWebhook: the endpoint's 2xx, else what kept it from one. */
function testAnswer(url: string, eventId: string, tried: WebhookEvent | undefined): Reply {
  const status = tried?.attempts.at(-1)?.statusCode;
  if (status === undefined) {
    throw new DomainError('WEBHOOK_DELIVERY_ERROR', `${eventId} was not tried within ${TEST_ANSWER_WAIT_MS / 1000} s: older events of the endpoint go first, or it is down; it stays queued`);
  }
  if (status < 200 || status >= 300) {
    throw new DomainError('WEBHOOK_DELIVERY_ERROR', status === 0 ? `${url} did not answer ${eventId} within 5 s` : `${url} answered ${eventId} with ${status}`);
  }
  return { status: 200, body: { url, response_status: status } };
}
