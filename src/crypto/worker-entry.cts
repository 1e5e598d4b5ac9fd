// The crypto pool's worker entry, as CommonJS. Piscina loads a worker file with require()
// before it tries import(), and Node 20's require() of an ES module aborts the whole process
// when the worker is terminated while that module loads (an assertion in
// CreateRequiredModuleFacade; seen once in the store suite, a service closed as it started).
// Required as CommonJS, this file imports the ES module worker.js itself, at once, so the
// worker still reports when it has loaded (CryptoPool.close waits for that report).
import type { default as cryptoWorker } from './worker.js' with { 'resolution-mode': 'import' };

const worker: Promise<{ default: typeof cryptoWorker }> = import('./worker.js');
// A worker that failed to load fails each task with that error, where the task awaits it.
worker.catch(() => undefined);

export = async function cryptoWorkerEntry(task: Parameters<typeof cryptoWorker>[0]): Promise<ReturnType<typeof cryptoWorker>> {
  return (await worker).default(task);
};
