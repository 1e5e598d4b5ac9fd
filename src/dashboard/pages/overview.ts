// Overview: payment volume over a chosen period per currency (GET /transactions/volume), the
// period's payments by outcome, webhook delivery with the endpoint's state, then balances per
// currency across the environment's internal accounts and counts. Every chart has its text
// alternative beside it: a table of the same figures (and the SVG's own accessible name).
import { call, type Page, type Token } from '../api.js';
import { barChart, COLOURS, compact, meterChart, type MeterRow } from '../chart.js';
import { h, money, show, svg } from '../dom.js';
import type { DashboardPage, PageContext } from '../page.js';

interface InternalAccount {
  id: string;
  balance: { amount: number; currency: { code: string; decimals: number } };
}

type Period = 'LAST_HOUR' | 'LAST_DAY' | 'LAST_30_DAYS';
const PERIODS: ReadonlyArray<[Period, string]> = [
  ['LAST_HOUR', 'Last hour'],
  ['LAST_DAY', 'Last day'],
  ['LAST_30_DAYS', 'Last 30 days'],
];

interface CurrencyVolume {
  currency: string;
  decimals: number;
  sent: number[];
  received: number[];
  sentTotal: number;
  receivedTotal: number;
}

interface PaymentVolume {
  period: Period;
  bucketSeconds: number;
  buckets: string[];
  currencies: CurrencyVolume[];
  outcomes: Record<string, number>;
}

interface EndpointState {
  state: 'UP' | 'DOWN';
  downSince?: string;
  unansweredTries: number;
}

interface WebhookCounts {
  delivered: number;
  retrying: number;
  failed: number;
  endpoint: EndpointState;
}

/** Pages of internal accounts the overview sums at most: past them it says how many it read. */
const OVERVIEW_MAX_PAGES = 20;

export const overviewPage: DashboardPage = { name: 'Overview', path: 'overview', render: overview };

async function overview({ token, main, params, navigate }: PageContext): Promise<void> {
  const period = PERIODS.find(([value]) => value === params[0])?.[0] ?? 'LAST_DAY';
  show(main, h('h2', {}, 'Overview'), h('p', {}, 'Loading…'));
  const [volume, webhooks, balances, customers, transactions] = await Promise.all([
    call<PaymentVolume>(token, 'GET', `/transactions/volume?period=${period}`),
    webhookCounts(token),
    balancesByCurrency(token),
    call<Page<unknown>>(token, 'GET', '/customers?limit=1'),
    call<Page<unknown>>(token, 'GET', '/transactions?limit=1'),
  ]);
  const periodName = PERIODS.find(([value]) => value === period)![1].toLowerCase();
  show(
    main,
    h('div', { class: 'page-head' }, h('h2', {}, 'Overview'), periodChoice(period, (chosen) => navigate('overview', chosen))),
    volumeCard(volume, periodName),
    h('div', { class: 'cards' }, outcomeCard(volume, periodName), webhookCard(webhooks)),
    h(
      'div',
      { class: 'cards' },
      h('section', { class: 'card', 'aria-labelledby': 'balances-heading' }, h('h3', { id: 'balances-heading' }, 'Balances'), balanceTable(balances)),
      h(
        'section',
        { class: 'card', 'aria-labelledby': 'counts-heading' },
        h('h3', { id: 'counts-heading' }, 'Records'),
        h('dl', { 'aria-label': 'Counts' }, h('dt', {}, 'Customers'), h('dd', {}, customers.totalCount), h('dt', {}, 'Transactions'), h('dd', {}, transactions.totalCount)),
      ),
    ),
  );
}

function periodChoice(current: Period, choose: (period: Period) => void): HTMLElement {
  const select = h('select', { id: 'overview-period' }, ...PERIODS.map(([value, name]) => h('option', { value, selected: value === current }, name)));
  select.addEventListener('change', () => choose(select.value as Period));
  return h('div', { class: 'field-inline' }, h('label', { for: 'overview-period' }, 'Period'), select);
}

/** A bucket's start as its axis label: the time of day (UTC) for an hour or a day, the date for 30 days. */
function bucketLabel(iso: string, bucketSeconds: number): string {
  return bucketSeconds >= 86_400 ? iso.slice(5, 10) : iso.slice(11, 16);
}

function volumeCard(volume: PaymentVolume, periodName: string): HTMLElement {
  const categories = volume.buckets.map((start) => bucketLabel(start, volume.bucketSeconds));
  const charts = volume.currencies.map((c) => {
    const format = (amount: number): string => money(Math.round(amount), c.decimals, c.currency);
    const title = `${c.currency} volume, ${periodName}: sent ${format(c.sentTotal)}, received ${format(c.receivedTotal)}`;
    const series = [
      { name: 'Sent', values: c.sent, colour: COLOURS.primary },
      { name: 'Received', values: c.received, colour: COLOURS.secondary },
    ];
    const formatAxis = (amount: number): string => compact(amount / 10 ** c.decimals);
    return h('figure', { class: 'chart' }, svg(barChart({ title, heading: c.currency, categories, series, format, formatAxis, width: 800, height: 220 })));
  });
  const rows = volume.currencies.map((c) =>
    h('tr', {}, h('th', { scope: 'row' }, c.currency), h('td', {}, money(c.sentTotal, c.decimals, c.currency)), h('td', {}, money(c.receivedTotal, c.decimals, c.currency))),
  );
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'volume-heading' },
    h('h3', { id: 'volume-heading' }, `Payment volume, ${periodName} (UTC)`),
    charts.length === 0 ? h('p', { class: 'empty' }, 'No completed payments in this period.') : h('div', { class: 'charts' }, ...charts),
    h(
      'table',
      { 'aria-label': 'Payment volume per currency' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Currency'), h('th', { scope: 'col' }, 'Sent'), h('th', { scope: 'col' }, 'Received'))),
      h('tbody', {}, ...rows),
    ),
  );
}

