// The dashboard's overview charts in a real browser (Debian's Chromium through playwright-core):
// after payments in sandbox, the volume chart's text alternative (its table, and the chart's
// accessible name) lists the same totals per currency as the API, and those are the totals of
// the completed transactions the listing shows; the period is chosen with a labelled select;
// the outcome and webhook charts change after a failed payout and a receiver that stops
// answering. The operators' page reads the service's own metrics every 5 s while it is open
// (the browser's clock is Playwright's, moved by the test) and stops once left. No page
// error and no CSP violation on the way. The service's time moves on a ManualClock.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { ManualClock } from '../src/engine/clock.js';
import { tallyVolume, volumeTally } from '../actors/queries/payment-volume.js';
import type { PaymentVolume } from '../src/http/routes/payment-volume.js';
import { dashboardForSuite } from './support/dashboard.js';
import { signedInDashboard } from './support/browser.js';
import { receiverForSuite } from './support/webhook-receiver.js';
import { assertInvalid, assertStatus, createCustomer, walk } from './support/assertions.js';
import { accountIn, createQuote, execute, externalUsd, fund, fundedCustomer, getJson, quoteBody, until } from './support/money.js';

const SUITE_TIMEOUT_MS = 300_000;
/** A quarter past noon UTC: the hour's buckets are 5 minutes long, this one the 4th of 12. */
const START = Date.UTC(2026, 4, 1, 12, 15, 30);

/** An amount as the page writes it: `1,234.56 USD`. */
function shown(amount: number, decimals: number, code: string): string {
  const whole = Math.floor(amount / 10 ** decimals).toLocaleString('en-US');
  return decimals === 0 ? `${whole} ${code}` : `${whole}.${String(amount % 10 ** decimals).padStart(decimals, '0')} ${code}`;
}

