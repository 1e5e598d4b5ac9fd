// How the suite runner starts the one Chromium the browser suites share, and how it tells
// them where it is: constants without test hooks, so the runner can import them without
// loading node:test.
/** Set by the suite runner: the browser it started for every browser suite (each suite uses contexts of its own). */
export const BROWSER_ENDPOINT_ENV = 'TEST_BROWSER_ENDPOINT';
export const CHROMIUM_ARGS = ['--no-sandbox'];
