// The dashboard's money pages in a real browser (Debian's Chromium through playwright-core).
// Wallets: a passkey registered and then used to sign in, against the production
// environment's real WebAuthn verification, with Chromium's virtual authenticator (the
// DevTools protocol's WebAuthn domain) standing in for a person's. Send money: a quote
// between two customers' accounts in sandbox, executed, the transaction completed on both
// sides. Controls are found by
// role and accessible name, as a user (or a screen reader) finds them.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { dashboardForSuite } from './support/dashboard.js';
import { signedInDashboard } from './support/browser.js';
import { assertStatus, createCustomer, customerAccounts } from './support/assertions.js';
import { balanceOf, fundedCustomer, getJson } from './support/money.js';

const SUITE_TIMEOUT_MS = 300_000;

describe('the dashboard: wallets and sending money', { timeout: SUITE_TIMEOUT_MS }, () => {
  const dashboard = dashboardForSuite();
  const { svc } = dashboard;
  before(async () => {
    const { browser, origin } = dashboard;
    // Production verifies passkeys against the environment's relying party and origins: this
    // page's, set on the Config page as a platform would.
    const page = await signedInDashboard(browser, origin, svc.credentials.production);
    await page.getByRole('link', { name: 'Config' }).click();
    await page.getByLabel('Passkey relying party ID (a domain)').fill('localhost');
    await page.getByLabel('Passkey relying party name').fill('Dashboard tests');
    await page.getByLabel('Passkey origins (separated by spaces)').fill(origin);
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.close();
    const configured = await svc.request<{ embeddedWalletConfig: { webauthn: unknown } }>('GET', '/config', { auth: 'production' });
    assertStatus(configured, 200);
    assert.deepEqual(configured.body.embeddedWalletConfig.webauthn, { rpId: 'localhost', rpName: 'Dashboard tests', origins: [origin] });
  });

  /** A signed-in page whose browser has a platform authenticator that verifies its user without asking. */
  async function withVirtualAuthenticator(environment: 'sandbox' | 'production'): Promise<Page> {
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials[environment]);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
    });
    return page;
  }

  /** Every input, select and button on the page has an accessible name: a label for it, or aria-label. */
  async function assertControlsNamed(page: Page): Promise<void> {
    const unnamed = await page.evaluate(() =>
      Array.from(document.querySelectorAll('input, select, button'))
        .filter((control) => ((control as HTMLInputElement).labels?.length ?? 0) === 0 && !control.hasAttribute('aria-label') && (control.tagName !== 'BUTTON' || (control.textContent ?? '').trim() === ''))
        .map((control) => control.outerHTML),
    );
    assert.deepEqual(unnamed, []);
  }

  it('production: a passkey is registered on the wallet page, then signs in; the page shows the session and its expiry, as the API has them', async () => {
    const customer = await createCustomer(svc, { email: 'passkey-owner@example.com' }, 'production');
    const wallet = (await customerAccounts(svc, customer.id, 'production')).find((account) => account.type === 'EMBEDDED_WALLET');
    assert.ok(wallet, 'a customer has an embedded wallet');
    const page = await withVirtualAuthenticator('production');
    await page.getByRole('link', { name: 'Wallets' }).click();
    await page.getByRole('table', { name: 'Embedded wallets' }).getByRole('link', { name: wallet.id }).click();
    await page.getByRole('heading', { name: `Wallet ${wallet.id}` }).waitFor();

    await page.getByLabel('Passkey name').waitFor();
    await assertControlsNamed(page);
    await page.getByLabel('Passkey name').fill('Laptop');
    await page.getByRole('button', { name: 'Add passkey' }).click();
    await page.getByRole('status').filter({ hasText: 'Passkey Laptop added.' }).waitFor();
    const credentials = (await svc.request<{ data: Array<{ id: string; type: string; nickname: string }> }>('GET', `/auth/credentials?accountId=${wallet.id}`, { auth: 'production' })).body.data;
    assert.deepEqual(
      credentials.map(({ type, nickname }) => ({ type, nickname })),
      [{ type: 'PASSKEY', nickname: 'Laptop' }],
    );

    await page.getByRole('button', { name: 'Sign in with passkey Laptop' }).click();
    const signedIn = page.getByRole('status').filter({ hasText: 'Signed in with passkey Laptop' });
    await signedIn.waitFor();
    const sessions = (await svc.request<{ data: Array<{ id: string; expiresAt: string }> }>('GET', `/auth/sessions?accountId=${wallet.id}`, { auth: 'production' })).body.data;
    assert.equal(sessions.length, 1);
    const [session] = sessions;
    assert.ok(Date.parse(session!.expiresAt) > Date.now(), 'the session is live');
    assert.equal(await signedIn.textContent(), `Signed in with passkey Laptop: session ${session!.id} expires at ${session!.expiresAt}.`);
    assert.equal(await page.getByRole('alert').textContent(), '', 'nothing went wrong on the way');

    // The wallet holds its one passkey: the page offers no second ceremony (and shows the session).
    await page.reload();
    await page.getByText('This wallet has its passkey').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Add passkey' }).count(), 0);
    assert.equal(await page.getByRole('table', { name: 'Sessions' }).getByRole('rowheader').textContent(), session!.id);
    await page.close();
  });

  it('production: a wallet whose first credential is not a passkey is offered no passkey ceremony (the add would need a session stamp)', async () => {
    const customer = await createCustomer(svc, { email: 'otp-owner@example.com' }, 'production');
    const wallet = (await customerAccounts(svc, customer.id, 'production')).find((account) => account.type === 'EMBEDDED_WALLET');
    assertStatus(await svc.request('POST', '/auth/credentials', { auth: 'production', body: { type: 'EMAIL_OTP', accountId: wallet.id } }), 201);
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.production);
    await page.goto(`${dashboard.origin}/dashboard/#/wallets/${encodeURIComponent(wallet.id)}`);
    await page.getByText('needs a stamp by one of its sessions').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Add passkey' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: /^Sign in with passkey/ }).count(), 0);
    await page.close();
  });

  it('sandbox: Send money quotes 12.34 USD from one customer to another (amounts, rate, fees, a countdown), executes it, and the transaction completes on both sides', async () => {
    const alice = await fundedCustomer(svc, 5_000);
    const bob = await fundedCustomer(svc, 0);
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.sandbox);
    await page.getByRole('link', { name: 'Send money' }).click();
    await page.getByLabel('From account').waitFor();
    await assertControlsNamed(page);
    const aliceWallet = (await customerAccounts(svc, alice.customer.id)).find((account) => account.type === 'EMBEDDED_WALLET');
    assert.ok(aliceWallet, 'a sandbox customer has an embedded wallet too');
    assert.equal(await page.getByLabel('From account').locator(`option[value="${aliceWallet.id}"]`).count(), 0, 'no wallet to send from: it would need a stamp');
    await page.getByLabel('From account').selectOption(alice.usd.id);
    await page.getByLabel('To', { exact: true }).selectOption(bob.usd.id);
    await page.getByLabel('Amount').fill('12.34');
    await page.getByLabel('Locked side').selectOption('SENDING');
    await page.getByRole('button', { name: 'Get quote' }).click();

    const details = page.getByRole('definition');
    await page.getByRole('button', { name: 'Execute quote' }).waitFor();
    const [sent, received, rate, fees, expiresIn] = await details.allTextContents();
    assert.equal(sent, '12.34 USD');
    assert.equal(received, '12.34 USD');
    assert.equal(rate, '1 USD per USD');
    assert.equal(fees, '0.00 USD');
    assert.match(expiresIn ?? '', /^\d+ s$/);
    await page.getByRole('button', { name: 'Execute quote' }).click();
    const executed = page.getByRole('status').filter({ hasText: 'executed' });
    await executed.waitFor();
    const transactionId = /transaction (\S+) is/.exec((await executed.textContent()) ?? '')?.[1];
    assert.ok(transactionId !== undefined, 'the page names the transaction');
    assert.match((await executed.textContent()) ?? '', / is COMPLETED\.$/);

    const outgoing = await getJson(svc, `/transactions/${transactionId}`);
    assert.deepEqual([outgoing.type, outgoing.status], ['OUTGOING', 'COMPLETED']);
    const incoming = (await getJson(svc, `/transactions?customerId=${bob.customer.id}`)).data;
    assert.deepEqual(incoming.map((t: { type: string; status: string }) => [t.type, t.status]), [['INCOMING', 'COMPLETED']]);
    assert.equal(await balanceOf(svc, alice.usd.id), 5_000 - 1_234);
    assert.equal(await balanceOf(svc, bob.usd.id), 1_234);
    await page.close();
  });

  it("sandbox: Send money to an UMA address looks the receiver up, quotes 5.00 USD locked on the receiving side and pays the customer's account", async () => {
    const alice = await fundedCustomer(svc, 2_000);
    const bob = await fundedCustomer(svc, 0, { fullName: 'Bob Uma' });
    const page = await signedInDashboard(dashboard.browser, dashboard.origin, svc.credentials.sandbox);
    await page.getByRole('link', { name: 'Send money' }).click();
    await page.getByLabel('From account').selectOption(alice.usd.id);
    await page.getByLabel('To', { exact: true }).selectOption('uma');
    await page.getByLabel(/^UMA address/).fill(bob.customer.umaAddress);
    await page.getByLabel('Amount').fill('5');
    await page.getByLabel('Locked side').selectOption('RECEIVING');
    await page.getByRole('button', { name: 'Get quote' }).click();
    await page.getByRole('button', { name: 'Execute quote' }).waitFor();
    assert.deepEqual((await page.getByRole('definition').allTextContents()).slice(0, 2), ['5.00 USD', '5.00 USD']);
    await page.getByRole('button', { name: 'Execute quote' }).click();
    await page.getByRole('status').filter({ hasText: / is COMPLETED\.$/ }).waitFor();
    assert.equal(await balanceOf(svc, alice.usd.id), 1_500);
    assert.equal(await balanceOf(svc, bob.usd.id), 500);
    await page.close();
  });
});
