// The crypto pool: the async API the HTTP layer calls for wallet cryptography.
//
// Each operation is routed either inline (run synchronously on the calling thread, on
// node:crypto) or to a Piscina worker pool. The defaults come from bench/crypto.bench.ts
// (figures in docs/crypto.md): every operation costs 50-320 us on OpenSSL and a round
// trip to a worker 100-210 us, so inline was faster both for one call and for 32
// concurrent calls on the measured host. `routes` sends any operation to the workers
// instead (rerun the benchmark on a many-core host; no code change needed).
//
// The worker queue is bounded: when `threads + maxQueue` tasks are already in flight, a
// new pool-routed task is rejected at once with CryptoOverloadedError (answer 503/429).
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { CRYPTO_WORKER_FILE } from '../built-layout.js';
import { CryptoOverloadedError } from './errors.js';
import type { ExportSigner } from './export-bundle.js';
import type { IssuedSessionKey } from './session-bundle.js';
import type { StampVerification } from './stamp.js';
import {
  rehydrateError,
  runCryptoTask,
  type CryptoOp,
  type CryptoTask,
  type CryptoTaskResults,
  type TaskOutcome,
} from './tasks.js';

export type { CryptoOp } from './tasks.js';
export type CryptoRoute = 'inline' | 'pool';

/** Chosen from the benchmark: see docs/crypto.md. */
export const DEFAULT_ROUTES: Readonly<Record<CryptoOp, CryptoRoute>> = {
  verifyStamp: 'inline',
  issueSessionKey: 'inline',
  createExportBundle: 'inline',
  signWebhook: 'inline',
};

export interface CryptoPoolOptions {
  /** Worker threads; default os.availableParallelism(). */
  readonly threads?: number;
  /** Tasks allowed to wait for a worker beyond those running; default 64 per thread. */
  readonly maxQueue?: number;
  /** Per-operation routing; unspecified operations use DEFAULT_ROUTES. */
  readonly routes?: Partial<Record<CryptoOp, CryptoRoute>>;
  /** Worker idle timeout before it exits (ms); default 30 s. */
  readonly idleTimeout?: number;
}

export interface CryptoPoolStats {
  readonly threads: number;
  readonly maxQueue: number;
  /** Pool-routed tasks submitted and not yet settled (running + queued). */
  readonly inFlight: number;
  readonly completed: number;
  readonly rejectedOverloaded: number;
}

/** How long close() waits for workers still loading before it terminates them anyway. */
const WORKER_LOAD_WAIT_MS = 5_000;

type Outcome = TaskOutcome<CryptoTaskResults[CryptoOp]>;

export class CryptoPool {
  readonly threads: number;
  readonly maxQueue: number;
  readonly routes: Readonly<Record<CryptoOp, CryptoRoute>>;
  #piscina: Piscina<CryptoTask, Outcome> | undefined;
  readonly #idleTimeout: number;
  #inFlight = 0;
  #completed = 0;
  #rejected = 0;
  #closed = false;
  /** Threads whose worker module has loaded (it says so on its parent port). */
  readonly #loaded = new Set<number>();

  constructor(options: CryptoPoolOptions = {}) {
    this.threads = Math.max(1, Math.floor(options.threads ?? availableParallelism()));
    this.maxQueue = Math.max(0, Math.floor(options.maxQueue ?? 64 * this.threads));
    this.routes = { ...DEFAULT_ROUTES, ...options.routes };
    this.#idleTimeout = options.idleTimeout ?? 30_000;
    // Start the workers only if something is routed to them.
    if (Object.values(this.routes).includes('pool')) this.#workers();
  }

