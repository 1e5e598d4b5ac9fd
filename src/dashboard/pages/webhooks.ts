// Webhooks: the environment's recorded events with their delivery status and attempts,
// filtered and paged as GET /webhooks/events serves them; redelivery of an event; and a
// signed TEST event sent to the endpoint, with what it answered.
import { call, describe, type Page, type Token } from '../api.js';
import { h, show, statusBadge } from '../dom.js';
import type { DashboardPage, PageContext } from '../page.js';

interface Attempt {
  at: string;
  statusCode: number;
  ms: number;
}

interface WebhookEvent {
  id: string;
  type: string;
  timestamp: string;
  deliveryStatus: string;
  attempts: Attempt[];
  failureReason?: string;
}

interface EventList extends Page<WebhookEvent> {
  endpoint: { state: string; downSince?: string; nextAttemptAt?: string; unansweredTries: number };
}

interface TestResult {
  url: string;
  delivered: boolean;
  statusCode: number;
}

/** The filters' choices, as the API names them (docs/api.md, GET /webhooks/events). */
const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
const EVENT_TYPES = ['INCOMING_PAYMENT', 'OUTGOING_PAYMENT', 'ACCOUNT_STATUS'] as const;
const EVENTS_PER_PAGE = 20;

export const webhooksPage: DashboardPage = { name: 'Webhooks', path: 'webhooks', render: webhooks };

async function webhooks({ token, main }: PageContext): Promise<void> {
  const statusFilter = choice('filter-status', DELIVERY_STATUSES);
  const typeFilter = choice('filter-type', EVENT_TYPES);
  const listing = h('div', {});
  const attemptsArea = h('div', {});
  const outcome = h('p', { role: 'status' });
  /** Cursors of the pages before the one shown, so "Previous page" can go back. */
  const earlier: Array<string | undefined> = [];
  let cursor: string | undefined;

  const load = async (): Promise<void> => {
    const query = new URLSearchParams({ limit: String(EVENTS_PER_PAGE) });
    if (statusFilter.value !== '') query.set('deliveryStatus', statusFilter.value);
    if (typeFilter.value !== '') query.set('type', typeFilter.value);
    if (cursor !== undefined) query.set('cursor', cursor);
    const list = await call<EventList>(token, 'GET', `/webhooks/events?${query.toString()}`);
    show(listing, endpointState(list.endpoint), eventTable(list.data, { attempts: (event) => show(attemptsArea, attemptTable(event)), redeliver }), pager(list));
  };
  const reload = (): void => {
    load().catch((err: unknown) => show(outcome, describe(err)));
  };
  const redeliver = (event: WebhookEvent): void => {
    call<WebhookEvent>(token, 'POST', `/webhooks/events/${encodeURIComponent(event.id)}/redeliver`).then(
      (queued) => {
        show(outcome, `${queued.id} queued again: ${queued.deliveryStatus}.`);
        reload();
      },
      (err: unknown) => show(outcome, describe(err)),
    );
  };
  const fromFirstPage = (): void => {
    earlier.length = 0;
    cursor = undefined;
    reload();
  };

  function pager(list: EventList): HTMLElement {
    const previous = h('button', { type: 'button', disabled: earlier.length === 0 }, 'Previous page');
    previous.addEventListener('click', () => {
      cursor = earlier.pop();
      reload();
    });
    const next = h('button', { type: 'button', disabled: !list.hasMore || list.nextCursor === undefined }, 'Next page');
    next.addEventListener('click', () => {
      earlier.push(cursor);
      cursor = list.nextCursor;
      reload();
    });
    return h('p', {}, `${list.totalCount} events. `, previous, ' ', next);
  }

  const filters = h(
    'form',
    { 'aria-label': 'Filter webhook events' },
    h('label', { for: statusFilter.id }, 'Delivery status'),
    statusFilter,
    h('label', { for: typeFilter.id }, 'Event type'),
    typeFilter,
    h('button', { type: 'submit' }, 'Refresh events'),
  );
  filters.addEventListener('submit', (event) => {
    event.preventDefault();
    fromFirstPage();
  });
  statusFilter.addEventListener('change', fromFirstPage);
  typeFilter.addEventListener('change', fromFirstPage);

  show(main, h('h2', {}, 'Webhooks'), testEventForm(token), filters, outcome, listing, attemptsArea);
  await load();
}

