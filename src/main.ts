// `npm start`: the service on HOST:PORT with its store in DATA_DIR. SIGTERM (or SIGINT)
// stops accepting, drains requests in flight, makes the final commit and exits 0.
import { ConfigError, startService } from './app.js';
import { DataDirInUseError, StoreGoneError } from './data-dir.js';
import { StoreDamagedError } from './engine/store.js';
import { StoreIdentityError } from './store-identity.js';

/** Refusals whose message says all there is to say; anything else is a bug and shows its stack. */
function isRefusal(err: unknown): err is Error {
  return err instanceof ConfigError || err instanceof DataDirInUseError || err instanceof StoreGoneError || err instanceof StoreDamagedError || err instanceof StoreIdentityError;
}

/** A setting the service cannot start with exits 2 (a usage error), other refusals and bugs 1. */
const CONFIG_EXIT = 2;

const service = await startService().catch((err: unknown) => {
  const detail = isRefusal(err) ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
  process.stderr.write(`cannot start: ${detail}\n`);
  process.exit(err instanceof ConfigError ? CONFIG_EXIT : 1);
});

let stopping = false;
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  process.stderr.write(`${signal}: draining\n`);
  service.close().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`shutdown failed: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
// Announced only once a signal is handled: a supervisor that signals the moment it reads
// this line must get a drain and a final commit, not the default exit.
process.stdout.write(`listening on ${service.baseUrl}\ncredentials: ${service.credentialsPath}\n`);
