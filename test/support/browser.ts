// Debian's Chromium driven by playwright-core, for the dashboard's browser tests. A machine
// without it gets it from apt when the tests run as root (as CI does); otherwise the suite
// fails saying what to install: it never skips.
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