/** The events, each row with its Attempts and Redeliver buttons. */
function eventTable(events: readonly WebhookEvent[], actions: { attempts(event: WebhookEvent): void; redeliver(event: WebhookEvent): void }): HTMLElement {
  const rows = events.map((event) => {
    const attemptsButton = h('button', { type: 'button', 'aria-label': `Show attempts of ${event.id}` }, 'Attempts');
    attemptsButton.addEventListener('click', () => actions.attempts(event));
    const redeliver = h('button', { type: 'button', 'aria-label': `Redeliver ${event.id}` }, 'Redeliver');
    redeliver.addEventListener('click', () => actions.redeliver(event));
    const last = event.attempts.at(-1);
    return h(
      'tr',
      {},
      h('th', { scope: 'row' }, event.id),
      h('td', {}, event.type),
      h('td', {}, statusBadge(event.deliveryStatus), event.failureReason === undefined ? null : ` (${event.failureReason})`),
      h('td', {}, event.attempts.length),
      h('td', {}, last === undefined ? '' : last.statusCode === 0 ? 'no answer' : last.statusCode),
      h('td', {}, attemptsButton, ' ', redeliver),
    );
  });
  return h(
    'table',
    { 'aria-label': 'Webhook events' },
    h('thead', {}, h('tr', {}, ...['Event', 'Type', 'Delivery status', 'Attempts', 'Last status code', 'Actions'].map((title) => h('th', { scope: 'col' }, title)))),
    h('tbody', {}, ...rows),
  );
}

/** A select of `values` with an "All" choice (the empty value: no filter). */
function choice(id: string, values: readonly string[]): HTMLSelectElement {
  return h('select', { id, name: id }, h('option', { value: '' }, 'All'), ...values.map((value) => h('option', { value }, value)));
}

function endpointState(endpoint: EventList['endpoint']): HTMLElement {
  const parts = [`Endpoint ${endpoint.state}`];
  if (endpoint.downSince !== undefined) parts.push(`down since ${endpoint.downSince}`);
  if (endpoint.nextAttemptAt !== undefined) parts.push(`next try at ${endpoint.nextAttemptAt}`);
  if (endpoint.unansweredTries > 0) parts.push(`${endpoint.unansweredTries} tries unanswered`);
  return h('p', {}, `${parts.join(', ')}.`);
}

function attemptTable(event: WebhookEvent): HTMLElement {
  const rows = event.attempts.map((attempt) => h('tr', {}, h('td', {}, attempt.at), h('td', {}, attempt.statusCode === 0 ? 'no answer' : attempt.statusCode), h('td', {}, attempt.ms)));
  return h(
    'table',
    { 'aria-label': `Attempts of ${event.id}` },
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'At'), h('th', { scope: 'col' }, 'Status code'), h('th', { scope: 'col' }, 'Milliseconds'))),
    h('tbody', {}, ...rows),
  );
}

/** "Send test event": to the URL given, else (the API's default) the configured endpoint. */
function testEventForm(token: Token): HTMLElement {
  const url = h('input', { id: 'test-url', name: 'url', type: 'text', inputmode: 'url', placeholder: 'the configured endpoint' });
  const result = h('p', { role: 'status', 'aria-label': 'Test event result' });
  const form = h('form', { 'aria-label': 'Send a test event' }, h('label', { for: 'test-url' }, 'Test event URL (empty: the configured endpoint)'), url, h('button', { type: 'submit' }, 'Send test event'), result);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    show(result, 'Sending…');
    const target = url.value.trim();
    call<TestResult>(token, 'POST', '/webhooks/test', target === '' ? {} : { url: target }).then(
      (sent) => show(result, `${sent.delivered ? 'Delivered' : 'Not delivered'} to ${sent.url}: ${sent.statusCode === 0 ? 'no answer within 5 s' : `status ${sent.statusCode}`}.`),
      (err: unknown) => show(result, describe(err)),
    );
  });
  return form;
}