describe('the dashboard: overview charts', { timeout: SUITE_TIMEOUT_MS }, () => {
  const clock = new ManualClock(START);
  const dashboard = dashboardForSuite({ clock });
  const { svc } = dashboard;
  const receiver = receiverForSuite();
  const problems: string[] = [];

  before(async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
  });

  /** The overview, signed in, with every page error and console error (a CSP violation is one) collected. */
  async function overview(hash = ''): Promise<Page> {
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.sandbox);
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`);
    });
    if (hash !== '') await page.goto(`${dashboard.origin}/dashboard/${hash}`);
    await page.getByRole('table', { name: 'Payment volume per currency' }).waitFor();
    return page;
  }

  /** Per currency, what the listing's COMPLETED transactions sent (OUTGOING) and received (INCOMING). */
  async function listedTotals(): Promise<Map<string, { sent: number; received: number }>> {
    const totals = new Map<string, { sent: number; received: number }>();
    for (const tx of (await walk(svc, '/transactions?status=COMPLETED', 100)).items) {
      const outgoing = tx.type === 'OUTGOING';
      const code: string = outgoing ? tx.sentAmount.currency.code : tx.receivedAmount.currency.code;
      const total = totals.get(code) ?? { sent: 0, received: 0 };
      if (outgoing) total.sent += tx.sentAmount.amount;
      else total.received += tx.receivedAmount.amount;
      totals.set(code, total);
    }
    return totals;
  }

  it("after payments in two currencies (one of them across the two), the volume chart's text alternative lists the API's totals, which are the listing's; the last bucket holds them", async () => {
    const alice = await fundedCustomer(svc, 10_000);
    const bob = await fundedCustomer(svc, 0);
    await execute(svc, (await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 1_234))).id);
    const aliceUsdc = await accountIn(svc, alice.customer.id, 'USDC');
    await fund(svc, aliceUsdc.id, 777_000);
    // Across currencies: USD sent, USDC received.
    const bobUsdc = await accountIn(svc, bob.customer.id, 'USDC');
    await execute(svc, (await createQuote(svc, quoteBody(alice.usd.id, bobUsdc.id, 2_000))).id);

    assertInvalid(await svc.request('GET', '/transactions/volume?period=LAST_WEEK'), 'period');
    const volume = (await getJson(svc, '/transactions/volume?period=LAST_HOUR')) as PaymentVolume;
    assert.equal(volume.buckets.length, 12);
    assert.equal(volume.buckets.at(-1), '2026-05-01T12:15:00.000Z', 'the last bucket holds now');
    const listed = await listedTotals();
    assert.deepEqual(
      volume.currencies.map((c) => [c.currency, c.sentTotal, c.receivedTotal]),
      [...listed].sort(([a], [b]) => a.localeCompare(b)).map(([code, t]) => [code, t.sent, t.received]),
      'the API totals the completed transactions the listing shows, per currency',
    );
    for (const c of volume.currencies) {
      assert.equal(c.received.at(-1), c.receivedTotal, `${c.currency}: everything was received in the current bucket`);
      assert.equal(c.sent.at(-1), c.sentTotal, `${c.currency}: everything was sent in the current bucket`);
    }

    // Read in slices of two transactions, the tally is the one the route reads in slices of VOLUME_SLICE.
    const world = svc.service.services.world;
    const tally = volumeTally({ period: 'LAST_HOUR' }, world, clock.now());
    const envId = `${svc.credentials.platformId}#sandbox`;
    let slices = 1;
    for (let from = tallyVolume({ envId, tally, limit: 2 }, world, clock.now()); from !== undefined; slices++) from = tallyVolume({ envId, tally, from, limit: 2 }, world, clock.now());
    assert.equal(slices, 3, 'six transactions, two a read');
    const sliced = tally.result();
    assert.deepEqual(
      sliced.currencies.map((c) => [c.currency, c.sent, c.received]),
      volume.currencies.map((c) => [c.currency, c.sent, c.received]),
    );
    assert.deepEqual(sliced.outcomes, volume.outcomes);

    const page = await overview('#/overview/LAST_HOUR');
    const table = page.getByRole('table', { name: 'Payment volume per currency' });
    for (const c of volume.currencies) {
      const cells = await table.getByRole('row', { name: new RegExp(`^${c.currency} `) }).getByRole('cell').allTextContents();
      assert.deepEqual(cells, [shown(c.sentTotal, c.decimals, c.currency), shown(c.receivedTotal, c.decimals, c.currency)]);
      const chart = page.getByRole('img', { name: `${c.currency} volume, last hour: sent ${cells[0]}, received ${cells[1]}` });
      await chart.waitFor();
      const lastBucket = chart.locator('rect title', { hasText: `Received, 12:15: ${cells[1]}` });
      assert.equal(await lastBucket.count(), 1, "the last bar is the current bucket's");
    }
    assert.deepEqual(problems, []);
    await page.close();
  });

  it('the period is chosen with a labelled select, kept in the URL: two hours on, the last hour has no payments and the last day still has them', async () => {
    clock.advance(2 * 3_600_000);
    const page = await overview();
    await page.getByLabel('Period').selectOption('LAST_HOUR');
    await page.getByRole('heading', { name: 'Payment volume, last hour (UTC)' }).waitFor();
    assert.match(page.url(), /#\/overview\/LAST_HOUR$/);
    await page.getByText('No completed payments in this period.').waitFor();
    assert.equal(await page.getByRole('table', { name: 'Payment volume per currency' }).getByRole('row').count(), 1, 'the header only');
    await page.getByLabel('Period').selectOption('LAST_DAY');
    await page.getByRole('heading', { name: 'Payment volume, last day (UTC)' }).waitFor();
    const day = await getJson(svc, '/transactions/volume?period=LAST_DAY');
    assert.equal(day.currencies.length, 2);
    const usd = page.getByRole('table', { name: 'Payment volume per currency' }).getByRole('row', { name: /^USD / });
    assert.equal(await usd.getByRole('cell').first().textContent(), shown(day.currencies[0].sentTotal, 2, 'USD'));
    assert.deepEqual(problems, []);
    await page.close();
  });

  /** The figure of `label` in the table named `table`. */
  async function figure(page: Page, table: string, label: string): Promise<number> {
    return Number(await page.getByRole('table', { name: table }).getByRole('row', { name: new RegExp(`^${label} `) }).getByRole('cell').textContent());
  }

  it('a failed payout adds to the failed outcomes; an endpoint that stops answering shows DOWN with its events retrying', async () => {
    let page = await overview();
    const outcomes = 'Payments by outcome, last day';
    const failedBefore = await figure(page, outcomes, 'Failed');
    const completedBefore = await figure(page, outcomes, 'Completed');
    assert.equal(await figure(page, 'Webhook delivery', 'Retrying'), 0);
    await page.getByRole('status', { name: 'Endpoint: UP' }).waitFor();
    await page.close();

    // 002: the sandbox's payout that fails at execute (CONTRACT.md's outcome table).
    const { customer, usd } = await fundedCustomer(svc, 5_000);
    const external = await externalUsd(svc, customer.id, '002');
    await execute(svc, (await createQuote(svc, quoteBody(usd.id, external.id, 1_000, { destination: { destinationType: 'ACCOUNT', accountId: external.id, paymentRail: 'ACH' } }))).id);
    // The receiver stops answering (503): after three tries the endpoint is DOWN and the event waits.
    receiver.answer = () => 503;
    const delivered = receiver.received.length;
    await fundedCustomer(svc, 100);
    for (let tries = 1; tries <= 3; tries++) {
      await until(svc, () => receiver.received.length >= delivered + tries, `try ${tries}`);
      clock.advance(1000 * 2 ** (tries - 1) + 1000);
    }
    await until(svc, () => svc.service.services.webhooks.endpointState(`${svc.credentials.platformId}#sandbox`).state === 'DOWN', 'the endpoint DOWN');

    page = await overview();
    assert.equal(await figure(page, outcomes, 'Failed'), failedBefore + 1);
    assert.equal(await figure(page, outcomes, 'Completed'), completedBefore + 2, 'both fundings completed');
    const pending = (await getJson(svc, '/webhooks/events?deliveryStatus=PENDING&limit=1')).totalCount;
    assert.ok(pending >= 1);
    assert.equal(await figure(page, 'Webhook delivery', 'Retrying'), pending);
    await page.getByRole('status', { name: 'Endpoint: DOWN' }).waitFor();
    assert.deepEqual(problems, []);
    receiver.answer = () => 200;
    await page.close();
  });

  it("Operations reads the service's metrics every 5 s while open: the request rate over the last 5 s, the p99s; leaving the page stops the reading", async () => {
    const page = await dashboard.browser.newPage();
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    // The page's clock stands still but for the test's runFor: a reading's interval is exactly 5 s.
    await page.clock.install({ time: START });
    await page.clock.pauseAt(START + 1_000);
    const scrapes: string[] = [];
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === '/metrics') scrapes.push(request.url());
    });
    await page.goto(`${dashboard.origin}/dashboard/`);
    await page.getByLabel('Token ID').fill(svc.credentials.sandbox.tokenId);
    await page.getByLabel('Client secret').fill(svc.credentials.sandbox.clientSecret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Operations' }).click();
    const last = page.getByRole('status', { name: 'Last reading' });
    await last.filter({ hasText: '(1 readings)' }).waitFor();
    const metric = (label: string) => page.getByRole('table', { name: 'Service metrics' }).getByRole('row', { name: new RegExp(`^${label} `) }).getByRole('cell');
    assert.equal(await metric('Request rate').textContent(), '–', 'no rate from one reading');

    // 20 API requests in the next 5 s of the page's clock, 10 of them writes (each a log commit).
    for (let i = 0; i < 10; i++) {
      await getJson(svc, '/customers?limit=1');
      await createCustomer(svc);
    }
    await page.clock.runFor(5_000);
    await last.filter({ hasText: '(2 readings)' }).waitFor();
    assert.equal(await metric('Request rate').textContent(), '4 req/s');
    assert.match((await metric('p99 latency').textContent()) ?? '', /^\d+\.\d\d ms$/);
    assert.match((await metric('Log commit p99').textContent()) ?? '', /^\d+\.\d\d ms$/);
    await page.getByRole('img', { name: 'API requests per second' }).waitFor();

    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const scraped = scrapes.length;
    await page.clock.runFor(20_000);
    assert.equal(scrapes.length, scraped, 'no reading once the page is left');
    assert.deepEqual(problems, []);
    await page.close();
  });
});