  #workers(): Piscina<CryptoTask, Outcome> {
    if (this.#piscina === undefined) {
      this.#piscina = new Piscina<CryptoTask, Outcome>({
        filename: CRYPTO_WORKER_FILE,
        minThreads: this.threads,
        maxThreads: this.threads,
        maxQueue: this.maxQueue,
        idleTimeout: this.#idleTimeout,
        concurrentTasksPerWorker: 1,
      });
      this.#piscina.on('message', (message: unknown) => {
        if (typeof message === 'object' && message !== null && 'cryptoWorkerLoaded' in message && typeof message.cryptoWorkerLoaded === 'number') {
          this.#loaded.add(message.cryptoWorkerLoaded);
        }
      });
    }
    return this.#piscina;
  }

  async #run<K extends CryptoOp>(task: CryptoTask & { op: K }): Promise<CryptoTaskResults[K]> {
    if (this.#closed) throw new Error('crypto pool is closed');
    let outcome: Outcome;
    if (this.routes[task.op] === 'inline') {
      outcome = runCryptoTask(task);
    } else {
      const capacity = this.threads + this.maxQueue;
      if (this.#inFlight >= capacity) {
        this.#rejected++;
        throw new CryptoOverloadedError(this.#inFlight - this.threads, this.maxQueue);
      }
      this.#inFlight++;
      try {
        outcome = await this.#workers().run(task);
      } catch (err) {
        if (err instanceof Error && /queue is at limit/i.test(err.message)) {
          this.#rejected++;
          throw new CryptoOverloadedError(this.maxQueue, this.maxQueue);
        }
        throw err;
      } finally {
        this.#inFlight--;
      }
    }
    this.#completed++;
    if (!outcome.ok) throw rehydrateError(outcome.error);
    // The dispatcher returns the result type of the task's op.
    return outcome.value as CryptoTaskResults[K];
  }

  /**
   * Verifies a `Service-Wallet-Signature` stamp over the stored payloadToSign. Never
   * throws for a bad stamp: the result names the failed check (see stamp.ts).
   */
  verifyStamp(input: { header: string | undefined; payload: string | Uint8Array; expectedPublicKeys?: readonly string[] }): Promise<StampVerification> {
    return this.#run(
      input.expectedPublicKeys === undefined
        ? { op: 'verifyStamp', header: input.header, payload: input.payload }
        : { op: 'verifyStamp', header: input.header, payload: input.payload, expectedPublicKeys: input.expectedPublicKeys },
    );
  }

  /**
   * New session key sealed to `clientPublicKey` (HPKE). Rejects with
   * InvalidPublicKeyError (its `reason` is API-ready) for a bad clientPublicKey.
   */
  issueSessionKey(clientPublicKey: string): Promise<IssuedSessionKey> {
    return this.#run({ op: 'issueSessionKey', clientPublicKey });
  }

  /** `encryptedWalletCredentials` for a wallet export; signer null in sandbox. */
  createExportBundle(params: { clientPublicKey: string; mnemonic: string; organizationId: string; signer: ExportSigner | null }): Promise<string> {
    return this.#run({
      op: 'createExportBundle',
      clientPublicKey: params.clientPublicKey,
      mnemonic: params.mnemonic,
      organizationId: params.organizationId,
      signer: params.signer === null ? null : { privateKey: params.signer.privateKey, publicKey: params.signer.publicKey },
    });
  }

  /** `X-Service-Signature` value for a webhook body. */
  signWebhook(body: string | Uint8Array, privateKey: Uint8Array): Promise<string> {
    return this.#run({ op: 'signWebhook', body, privateKey });
  }

  stats(): CryptoPoolStats {
    return { threads: this.threads, maxQueue: this.maxQueue, inFlight: this.#inFlight, completed: this.#completed, rejectedOverloaded: this.#rejected };
  }

  /** Waits for running tasks, then stops the workers. Further calls reject. */
  async close(): Promise<void> {
    this.#closed = true;
    const piscina = this.#piscina;
    this.#piscina = undefined;
    if (piscina === undefined) return;
    // Node 20 aborts the process (a V8 fatal error in require(esm)) when a worker is
    // terminated while it is still loading its ES module, as a pool closed right after
    // it started would: wait (at most WORKER_LOAD_WAIT_MS) until every worker has loaded.
    const deadline = performance.now() + WORKER_LOAD_WAIT_MS;
    while (piscina.threads.some((worker) => !this.#loaded.has(worker.threadId)) && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await piscina.close();
  }
}

export function createCryptoPool(options: CryptoPoolOptions = {}): CryptoPool {
  return new CryptoPool(options);
}
