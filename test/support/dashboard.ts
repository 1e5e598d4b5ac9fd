// What every dashboard suite runs against: the service and a browser, for the whole suite.
// Kept apart from browser.ts, which the suite runner loads and which must not load the service.
import type { Browser } from 'playwright-core';
import { browserForSuite } from './browser.js';
import { serviceForSuite, type TestService, type TestServiceOptions } from './service.js';

export interface DashboardSuite {
  /** The suite's service (see serviceForSuite). */
  readonly svc: TestService;
  readonly browser: Browser;
  /** The dashboard's origin: localhost, not 127.0.0.1, a secure context as WebAuthn needs and signedInDashboard requires. */
  readonly origin: string;
}

/**
 * The browser and the service of one dashboard suite: before its tests the browser is
 * launched and the service started with `options`; after them the browser is closed first,
 * then the service stopped.
 */
export function dashboardForSuite(options: TestServiceOptions = {}): DashboardSuite {
  const launched = browserForSuite();
  const svc = serviceForSuite(options);
  return {
    svc,
    get browser() {
      return launched.browser;
    },
    get origin() {
      return `http://localhost:${svc.service.http.port}`;
    },
  };
}
