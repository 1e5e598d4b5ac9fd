// The README's pictures of the dashboard (docs/dashboard/*.png), taken on a seeded,
// clock-fixed tour: the service's ids come from seeded entropy, its time from a ManualClock
// that the tour moves, the browser's clock stands at the service's time, the webhook
// endpoint listens on a fixed port; so nothing on a page differs between runs and no picture
// needs a mask. The test takes the tour twice, with two fresh services, and every picture of
// the second must be the bytes of the first; when the running Chromium is the one that took
// the committed pictures (docs/dashboard/browser.txt), they must be those bytes too.
// `npm run screenshots` (SAVE_SCREENSHOTS=1) rewrites the pictures and browser.txt.
// What still differs on a fresh CI machine of the same image: another Chromium from apt (its
// version is recorded, and pictures of another version are compared between the runs only),
// other fonts installed (the image fixes them), another screen scale (the viewport and scale
// are set here).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { ManualClock } from '../src/engine/clock.js';
import { seededEntropy, systemEntropy, useEntropy } from '../src/engine/entropy.js';
import { startTestService, type TestService } from './support/service.js';
import { browserForSuite } from './support/browser.js';
import { assertStatus, createCustomer } from './support/assertions.js';
import { accountIn, createQuote, execute, externalUsd, fund, quoteBody } from './support/money.js';

const SUITE_TIMEOUT_MS = 300_000;
const SEED = 40;
/** A Tuesday morning, UTC. */
const START = Date.UTC(2026, 4, 12, 6, 0, 0);
/** The webhook endpoint's port, fixed: the Config page shows its URL. */
const RECEIVER_PORT = 47_419;
const RECEIVER_URL = `http://127.0.0.1:${RECEIVER_PORT}/webhooks`;
const VIEWPORT = { width: 1280, height: 800 };
const PICTURES = fileURLToPath(new URL('../../docs/dashboard/', import.meta.url));
const BROWSER_FILE = `${PICTURES}browser.txt`;
const MINUTE_MS = 60_000;

/**
 * An endpoint that takes every event, on a connection of its own each: a kept-alive socket
 * the endpoint closes after its idle time just as the service reuses it would cost that
 * event an unanswered attempt and a retry at the tour's next clock step (an Attempts
 * column of 2 in one run of the tour, 1 in the other, on a loaded machine).
 */
function startEndpoint(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { connection: 'close' }).end());
  });
  return new Promise((resolve) => server.listen(RECEIVER_PORT, '127.0.0.1', () => resolve(server)));
}

/** A few customers and a morning of their payments, sent a few minutes to an hour apart. */
async function morningOfPayments(svc: TestService, clock: ManualClock): Promise<{ adaId: string; paymentId: string; adaUsd: string; graceUsd: string }> {
  assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: RECEIVER_URL } }), 200);
  const people = [
    ['Ada Lovelace', 'ada@example.com', 'cust-ada'],
    ['Grace Hopper', 'grace@example.com', 'cust-grace'],
    ['Alan Turing', 'alan@example.com', 'cust-alan'],
    ['Katherine Johnson', 'katherine@example.com', 'cust-katherine'],
  ];
  // One step at a time, each let run to its end (deliveries, their logged outcomes, what a
  // timer the clock set off decided) before the next: ids, timers and effects all draw on
  // one seeded stream, so work that overlapped the next step in one tour and not in the
  // other would give the two tours different ids (CI saw webhooks.png and customer.png differ).
  const step = async <T>(work: () => Promise<T>, minutesLater = 0): Promise<T> => {
    const result = await work();
    await quiet(svc);
    if (minutesLater > 0) {
      clock.advance(minutesLater * MINUTE_MS);
      await quiet(svc);
    }
    return result;
  };
  const customers: Array<{ id: string }> = [];
  for (const [fullName, email, platformCustomerId] of people) customers.push(await step(() => createCustomer(svc, { fullName, email, platformCustomerId }), 7));
  const accounts: Array<{ id: string }> = [];
  for (const customer of customers) accounts.push(await step(() => accountIn(svc, customer.id, 'USD')));
  const [ada, grace, alan, katherine] = accounts as [{ id: string }, { id: string }, { id: string }, { id: string }];
  await step(() => fund(svc, ada.id, 250_000));
  await step(() => fund(svc, grace.id, 120_000), 40);
  await step(() => fund(svc, alan.id, 30_000));
  const pay = async (from: string, to: string, cents: number, minutesLater: number): Promise<string> => {
    const quote = await step(async () => execute(svc, (await createQuote(svc, quoteBody(from, to, cents))).id), minutesLater);
    return quote.transactionId as string;
  };
  const paymentId = await pay(ada.id, grace.id, 12_500, 55);
  await pay(grace.id, alan.id, 6_000, 35);
  await pay(ada.id, katherine.id, 8_800, 70);
  const katherineUsdc = await step(() => accountIn(svc, customers[3]!.id, 'USDC'));
  await pay(ada.id, katherineUsdc.id, 4_000, 25);
  // A payout the bank refuses (the sandbox's 002), and one it takes.
  const refused = await step(() => externalUsd(svc, customers[2]!.id, '002'));
  await pay(alan.id, refused.id, 5_000, 30);
  const taken = await step(() => externalUsd(svc, customers[1]!.id, '123'));
  await pay(grace.id, taken.id, 20_000, 15);
  await pay(alan.id, ada.id, 1_500, 12);
  return { adaId: customers[0]!.id, paymentId, adaUsd: ada.id, graceUsd: grace.id };
}

