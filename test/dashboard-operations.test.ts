// The dashboard's operations pages in a real browser (Debian's Chromium through
// playwright-core): Webhooks (a FAILED event redelivered once the endpoint is fixed, the
// test event's outcome), Config (the API's field errors beside their inputs, a save that
// persists) and Sandbox (funding an account; absent for production tokens). Controls are
// found by role and accessible name. Time moves through a ManualClock, so an event's ten
// tries take no wall time.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Locator, Page } from 'playwright-core';
import { ManualClock } from '../src/engine/clock.js';
import { dashboardForSuite } from './support/dashboard.js';
import { signedInDashboard } from './support/browser.js';
import { receiverForSuite, startReceiver } from './support/webhook-receiver.js';
import { assertStatus } from './support/assertions.js';
import { balanceOf, fundedCustomer, getJson, until } from './support/money.js';

const SUITE_TIMEOUT_MS = 300_000;
/** Tries of one queueing before an event is FAILED (actors/webhook-event.ts MAX_DELIVERY_TRIES). */
const DELIVERY_TRIES = 10;
const POLL_LIMIT_MS = 15_000;

describe('the dashboard: webhooks, config and sandbox', { timeout: SUITE_TIMEOUT_MS }, () => {
  const clock = new ManualClock();
  const dashboard = dashboardForSuite({ clock });
  const { svc } = dashboard;
  const receiver = receiverForSuite();

  async function openPage(name: string, environment: 'sandbox' | 'production' = 'sandbox'): Promise<Page> {
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials[environment]);
    await page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name }).click();
    await page.getByRole('heading', { name, level: 2 }).waitFor();
    return page;
  }

  /** The events table's row for `id`. */
  function eventRow(page: Page, id: string): Locator {
    return page.getByRole('table', { name: 'Webhook events' }).getByRole('row').filter({ has: page.getByRole('rowheader', { name: id, exact: true }) });
  }

  /** Clicks "Refresh events" until the row of `id` says `status` in its Delivery status cell. */
  async function refreshUntil(page: Page, id: string, status: string): Promise<void> {
    const deadline = Date.now() + POLL_LIMIT_MS;
    for (;;) {
      await page.getByRole('button', { name: 'Refresh events' }).click();
      const shown = await eventRow(page, id).getByRole('cell').nth(1).textContent({ timeout: POLL_LIMIT_MS });
      if (shown === status) return;
      assert.ok(Date.now() < deadline, `event ${id} still ${shown}, not ${status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('Webhooks: an event the endpoint refused ten times shows FAILED with its attempts; once the endpoint answers 200, Redeliver makes it DELIVERED', async () => {
    receiver.answer = (json) => (json.type === 'INCOMING_PAYMENT' ? 500 : 200);
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
    await fundedCustomer(svc, 500);
    const failing = (await getJson(svc, '/webhooks/events?type=INCOMING_PAYMENT&limit=1')).data[0].id as string;
    const attemptsOf = (): number => svc.service.services.world.webhookEvents.get(failing)!.attempts.length;
    // Each try is answered 500; the next is due 1 s doubling after it (webhook-delivery.test.ts).
    for (let n = 1; n <= DELIVERY_TRIES; n++) {
      await until(svc, () => attemptsOf() === n, `try ${n} of ${failing}`);
      if (n < DELIVERY_TRIES) clock.advance(1000 * 2 ** (n - 1) + 1000);
    }
    await until(svc, () => svc.service.services.world.webhookEvents.get(failing)!.deliveryStatus === 'FAILED', `${failing} FAILED`);

    const page = await openPage('Webhooks');
    await page.getByLabel('Delivery status').selectOption('FAILED');
    const row = eventRow(page, failing);
    await row.waitFor();
    assert.deepEqual((await row.getByRole('cell').allTextContents()).slice(0, 4), ['INCOMING_PAYMENT', 'FAILED', String(DELIVERY_TRIES), '500'], 'type, delivery status, attempts, last status code');
    await row.getByRole('button', { name: `Show attempts of ${failing}` }).click();
    const attempts = page.getByRole('table', { name: `Attempts of ${failing}` });
    await attempts.waitFor();
    assert.equal(await attempts.getByRole('row').count(), 1 + DELIVERY_TRIES, 'a header and one row per try');

    receiver.answer = () => 200;
    await row.getByRole('button', { name: `Redeliver ${failing}` }).click();
    await page.getByRole('status').filter({ hasText: `${failing} queued again: PENDING.` }).waitFor();
    await page.getByLabel('Delivery status').selectOption('');
    await refreshUntil(page, failing, 'DELIVERED');
    assert.equal((await getJson(svc, `/webhooks/events/${failing}`)).deliveryStatus, 'DELIVERED');
    assert.equal(receiver.received.at(-1)!.json.id, failing, 'the endpoint got the event once more');
    await page.close();
  });

  it('Webhooks: "Send test event" says whether the endpoint (or the URL given) took it, its status code, or that nothing answered', async () => {
    const page = await openPage('Webhooks');
    const result = page.getByRole('status', { name: 'Test event result' });
    receiver.answer = () => 200;
    await page.getByRole('button', { name: 'Send test event' }).click();
    await result.filter({ hasText: `Delivered to ${receiver.url}: status 200.` }).waitFor();
    receiver.answer = () => 500;
    await page.getByRole('button', { name: 'Send test event' }).click();
    await result.filter({ hasText: `Not delivered to ${receiver.url}: status 500.` }).waitFor();
    receiver.answer = () => 200;
    // To another URL, one that never answers: the service gives up after 5 s (statusCode 0).
    const silent = await startReceiver(() => 'hang');
    try {
      await page.getByLabel('Test event URL (empty: the configured endpoint)').fill(silent.url);
      await page.getByRole('button', { name: 'Send test event' }).click();
      await result.filter({ hasText: `Not delivered to ${silent.url}: no answer within 5 s.` }).waitFor({ timeout: 15_000 });
      assert.equal(silent.received.length, 1);
    } finally {
      await silent.close();
    }
    await page.close();
  });

  /** The event ids the events table shows, in order. */
  async function shownEventIds(page: Page): Promise<string[]> {
    return page.getByRole('table', { name: 'Webhook events' }).getByRole('rowheader').allTextContents();
  }

  it('Webhooks: the type filter shows only that type; Next and Previous page walk the list as the API pages it', async () => {
    for (let n = 0; n < 11; n++) await fundedCustomer(svc, 100 + n);
    const page = await openPage('Webhooks');
    const firstPage = (await getJson(svc, '/webhooks/events?limit=20')).data.map((event: { id: string }) => event.id);
    await page.getByRole('rowheader', { name: firstPage[0], exact: true }).waitFor();
    assert.deepEqual(await shownEventIds(page), firstPage);
    await page.getByRole('button', { name: 'Next page' }).click();
    const next = await getJson(svc, `/webhooks/events?limit=20&cursor=${encodeURIComponent((await getJson(svc, '/webhooks/events?limit=20')).nextCursor)}`);
    await page.getByRole('rowheader', { name: next.data[0].id, exact: true }).waitFor();
    assert.deepEqual(await shownEventIds(page), next.data.map((event: { id: string }) => event.id));
    await page.getByRole('button', { name: 'Previous page' }).click();
    await page.getByRole('rowheader', { name: firstPage[0], exact: true }).waitFor();
    assert.deepEqual(await shownEventIds(page), firstPage);

    const accountStatuses = (await getJson(svc, '/webhooks/events?type=ACCOUNT_STATUS&limit=1')).totalCount as number;
    await page.getByLabel('Event type').selectOption('ACCOUNT_STATUS');
    await page.getByText(`${accountStatuses} events.`).waitFor();
    const types = await page.getByRole('table', { name: 'Webhook events' }).getByRole('row').filter({ has: page.getByRole('rowheader') }).evaluateAll((rows) => rows.map((row) => row.children[1]?.textContent));
    assert.equal(types.length, Math.min(20, accountStatuses));
    assert.ok(types.every((type) => type === 'ACCOUNT_STATUS'), types.join());
    await page.close();
  });

  /** The text of the element an input's aria-describedby names: where its problem is shown. */
  async function problemOf(page: Page, input: Locator): Promise<string> {
    const id = await input.getAttribute('aria-describedby');
    assert.ok(id !== null, 'the input names its problem element');
    const problem = page.locator(`[id="${id}"]`);
    assert.equal(await problem.getAttribute('role'), 'alert');
    return (await problem.textContent()) ?? '';
  }

  it('Config: a bad webhook URL or OTP length is named beside its field and nothing is saved; a good save persists across a reload', async () => {
    const before = await getJson(svc, '/config');
    const page = await openPage('Config');
    const endpoint = page.getByLabel('Webhook endpoint URL');
    assert.equal(await endpoint.inputValue(), before.webhookEndpoint);

    await endpoint.fill('not a url');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').filter({ hasText: /^Not saved/ }).waitFor();
    assert.match(await problemOf(page, endpoint), /^Webhook endpoint URL: ./);
    assert.equal(await endpoint.getAttribute('aria-invalid'), 'true');
    assert.equal(await problemOf(page, page.getByLabel('UMA domain')), '', 'only the field at fault');

    await endpoint.fill(receiver.url);
    const otpLength = page.getByLabel('One-time code length (digits)');
    await otpLength.fill('99');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('alert').filter({ hasText: /^Not saved/ }).waitFor();
    assert.match(await problemOf(page, otpLength), /^One-time code length \(digits\): ./);
    assert.equal(await problemOf(page, endpoint), '', 'the earlier problem is cleared');
    assert.equal((await getJson(svc, '/config')).embeddedWalletConfig.otpLength, before.embeddedWalletConfig.otpLength);

    await otpLength.fill(String(before.embeddedWalletConfig.otpLength));
    await page.getByLabel('Wallet app name').fill('Dashboard test app');
    await page.getByLabel('USD maximum amount (smallest unit)').fill('7654321');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const saved = await getJson(svc, '/config');
    assert.equal(saved.embeddedWalletConfig.appName, 'Dashboard test app');
    assert.equal(saved.supportedCurrencies.find((c: { currencyCode: string }) => c.currencyCode === 'USD').maxAmount, 7654321);
    assert.equal(saved.webhookEndpoint, receiver.url);

    await page.reload();
    await page.getByRole('heading', { name: 'Config', level: 2 }).waitFor();
    assert.equal(await page.getByLabel('Wallet app name').inputValue(), 'Dashboard test app');
    assert.equal(await page.getByLabel('USD maximum amount (smallest unit)').inputValue(), '7654321');
    // The receiver's port differs from run to run.
    await page.close();
  });

  it('Sandbox: funding an account from the page raises its balance in the table and in the API', async () => {
    const { usd } = await fundedCustomer(svc, 0);
    const page = await openPage('Sandbox');
    await page.getByLabel('Account to fund').selectOption(usd.id);
    await page.getByLabel("Amount to fund (the currency's smallest unit, e.g. cents)").fill('2500');
    await page.getByRole('button', { name: 'Fund account' }).click();
    await page.getByRole('status', { name: 'Funding result' }).filter({ hasText: `Funded ${usd.id}: balance 25.00 USD.` }).waitFor();
    const row = page.getByRole('table', { name: 'Internal accounts' }).getByRole('row').filter({ has: page.getByRole('rowheader', { name: usd.id, exact: true }) });
    assert.equal(await row.getByRole('cell').last().textContent(), '25.00 USD');
    assert.equal(await balanceOf(svc, usd.id), 2500);
    await page.close();
  });

  it('Sandbox: an incoming UMA payment from a test address, and the funds a REALTIME_FUNDING quote waits for', async () => {
    const { customer, usd } = await fundedCustomer(svc, 0);
    const page = await openPage('Sandbox');
    await page.getByLabel('Receiving customer ID (optional)').fill(customer.id);
    await page.getByLabel("Receiving amount (the currency's smallest unit)").fill('1200');
    await page.getByRole('button', { name: 'Simulate incoming UMA payment' }).click();
    const umaResult = page.getByRole('status', { name: 'Incoming UMA payment result' });
    await umaResult.filter({ hasText: /^Incoming payment / }).waitFor();
    const [, txId, shownStatus] = /^Incoming payment (\S+): (\w+)\.$/.exec((await umaResult.textContent()) ?? '') ?? [];
    assert.ok(txId !== undefined, String(await umaResult.textContent()));
    const incoming = await getJson(svc, `/transactions/${txId}`);
    assert.equal(incoming.source.umaAddress, '$success.usd@sandbox.uma.test');
    assert.equal(incoming.receivedAmount.amount, 1200);
    // PENDING until the answer to its webhook settles it (README "Sandbox magic values"), which may already have come.
    assert.match(shownStatus ?? '', /^(PENDING|COMPLETED)$/);

    const quoteRes = await svc.request('POST', '/quotes', {
      body: { source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: customer.id }, destination: { destinationType: 'ACCOUNT', accountId: usd.id }, lockedCurrencySide: 'SENDING', lockedCurrencyAmount: 3000 },
    });
    assertStatus(quoteRes, 201);
    const before = await balanceOf(svc, usd.id);
    await page.getByLabel('Quote ID (or give the reference and amount)').fill(quoteRes.body.id);
    await page.getByRole('button', { name: 'Send funds' }).click();
    await page.getByRole('status', { name: 'Send result' }).filter({ hasText: /^Sent: transaction \S+, COMPLETED\.$/ }).waitFor();
    assert.equal(await balanceOf(svc, usd.id), before + quoteRes.body.totalReceivingAmount);
    await page.getByRole('button', { name: 'Send funds' }).click();
    await page.getByRole('status', { name: 'Send result' }).filter({ hasText: 'QUOTE_ALREADY_EXECUTED' }).waitFor();
    await page.close();
  });

  it('Sandbox is in a sandbox token\'s navigation, not in a production one\'s, where its fragment shows the first page', async () => {
    const sandboxPage = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.sandbox);
    await sandboxPage.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: 'Sandbox' }).waitFor();
    await sandboxPage.close();
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.production);
    const nav = page.getByRole('navigation', { name: 'Pages' });
    await nav.getByRole('link', { name: 'Config' }).waitFor();
    assert.equal(await nav.getByRole('link', { name: 'Sandbox' }).count(), 0);
    await page.goto(`${dashboard.origin}/dashboard/#/sandbox`);
    await page.getByRole('heading', { name: 'Overview', level: 2 }).waitFor();
    assert.equal(await page.getByRole('heading', { name: 'Sandbox' }).count(), 0);
    await page.close();
  });
});
