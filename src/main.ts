// `npm start`: the service on HOST:PORT with its store in DATA_DIR. It listens at once and
// recovers the store behind /readyz; SIGTERM (or SIGINT) stops accepting, drains requests
// in flight, makes the final commit and exits 0 (during recovery: stops the replay, exits 0).
import { startService } from './app.js';
import { ConfigError, configFromEnv, type ServiceConfig } from './config.js';
import { DataDirExposedError, DataDirInUseError, LockUnsupportedError, StoreGoneError } from './data-dir.js';
import { RecoveryAbortedError } from './engine/engine.js';
import { StoreDamagedError } from './engine/store.js';
import { StoreCorruptError } from './engine/format.js';
import { ListenError } from './http/server.js';
import { StoreIdentityError } from './store-identity.js';
import { announceStart, createLogger, reportTo } from './ops/log.js';

/** Refusals whose message says all there is to say; anything else is a bug and shows its stack. */
function isRefusal(err: unknown): err is Error {
  const refusals = [ConfigError, DataDirExposedError, LockUnsupportedError, DataDirInUseError, ListenError, StoreGoneError, StoreDamagedError, StoreCorruptError, StoreIdentityError];
  return refusals.some((refusal) => err instanceof refusal);
}

/** A setting the service cannot start with, or a data directory others may read, exits 2 (a usage error); other refusals and bugs 1. */
const CONFIG_EXIT = 2;

function cannotStart(err: unknown): never {
  const detail = isRefusal(err) ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err);
  // One plain line: the operator reads it, and nothing else was written.
  process.stderr.write(`cannot start: ${detail}\n`);
  process.exit(err instanceof ConfigError || err instanceof DataDirExposedError ? CONFIG_EXIT : 1);
}

// The settings, parsed once before anything is opened; the service is started with them.
let config: ServiceConfig;
try {
  config = configFromEnv(process.env);
} catch (err) {
  cannotStart(err);
}
const report = reportTo(createLogger(config.logLevel));

/** What main needs of a running service: one node on its store, or a node of a cluster (NATS_URL). */
interface Running {
  baseUrl: string;
  credentialsPath: string;
  close(): Promise<void>;
}

const recovery = new AbortController();
let service: Running | undefined;
let stopping = false;
const stopRunning = (running: Running): void => {
  running.close().then(
    () => process.exit(0),
    (err: unknown) => {
      report(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`, { event: 'service.stop.failed', level: 'fatal', error: String(err) });
      process.exit(1);
    },
  );
};
const stop = (signal: string): void => {
  if (stopping) return;
  stopping = true;
  report(`${signal}: ${service === undefined ? 'stopping recovery' : 'draining'}`, { event: 'service.stopping', signal });
  if (service === undefined) recovery.abort();
  else stopRunning(service);
};
// Installed before recovery starts: a supervisor may signal while the log replays.
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

// Cluster mode's modules (the NATS clients, the forwarding pool) load only for a cluster node.
const starting: Promise<Running> =
  config.cluster === undefined
    ? startService({ config, report, signal: recovery.signal })
    : import('./cluster/service.js').then(({ startClusterNode }) => startClusterNode({ config, report }));
service = await starting.catch((err: unknown) => {
  if (err instanceof RecoveryAbortedError) {
    report(err.message, { event: 'service.stopped', during: 'recovery' });
    process.exit(0);
  }
  return cannotStart(err);
});
// A signal that came after the replay but before the service was up: it stops now.
if (stopping) stopRunning(service);
else announceStart(service.baseUrl, service.credentialsPath);