/**
 * Until the log has stood still for a while with nothing pending: what the morning set off
 * (payout outcomes, deliveries and their logged outcomes) has all landed before any picture,
 * however loaded the machine, so both tours picture the same state.
 */
async function quiet(svc: TestService, pollMs = 25, stillPolls = 4): Promise<void> {
  const engine = svc.service.services.engine;
  for (let still = 0, seq = -1; still < stillPolls; ) {
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    await engine.settled();
    const { pending, inFlight, waiting } = svc.service.services.webhooks.stats();
    still = engine.lastSeq === seq && pending + inFlight + waiting === 0 ? still + 1 : 0;
    seq = engine.lastSeq;
  }
}

/** The page once it has drawn: its heading shown, nothing loading, the network quiet. */
async function settled(page: Page, heading: string): Promise<void> {
  await page.getByRole('heading', { name: heading, level: 2 }).first().waitFor();
  await page.getByText('Loading…').waitFor({ state: 'detached' });
  await page.waitForLoadState('networkidle');
}

/** A picture and the text of the page it shows: two tours' texts differing name what differs. */
interface Picture {
  png: Buffer;
  text: string;
}

async function picture(page: Page): Promise<Picture> {
  // Two frames first: a paint the page has asked for lands before the picture (a full run's
  // load once caught transactions.png, and customer.png once before, with the same text but other pixels).
  await page.evaluate(() => new Promise<void>((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve()))));
  return { png: await page.screenshot({ fullPage: true, animations: 'disabled', caret: 'hide' }), text: await page.locator('body').innerText() };
}

/** Where the two pictures of a mismatch are written, for whoever reads the failure. */
function keptForDiagnosis(name: string, first: Buffer, second: Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), 'dashboard-mismatch-'));
  writeFileSync(join(dir, `${name}.first.png`), first);
  writeFileSync(join(dir, `${name}.second.png`), second);
  return dir;
}