/** Rows of a meter chart and of its table, the same figures. */
function meterCard(id: string, heading: string, rows: readonly MeterRow[], ...before: HTMLElement[]): HTMLElement {
  return h(
    'section',
    { class: 'card', 'aria-labelledby': `${id}-heading` },
    h('h3', { id: `${id}-heading` }, heading),
    ...before,
    h('figure', { class: 'chart' }, svg(meterChart(heading, rows, 400))),
    h('table', { 'aria-label': heading, class: 'visually-hidden' }, h('tbody', {}, ...rows.map((row) => h('tr', {}, h('th', { scope: 'row' }, row.label), h('td', {}, row.value))))),
  );
}

function outcomeCard(volume: PaymentVolume, periodName: string): HTMLElement {
  const count = (...statuses: string[]): number => statuses.reduce((sum, status) => sum + (volume.outcomes[status] ?? 0), 0);
  return meterCard('outcomes', `Payments by outcome, ${periodName}`, [
    { label: 'Completed', value: count('COMPLETED'), colour: COLOURS.good },
    { label: 'In progress', value: count('CREATED', 'PENDING', 'PROCESSING'), colour: COLOURS.muted },
    { label: 'Failed', value: count('FAILED', 'REJECTED', 'EXPIRED'), colour: COLOURS.bad },
    { label: 'Refunded', value: count('REFUNDED'), colour: COLOURS.warning },
  ]);
}

function webhookCard(counts: WebhookCounts): HTMLElement {
  const { endpoint } = counts;
  const state = h('p', {}, 'Endpoint ', h('span', { class: `status ${endpoint.state === 'UP' ? 'good' : 'bad'}`, role: 'status', 'aria-label': `Endpoint: ${endpoint.state}` }, endpoint.state), endpoint.downSince === undefined ? '' : ` since ${endpoint.downSince}`);
  return meterCard(
    'webhooks',
    'Webhook delivery',
    [
      { label: 'Delivered', value: counts.delivered, colour: COLOURS.good },
      { label: 'Retrying', value: counts.retrying, colour: COLOURS.warning },
      { label: 'Failed', value: counts.failed, colour: COLOURS.bad },
    ],
    state,
  );
}

/** Every event by delivery status (the listing's totalCount), and the endpoint's state beside them. */
async function webhookCounts(token: Token): Promise<WebhookCounts> {
  type EventList = Page<unknown> & { endpoint: EndpointState };
  const countOf = (status: string): Promise<EventList> => call<EventList>(token, 'GET', `/webhooks/events?deliveryStatus=${status}&limit=1`);
  const [delivered, retrying, failed] = await Promise.all([countOf('DELIVERED'), countOf('PENDING'), countOf('FAILED')]);
  return { delivered: delivered.totalCount, retrying: retrying.totalCount, failed: failed.totalCount, endpoint: failed.endpoint };
}

function balanceTable(balances: Awaited<ReturnType<typeof balancesByCurrency>>): HTMLElement {
  const rows = [...balances.totals].map(([code, { amount, decimals }]) => h('tr', {}, h('th', { scope: 'row' }, code), h('td', {}, money(amount, decimals, code))));
  return h(
    'div',
    {},
    h('table', { 'aria-label': 'Balances per currency' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Currency'), h('th', { scope: 'col' }, 'Balance'))), h('tbody', {}, ...rows)),
    balances.complete ? null : h('p', {}, `Summed over the first ${balances.accounts} internal accounts.`),
  );
}

/** Every internal account's balance, summed per currency (at most OVERVIEW_MAX_PAGES pages). */
async function balancesByCurrency(token: Token): Promise<{ totals: Map<string, { amount: number; decimals: number }>; accounts: number; complete: boolean }> {
  const totals = new Map<string, { amount: number; decimals: number }>();
  let cursor: string | undefined;
  let accounts = 0;
  for (let page = 0; page < OVERVIEW_MAX_PAGES; page++) {
    const query = `/internal-accounts?limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const result = await call<Page<InternalAccount>>(token, 'GET', query);
    for (const account of result.data) {
      const { code, decimals } = account.balance.currency;
      const total = totals.get(code) ?? { amount: 0, decimals };
      totals.set(code, { amount: total.amount + account.balance.amount, decimals });
    }
    accounts += result.data.length;
    if (!result.hasMore || result.nextCursor === undefined) return { totals, accounts, complete: true };
    cursor = result.nextCursor;
  }
  return { totals, accounts, complete: false };
}
