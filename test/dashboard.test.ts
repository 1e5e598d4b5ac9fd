// The dashboard in a real browser (Debian's Chromium through playwright-core): signing in
// with a platform token, the environment badge, the overview's figures, signing out, and
// the headers that keep the page to itself. Controls are found by role and accessible name,
// as a user (or a screen reader) finds them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { dashboardForSuite } from './support/dashboard.js';
import { signedInDashboard } from './support/browser.js';
import { fundedCustomer } from './support/money.js';

const SUITE_TIMEOUT_MS = 300_000;

describe('the dashboard', { timeout: SUITE_TIMEOUT_MS }, () => {
  const dashboard = dashboardForSuite();
  const { svc } = dashboard;

  async function signedIn(environment: 'sandbox' | 'production' = 'sandbox'): Promise<Page> {
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials[environment]);
    await page.getByRole('status', { name: `Environment: ${environment}` }).waitFor();
    return page;
  }

  it('is served at /dashboard/ with a strict CSP, no framing and no sniffing; /dashboard redirects there', async () => {
    const res = await fetch(`${dashboard.origin}/dashboard/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const csp = res.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]) assert.ok(csp.includes(directive), `${directive} in ${csp}`);
    assert.ok(!csp.includes('unsafe-inline') && !csp.includes('unsafe-eval'), csp);
    assert.equal(res.headers.get('x-frame-options'), 'DENY');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const redirect = await fetch(`${dashboard.origin}/dashboard`, { redirect: 'manual' });
    assert.equal(redirect.status, 308);
    assert.equal(redirect.headers.get('location'), '/dashboard/');
    assert.equal((await fetch(`${dashboard.origin}/dashboard/app.js.map`)).status, 404, 'only the page, its styles and scripts are served');
  });

  it('a wrong secret is refused on the form and nothing is kept', async () => {
    const page = await dashboard.browser.newPage();
    await page.goto(`${dashboard.origin}/dashboard/`);
    await page.getByLabel('Token ID').fill(svc.credentials.sandbox.tokenId);
    await page.getByLabel('Client secret').fill('not-the-secret');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'not accepted' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.close();
  });

  it('signs in with a sandbox token: the badge, the overview with balances per currency and counts; the token only in sessionStorage; sign out forgets it', async () => {
    const { usd } = await fundedCustomer(svc, 12_345);
    const page = await signedIn('sandbox');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    const balances = page.getByRole('table', { name: 'Balances per currency' });
    await balances.waitFor();
    const usdRow = balances.getByRole('row', { name: /^USD / });
    const total = (await svc.request<{ data: Array<{ balance: { amount: number; currency: { code: string } } }> }>('GET', '/internal-accounts?limit=100')).body.data
      .filter((account) => account.balance.currency.code === 'USD')
      .reduce((sum, account) => sum + account.balance.amount, 0);
    assert.ok(total >= 12_345, `the funded account ${usd.id} counts`);
    assert.equal((await usdRow.getByRole('cell').textContent())?.trim(), `${(total / 100).toLocaleString('en-US', { minimumFractionDigits: 2 })} USD`);
    const customers = (await svc.request<{ totalCount: number }>('GET', '/customers?limit=1')).body.totalCount;
    assert.equal(await page.getByRole('definition').first().textContent(), String(customers));
    assert.ok(!page.url().includes(svc.credentials.sandbox.clientSecret), 'the secret is not in the URL');
    assert.equal(await page.evaluate(() => document.cookie), '');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
    await page.close();
  });

  it('a production token shows the production badge', async () => {
    const page = await signedIn('production');
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    await page.close();
  });
});