/** Every picture of one tour, by name: a fresh service on the seed, the clock at START. */
async function tour(browser: Browser): Promise<Map<string, Picture>> {
  useEntropy(seededEntropy(SEED));
  const clock = new ManualClock(START);
  const svc = await startTestService({ clock });
  const pictures = new Map<string, Picture>();
  const context = await browser.newContext({ viewport: VIEWPORT, deviceScaleFactor: 1, locale: 'en-US', timezoneId: 'UTC', colorScheme: 'light' });
  try {
    const { adaId, paymentId, adaUsd, graceUsd } = await morningOfPayments(svc, clock);
    const page = await context.newPage();
    await page.clock.setFixedTime(clock.now());
    const origin = `http://localhost:${svc.service.http.port}`;
    const take = async (name: string, hash: string, heading: string): Promise<void> => {
      if (hash !== '') await page.goto(`${origin}/dashboard/${hash}`);
      await settled(page, heading);
      pictures.set(name, await picture(page));
    };
    await page.goto(`${origin}/dashboard/`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    pictures.set('sign-in', await picture(page));
    await page.getByLabel('Token ID').fill(svc.credentials.sandbox.tokenId);
    await page.getByLabel('Client secret').fill(svc.credentials.sandbox.clientSecret);
    // Signed in from the keyboard: the mouse never enters the page, so no row or button is
    // drawn hovered (tbody tr:hover), which would depend on when Chromium's fake mouse move
    // after a layout lands against the screenshot.
    await page.getByLabel('Client secret').press('Enter');
    await take('overview', '', 'Overview');
    await take('customers', '#/customers', 'Customers');
    await take('customer', `#/customers/${encodeURIComponent(adaId)}`, 'Customer');
    await take('transactions', '#/transactions', 'Transactions');
    await take('transaction', `#/transactions/${encodeURIComponent(paymentId)}`, 'Transaction');
    await take('wallets', '#/wallets', 'Wallets');
    await take('webhooks', '#/webhooks', 'Webhooks');
    await take('config', '#/config', 'Config');
    await take('sandbox', '#/sandbox', 'Sandbox');
    await sendMoney(page, origin, adaUsd, graceUsd);
    pictures.set('send-money', await picture(page));
    await page.close();
    return pictures;
  } finally {
    await context.close();
    await svc.stop();
    useEntropy(systemEntropy);
  }
}

/** Send money with a quote shown: 25.00 USD from Ada's account to Grace's. */
async function sendMoney(page: Page, origin: string, from: string, to: string): Promise<void> {
  await page.goto(`${origin}/dashboard/#/send`);
  await settled(page, 'Send money');
  await page.getByLabel('From account').selectOption(from);
  await page.getByLabel('To', { exact: true }).selectOption(to);
  await page.getByLabel('Amount').fill('25');
  await page.getByLabel('Locked side').selectOption('SENDING');
  await page.getByRole('button', { name: 'Get quote' }).press('Enter');
  await page.getByRole('button', { name: 'Execute quote' }).waitFor();
}

describe('the dashboard: the README pictures, from a seeded, clock-fixed tour', { timeout: SUITE_TIMEOUT_MS }, () => {
  const launched = browserForSuite();
  let endpoint: Server;
  before(async () => {
    endpoint = await startEndpoint();
  });
  after(() => new Promise<void>((resolve) => endpoint.close(() => resolve())));

  it('takes every picture twice, byte for byte the same, and the committed ones again on the Chromium that took them', async () => {
    const first = await tour(launched.browser);
    const second = await tour(launched.browser);
    assert.deepEqual([...second.keys()], [...first.keys()]);
    for (const [name, { png, text }] of first) {
      assert.equal(second.get(name)!.text, text, `${name}.png: the page's text differs between two runs of the same tour`);
      const again = second.get(name)!.png;
      if (!again.equals(png)) assert.fail(`${name}.png differs between two runs of the same tour, its text the same (both kept in ${keptForDiagnosis(name, png, again)})`);
    }
    const version = launched.browser.version();
    if (process.env.SAVE_SCREENSHOTS === '1') {
      mkdirSync(PICTURES, { recursive: true });
      for (const [name, { png }] of first) writeFileSync(`${PICTURES}${name}.png`, png);
      writeFileSync(BROWSER_FILE, `${version}\n`);
      return;
    }
    if (!existsSync(BROWSER_FILE) || readFileSync(BROWSER_FILE, 'utf8').trim() !== version) return;
    for (const [name, { png }] of first) assert.ok(readFileSync(`${PICTURES}${name}.png`).equals(png), `docs/dashboard/${name}.png is not what the tour draws: npm run screenshots`);
  });
});
