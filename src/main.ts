// `npm start`: the service on HOST:PORT with its store in DATA_DIR. SIGTERM (or SIGINT)
// stops accepting, drains requests in flight, makes the final commit and exits 0.
import { startService } from './app.js';

const service = await startService().catch((err: unknown) => {
  process.stderr.write(`cannot start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});

process.stdout.write(`listening on ${service.baseUrl}\ncredentials: ${service.credentialsPath}\n`);

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
