// Debian's Chromium driven by playwright-core, for the dashboard's browser tests. A machine
// without it gets it from apt when the tests run as root (as CI does); otherwise the suite
// fails saying what to install: it never skips.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { CHROMIUM_PACKAGE, ensureDebianPackages } from './debian.js';
import { forSuite } from './for-suite.js';
import { BROWSER_ENDPOINT_ENV, CHROMIUM_ARGS } from './browser-launch.js';

export const CHROMIUM = CHROMIUM_PACKAGE.binary;

/** Makes sure /usr/bin/chromium exists, installing Debian's package when allowed. */
export function ensureChromium(): void {
  ensureDebianPackages([CHROMIUM_PACKAGE], 'the browser tests need it');
}


/** The runner's browser when it shares one, else a browser of the suite's own; `close` leaves the shared one running. */
export async function launchChromium(): Promise<Browser> {
  const shared = process.env[BROWSER_ENDPOINT_ENV];
  if (shared !== undefined) return chromium.connect(shared);
  ensureChromium();
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** The browser of one test file or describe block: launched (or connected to) before its tests, closed after them. */
export function browserForSuite(): { readonly browser: Browser } {
  const launched = forSuite("the suite's browser", launchChromium, (browser) => browser.close());
  return {
    get browser() {
      return launched();
    },
  };
}

/**
 * A page of the dashboard at `origin` (http://localhost:PORT), signed in with `token` through
 * the sign-in form, once the environment badge shows.
 */
export async function signedInDashboard(browser: Browser, origin: string, token: { tokenId: string; clientSecret: string }): Promise<Page> {
  const page = await browser.newPage();
  await page.goto(`${origin}/dashboard/`);
  await page.getByLabel('Token ID').fill(token.tokenId);
  await page.getByLabel('Client secret').fill(token.clientSecret);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('status', { name: /^Environment: / }).waitFor();
  return page;
}

/** docs/dashboard in the repository (the README shows what the tests save there). */
const SCREENSHOTS = fileURLToPath(new URL('../../../docs/dashboard/', import.meta.url));

/** Text that differs from run to run: ids (`Customer:0193…`) and times. */
const VOLATILE_TEXT = [/[A-Za-z]+:[0-9a-f]{8}-[0-9a-f]{4}-/, /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/];

/**
 * Saves what `page` shows as docs/dashboard/NAME.png when the suites run for the pictures
 * (`npm run screenshots` sets SAVE_SCREENSHOTS=1); a test run leaves the checkout as it
 * found it. The file is rewritten only when the picture changed. Ids and times are covered
 * with a box, and so is whatever else `mask` names (a port, a countdown).
 */
export async function screenshot(page: Page, name: string, mask: ReadonlyArray<ReturnType<Page['locator']>> = []): Promise<void> {
  if (process.env.SAVE_SCREENSHOTS !== '1') return;
  const volatile = VOLATILE_TEXT.map((text) => page.getByText(text));
  const png = await page.screenshot({ fullPage: true, mask: [...volatile, ...mask], animations: 'disabled' });
  const path = `${SCREENSHOTS}${name}.png`;
  if (existsSync(path) && readFileSync(path).equals(png)) return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  writeFileSync(path, png);
}
