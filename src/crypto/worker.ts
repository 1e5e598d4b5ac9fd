// Piscina worker entry point. Loaded from the compiled dist/src/crypto/worker.js by
// pool.ts; each task is a plain-data CryptoTask and the reply a TaskOutcome.
import { runCryptoTask, type CryptoOp, type CryptoTask, type CryptoTaskResults, type TaskOutcome } from './tasks.js';

export default function cryptoWorker(task: CryptoTask): TaskOutcome<CryptoTaskResults[CryptoOp]> {
  return runCryptoTask(task);
}
