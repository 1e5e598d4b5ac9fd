// Where the built service finds the files it reads at run time, as paths from the directory
// this module is built into (dist/src). The service's bundle (scripts/bundle.ts) is written
// into that same directory, so each path is right both for the modules tsc emits, which
// `npm test` imports, and for the bundle, which `npm start` runs: a module that located its
// files from its own place would find them only in one of the two.
import { fileURLToPath } from 'node:url';

const BUILT_SRC = new URL('./', import.meta.url);

/** The built dashboard (its pages, scripts and styles): dist/src/dashboard. */
export const DASHBOARD_DIR = fileURLToPath(new URL('dashboard/', BUILT_SRC));

/** The crypto pool's worker entry, loaded by each worker thread on its own: dist/src/crypto/worker-entry.cjs, which imports worker.js. */
export const CRYPTO_WORKER_FILE = fileURLToPath(new URL('crypto/worker-entry.cjs', BUILT_SRC));

/** The service as one module (scripts/bundle.ts writes it, `npm start` runs it): dist/src/main.bundle.js. */
export const SERVICE_BUNDLE = fileURLToPath(new URL('main.bundle.js', BUILT_SRC));
