// The bulk importer: moves each unfinished import job (actors/bulk-import.ts) through its
// file, one slice at a time, each slice one `importSlice` command and one log entry.
//
// Why a worker of its own, as webhook delivery has, and not engine effects or durable
// timers: the queue is the jobs themselves. A job's progress (its next row) is in its
// record, logged with the customers of each slice, so a restart, kill -9 included, finds
// every unfinished job in the recovered state and resumes it from the row after its last
// durable slice; `start` does that, as delivery's start finds its PENDING events. An effect
// logs its payload and its outcome (the rows would go into the log twice) and runs its
// siblings in any order with the engine's retry schedule; a timer's decision is synchronous
// and could not read and parse the file, which is slow work done before a decision.
//
// Not starving other requests: a slice is at most SLICE_ROWS rows (about a millisecond or
// two of decision), the file is parsed once per job in chunks with turns of the event loop
// between them (the upload hands its parse over; a job resumed after a restart reads its
// file back), and each slice waits for its entry to be durable and then SLICE_SPACING_MS
// on the clock before the next, so requests that arrived meanwhile are served between
// slices (bench/bulk-import.ts measures a payment load's p99 beside an import).
import { createHash } from 'node:crypto';
import { isFinished, type BulkImportJob } from '../../actors/bulk-import.js';
import { failBulkImport, importSlice } from '../../actors/commands/bulk-imports.js';
import { DomainError } from '../../actors/errors.js';
import type { DomainEvent, TimerMessage, World } from '../../actors/world.js';
import type { BlobStore } from '../engine/blob-store.js';
import type { Clock } from '../engine/clock.js';
import type { Engine } from '../engine/engine.js';
import type { Report } from '../engine/report.js';
import { readCsv, sliceRows, type CsvTable } from '../http/bulk-csv.js';
import { createCustomerBody } from '../http/routes/customers.js';

/** Rows per slice: one decision and one entry. */
export const SLICE_ROWS = 100;
/** The wait on the clock between a slice's durable entry and the next slice. */
export const SLICE_SPACING_MS = 1;
/** After a slice the log refused (overload, a failing commit), the wait before it is tried again. */
const RETRY_MS = 1_000;
/** The store's table of import files' bytes. */
export const IMPORT_BYTES_TABLE = 'bulk-import-bytes';

export interface ImportWorkerParts {
  engine: Engine<DomainEvent, TimerMessage, World>;
  world: World;
  clock: Clock;
  report: Report;
}

export class BulkImportWorker {
  /** Where import files' bytes are kept, beside the log: written durably before the job that names them. */
  readonly bytes: BlobStore;
  readonly #parts: ImportWorkerParts;
  /** Jobs being moved now: one run per job. */
  readonly #running = new Set<string>();
  #stopped = true;

  constructor(parts: ImportWorkerParts) {
    this.#parts = parts;
    this.bytes = parts.engine.blobs(IMPORT_BYTES_TABLE);
  }

  /** Resumes every unfinished job of the recovered state, and moves new ones as they are kicked. */
  start(): void {
    this.#stopped = false;
    for (const id of this.#parts.world.bulkImports.unfinished()) this.kick(id);
  }

  /** No slice starts after this; one deciding finishes (the engine's close waits for its entry). */
  stop(): void {
    this.#stopped = true;
  }

  /**
   * A new job, durable: move it (nothing when it is moving already or the worker is stopped).
   * `parsed`: its file as the upload parsed it, so a live upload's file is not parsed twice;
   * without it (a job resumed after a restart) the file is read back and parsed.
   */
  kick(jobId: string, parsed?: CsvTable): void {
    if (this.#stopped || this.#running.has(jobId)) return;
    this.#running.add(jobId);
    void this.#run(jobId, parsed)
      .catch((err: unknown) => this.#parts.report(`bulk import ${jobId} stopped: ${String(err)}`, { event: 'bulkImport.stopped', level: 'error', jobId }))
      .finally(() => this.#running.delete(jobId));
  }

  async #run(jobId: string, parsed: CsvTable | undefined): Promise<void> {
    const table = parsed ?? (await this.#table(jobId));
    if (table === undefined) return;
    for (;;) {
      const job = this.#parts.world.bulkImports.get(jobId);
      if (this.#stopped || job === undefined || isFinished(job)) return;
      try {
        await this.#parts.engine.run(importSlice, { jobId, from: job.next, rows: sliceRows(table, job.next, SLICE_ROWS, createCustomerBody) }, () => undefined);
      } catch (err) {
        if (this.#stopped) return;
        this.#parts.report(`bulk import ${jobId}: slice at row ${job.next + 1} not logged, tried again in ${RETRY_MS} ms: ${String(err)}`, { event: 'bulkImport.retry', level: 'warn', jobId });
        await this.#pause(RETRY_MS);
        continue;
      }
      await this.#pause(SLICE_SPACING_MS);
    }
  }

  /** The job's file read back and parsed; a file that cannot be (gone, other bytes, no longer parses) ends the job FAILED. */
  async #table(jobId: string): Promise<CsvTable | undefined> {
    const job = this.#parts.world.bulkImports.get(jobId);
    if (job === undefined || isFinished(job)) return undefined;
    const bytes = await this.bytes.get(job.file.key);
    const reason = unreadable(job, bytes);
    if (reason !== undefined) return this.#fail(jobId, reason);
    try {
      return await readCsv(bytes!);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      return this.#fail(jobId, `the file no longer parses: ${err.message}`);
    }
  }

  async #fail(jobId: string, reason: string): Promise<undefined> {
    await this.#parts.engine.run(failBulkImport, { jobId, reason }, () => undefined);
    return undefined;
  }

  #pause(ms: number): Promise<void> {
    const clock = this.#parts.clock;
    return new Promise((resolve) => clock.schedule(clock.now() + ms, resolve));
  }
}

/** Why the bytes read back are not the job's file, or undefined when they are. */
function unreadable(job: BulkImportJob, bytes: Buffer | undefined): string | undefined {
  if (bytes === undefined) return 'the uploaded file is missing from the store';
  if (bytes.length !== job.file.size || createHash('sha256').update(bytes).digest('hex') !== job.file.sha256) return 'the stored file is not the uploaded one (its hash differs)';
  return undefined;
}
