// The crypto pool's worker: imported by its CommonJS entry (worker-entry.cts), which each
// Piscina thread loads; each task is a plain-data CryptoTask and the reply a TaskOutcome.
import { parentPort, threadId } from 'node:worker_threads';
import { runCryptoTask, type CryptoOp, type CryptoTask, type CryptoTaskResults, type TaskOutcome } from './tasks.js';

// Tells the pool this worker has finished loading (see CryptoPool.close: a worker
// terminated while Node is still loading its ES module can abort the whole process).
parentPort?.postMessage({ cryptoWorkerLoaded: threadId });

export default function cryptoWorker(task: CryptoTask): TaskOutcome<CryptoTaskResults[CryptoOp]> {
  return runCryptoTask(task);
}
