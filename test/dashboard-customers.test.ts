// The dashboard's Customers and Transactions pages in a real browser (Debian's Chromium
// through playwright-core): creating a customer through the form and finding it by search,
// its accounts and balance, a name made of HTML shown as its characters, the transactions
// list filtered by type, and approving a held incoming payment with the button. Controls
// are found by role and accessible name.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { ManualClock } from '../src/engine/clock.js';
import { dashboardForSuite } from './support/dashboard.js';
import { signedInDashboard } from './support/browser.js';
import { assertStatus, createCustomer } from './support/assertions.js';
import { accountIn, balanceOf, createQuote, execute, fund, fundedCustomer, quoteBody } from './support/money.js';
import { receiverForSuite } from './support/webhook-receiver.js';

const SUITE_TIMEOUT_MS = 300_000;
const HTML_NAME = '<img src=x onerror=alert(1)>';

describe('the dashboard: customers and transactions', { timeout: SUITE_TIMEOUT_MS }, () => {
  // A manual clock: a payment held for approval stays PENDING until the test decides it
  // (with a real one it would fail after 5 s, however slow the browser is).
  const clock = new ManualClock();
  const dashboard = dashboardForSuite({ clock });
  const { svc } = dashboard;
  // The platform's webhook answers 202 to an incoming payment: the platform will decide later.
  const receiver = receiverForSuite((json) => (json.type === 'INCOMING_PAYMENT' && json.transaction.status === 'PENDING' ? 202 : 200));
  before(async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
  });

  /** Every dialog a page opened (an alert() would be injected script running); checked empty as each page closes. */
  const dialogs: string[] = [];
  async function signedIn(): Promise<Page> {
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.sandbox);
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    return page;
  }
  async function closed(page: Page): Promise<void> {
    await page.close();
    assert.deepEqual(dialogs, [], 'no dialog opened');
  }

  /** Waits (at most 5 s) until `read` answers `expected`, as a list replaced after a request settles. */
  async function eventually<T>(read: () => Promise<T>, expected: T): Promise<void> {
    let last: T | undefined;
    for (let waited = 0; waited < 5_000; waited += 50) {
      last = await read();
      if (JSON.stringify(last) === JSON.stringify(expected)) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.deepEqual(last, expected);
  }

  /** The text shown for `term` in the description list named `list`. */
  function detail(page: Page, list: string, term: string): Promise<string | null> {
    return page.locator(`dl[aria-label="${list}"] dt:text-is("${term}") + dd`).textContent();
  }

  it('creates a customer with the form, finds it by platform customer ID and by email, shows its accounts and, once funded, its balance', async () => {
    const page = await signedIn();
    await page.getByRole('link', { name: 'Customers' }).click();
    await page.getByRole('heading', { name: 'Customers' }).waitFor();
    await page.getByLabel('Full name').fill('Ada Lovelace');
    await page.getByLabel('Platform customer ID').fill('dash-ada');
    await page.getByLabel('Email').fill('ada@example.com');
    await page.getByRole('button', { name: 'Create customer' }).click();
    await page.getByRole('heading', { name: 'Customer', exact: true }).waitFor();
    assert.equal(await detail(page, 'Customer details', 'Name'), 'Ada Lovelace');
    const id = (await detail(page, 'Customer details', 'ID')) ?? '';
    assert.match(id, /^Customer:/);

    await page.getByRole('link', { name: 'All customers' }).click();
    await page.getByLabel('Search by').selectOption('platformCustomerId');
    await page.getByLabel('Search for').fill('dash-ada');
    await page.getByRole('button', { name: 'Search customers' }).click();
    const customers = page.getByRole('table', { name: 'Customers' });
    await customers.getByRole('row', { name: /dash-ada/ }).waitFor();
    assert.equal(await customers.getByRole('row').count(), 2, 'the heading row and the one customer');

    await page.getByLabel('Search by').selectOption('email');
    await page.getByLabel('Search for').fill('ADA@example.com');
    await page.getByRole('button', { name: 'Search customers' }).click();
    await customers.getByRole('row', { name: /ada@example\.com/ }).waitFor();
    await customers.getByRole('link', { name: 'Ada Lovelace' }).click();

    const accounts = page.getByRole('table', { name: 'Internal accounts' });
    const usdRow = accounts.getByRole('row').filter({ hasText: 'USD' });
    assert.equal(await usdRow.getByRole('cell').last().textContent(), '0.00 USD');
    const usd = await accountIn(svc, id, 'USD');
    await fund(svc, usd.id, 123_456);
    await page.reload();
    await usdRow.getByRole('cell').last().filter({ hasText: '1,234.56 USD' }).waitFor();
    // The funding is the customer's transaction.
    await page.getByRole('table', { name: 'Customer transactions' }).getByRole('row').filter({ hasText: '1,234.56 USD' }).waitFor();
    await closed(page);
  });

  it("pages through the customers with Next and Previous, as the API's cursor does", async () => {
    for (let n = 0; n < 21; n++) await createCustomer(svc);
    const first = (await svc.request<{ data: Array<{ id: string }>; nextCursor: string }>('GET', '/customers?limit=20')).body;
    const second = (await svc.request<{ data: Array<{ id: string }> }>('GET', `/customers?limit=20&cursor=${encodeURIComponent(first.nextCursor)}`)).body;
    const hrefs = (page: { data: Array<{ id: string }> }): string[] => page.data.map(({ id }) => `#/customers/${encodeURIComponent(id)}`);
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/customers`);
    const shown = (): Promise<string[]> => page.getByRole('table', { name: 'Customers' }).locator('tbody tr th a').evaluateAll((links) => links.map((link) => link.getAttribute('href') ?? ''));
    await eventually(shown, hrefs(first));
    assert.equal(await page.getByRole('button', { name: 'Previous page of customers' }).isDisabled(), true);
    await page.getByRole('button', { name: 'Next page of customers' }).click();
    await eventually(shown, hrefs(second));
    await page.getByRole('button', { name: 'Previous page of customers' }).click();
    await eventually(shown, hrefs(first));
    await closed(page);
  });

  it("shows the API's field errors next to their fields", async () => {
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/customers`);
    await page.getByLabel('Email').fill('not-an-email');
    await page.getByRole('button', { name: 'Create customer' }).click();
    const emailError = page.locator('#new-customer-email-error');
    await emailError.filter({ hasText: /./ }).waitFor();
    assert.equal(await page.getByLabel('Email').getAttribute('aria-invalid'), 'true');
    assert.equal(await page.locator('#new-customer-full-name-error').textContent(), '', 'only the field named');
    await page.getByRole('alert').filter({ hasText: 'INVALID_INPUT' }).waitFor();
    await closed(page);
  });

  it("creates a business: its missing details named next to their fields, then created once they are filled in", async () => {
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/customers`);
    await page.getByLabel('Customer type').selectOption('BUSINESS');
    await page.getByLabel('Legal name (business)').fill('Analytical Engines Ltd');
    await page.getByRole('button', { name: 'Create customer' }).click();
    await page.locator('#new-customer-tax-id-error').filter({ hasText: /./ }).waitFor();
    assert.notEqual(await page.locator('#new-customer-country-error').textContent(), '');
    assert.equal(await page.locator('#new-customer-legal-name-error').textContent(), '');
    await page.getByLabel('Country (business, 2 letters)').fill('GB');
    await page.getByLabel('Tax ID (business)').fill('GB123456');
    await page.getByLabel('Incorporated on (business)').fill('2020-01-01');
    await page.getByRole('button', { name: 'Create customer' }).click();
    await page.getByRole('heading', { name: 'Customer', exact: true }).waitFor();
    assert.equal(await detail(page, 'Customer details', 'Name'), 'Analytical Engines Ltd');
    assert.equal(await detail(page, 'Customer details', 'Type'), 'BUSINESS');
    await closed(page);
  });

  it('a name made of HTML is shown as those characters on the list and the page, and runs nothing', async () => {
    const customer = await createCustomer(svc, { fullName: HTML_NAME, platformCustomerId: 'dash-html' });
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/customers`);
    await page.getByLabel('Search for').fill('dash-html');
    await page.getByRole('button', { name: 'Search customers' }).click();
    const link = page.getByRole('table', { name: 'Customers' }).getByRole('link', { name: HTML_NAME, exact: true });
    assert.equal(await link.textContent(), HTML_NAME);
    await link.click();
    await page.getByRole('table', { name: 'Internal accounts' }).waitFor();
    assert.equal(await detail(page, 'Customer details', 'Name'), HTML_NAME);
    assert.equal(await detail(page, 'Customer details', 'ID'), customer.id);
    assert.equal(await page.locator('img').count(), 0, 'no element was made of the name');
    await closed(page);
  });

  it('lists transactions filtered by type and customer', async () => {
    const { customer: payer, usd: payerUsd } = await fundedCustomer(svc, 10_000);
    const { usd: payeeUsd } = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(payerUsd.id, payeeUsd.id, 2_500));
    const { transactionId } = await execute(svc, quote.id);
    assert.ok(typeof transactionId === 'string');
    const page = await signedIn();
    await page.getByRole('link', { name: 'Transactions' }).click();
    await page.getByRole('heading', { name: 'Transactions' }).waitFor();
    const table = page.getByRole('table', { name: 'Transactions' });
    const typesShown = (): Promise<string[]> => table.locator('tbody tr td:nth-child(2)').allTextContents();

    await page.getByLabel('Customer ID').fill(payer.id);
    await page.getByLabel('Type').selectOption('OUTGOING');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await eventually(typesShown, ['OUTGOING']);
    await table.getByRole('link', { name: transactionId }).waitFor();

    await page.getByLabel('Type').selectOption('INCOMING');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    // The payer's funding only.
    await eventually(typesShown, ['INCOMING']);
    assert.equal(await table.getByRole('link', { name: transactionId }).count(), 0);
    await closed(page);
  });

  it("filters transactions by dates, the 'to' day included whole", async () => {
    // The manual clock starts at 2026-01-01T00:00:00Z; at noon, a 'to' bound read as that
    // day's midnight would leave the funding out. No payment is held yet: no timer is due.
    clock.advance(12 * 60 * 60 * 1000);
    const { customer } = await fundedCustomer(svc, 700);
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/transactions`);
    const table = page.getByRole('table', { name: 'Transactions' });
    const statuses = (): Promise<string[]> => table.locator('tbody tr td:nth-child(3)').allTextContents();
    await page.getByLabel('Customer ID').fill(customer.id);
    await page.getByLabel('Created from (date)').fill('2026-01-01');
    await page.getByLabel('Created to (date)').fill('2026-01-01');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await eventually(statuses, ['COMPLETED']);
    await page.getByLabel('Created from (date)').fill('2026-01-02');
    await page.getByLabel('Created to (date)').fill('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No transactions.').waitFor();
    await closed(page);
  });

  it('finds a customer by UMA address', async () => {
    const customer = await createCustomer(svc, { fullName: 'Uma Searched' });
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/customers`);
    await page.getByLabel('Search by').selectOption('umaAddress');
    await page.getByLabel('Search for').fill(customer.umaAddress);
    await page.getByRole('button', { name: 'Search customers' }).click();
    const links = (): Promise<string[]> => page.getByRole('table', { name: 'Customers' }).locator('tbody tr th a').allTextContents();
    await eventually(links, ['Uma Searched']);
    await closed(page);
  });

  it('approves a held incoming payment with its button and shows it COMPLETED', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const res = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 4_200, receiverUmaAddress: customer.umaAddress },
    });
    assertStatus(res, 201);
    const held: { id: string; status: string } = res.body;
    assert.equal(held.status, 'PENDING');
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/transactions/${encodeURIComponent(held.id)}`);
    await page.getByRole('button', { name: 'Reject payment' }).waitFor();
    assert.equal(await detail(page, 'Transaction details', 'Status'), 'PENDING');
    await page.getByRole('button', { name: 'Approve payment' }).click();
    await page.locator('dl[aria-label="Transaction details"] dt:text-is("Status") + dd').filter({ hasText: 'COMPLETED' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve payment' }).count(), 0, 'a decided payment has no buttons');
    assert.equal(await balanceOf(svc, usd.id), 4_200);
    await closed(page);
  });

  it('rejects a held incoming payment with its button and shows it REJECTED, nothing credited', async () => {
    const customer = await createCustomer(svc);
    const usd = await accountIn(svc, customer.id, 'USD');
    const res = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 4_300, receiverUmaAddress: customer.umaAddress },
    });
    assertStatus(res, 201);
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/transactions/${encodeURIComponent(res.body.id)}`);
    await page.getByRole('button', { name: 'Reject payment' }).click();
    await page.locator('dl[aria-label="Transaction details"] dt:text-is("Status") + dd').filter({ hasText: 'REJECTED' }).waitFor();
    assert.equal(await balanceOf(svc, usd.id), 0);
    await closed(page);
  });

  it("a payment decided elsewhere meanwhile: the button's refusal is shown as an alert with the API's code", async () => {
    const customer = await createCustomer(svc);
    const res = await svc.request('POST', '/sandbox/uma/receive', {
      body: { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 4_400, receiverUmaAddress: customer.umaAddress },
    });
    assertStatus(res, 201);
    const page = await signedIn();
    await page.goto(`${dashboard.origin}/dashboard/#/transactions/${encodeURIComponent(res.body.id)}`);
    await page.getByRole('button', { name: 'Approve payment' }).waitFor();
    assertStatus(await svc.request('POST', `/transactions/${res.body.id}/reject`), 200);
    await page.getByRole('button', { name: 'Approve payment' }).click();
    await page.getByRole('alert').filter({ hasText: 'TRANSACTION_NOT_PENDING' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve payment' }).isEnabled(), true, 'the buttons are given back');
    await closed(page);
  });
});
