// Bulk import of customers (issue 39; the vendor's uploadCustomersCsv and
// getBulkCustomerImportJob; CONTRACT.md "Today's clients, second wave"). A job names its
// CSV file's bytes (kept beside the log, never in an entry) and moves through the file in
// slices: each slice is one decision and one entry holding the `customer.opened` facts of
// its good rows and the job's progress (the next row, the slice's row errors), so a restart
// resumes from the last durable slice and never opens a row's customer twice. A row is
// decided exactly as POST /customers decides a body (decideCreateCustomer); a
// platformCustomerId the environment holds already, or an earlier row of the file, is a row
// error. The job's actor is its environment's: a slice opens customers, which hold it.
import { decideCreateCustomer, openedCustomerId, openedUmaAddress, type CustomerDirectory, type CustomerInput, type CustomerOpened } from './customer.js';
import type { Customers } from './customer.js';
import { DomainError, type FieldProblem } from './errors.js';
import { isoTime } from './iso-time.js';
import type { PlatformEnv } from './platform.js';
import { bucket, RecordMap, type Appliers, type RecordKind, type SortedIds } from './registry.js';

/**
 * The CSV's columns, as the vendor's description of uploadCustomersCsv lists them, and the
 * field of POST /customers' body each fills; businessIncorporatedOn is ours, since POST
 * /customers requires a business's incorporation date. platformAccountId and description
 * fill nothing: a customer has neither (docs/api.md).
 */
export const IMPORT_COLUMNS: ReadonlyMap<string, string | undefined> = new Map([
  ['umaAddress', 'umaAddress'],
  ['platformCustomerId', 'platformCustomerId'],
  ['customerType', 'customerType'],
  ['fullName', 'fullName'],
  ['birthDate', 'birthDate'],
  ['email', 'email'],
  ['addressLine1', 'address.line1'],
  ['addressLine2', 'address.line2'],
  ['city', 'address.city'],
  ['state', 'address.state'],
  ['postalCode', 'address.postalCode'],
  ['country', 'address.country'],
  ['businessLegalName', 'businessInfo.legalName'],
  ['businessRegistrationNumber', 'businessInfo.registrationNumber'],
  ['businessTaxId', 'businessInfo.taxId'],
  ['businessIncorporatedOn', 'businessInfo.incorporatedOn'],
  ['platformAccountId', undefined],
  ['description', undefined],
]);
/** Columns every header has (the vendor's "required columns for all customers"). */
export const REQUIRED_COLUMNS: readonly string[] = ['umaAddress', 'platformCustomerId', 'customerType'];

const COLUMN_OF_FIELD = new Map<string, string>([...IMPORT_COLUMNS].flatMap(([column, field]) => (field === undefined ? [] : [[field, column] as [string, string]])));
// A business's country is the row's country column too.
COLUMN_OF_FIELD.set('businessInfo.country', 'country');

/** The column a problem of POST /customers' body at `field` is in; a field no column fills keeps its name. */
export function columnOf(field: string): string {
  return COLUMN_OF_FIELD.get(field) ?? field;
}

/** CONTRACT.md: a file holds at most this many data rows. */
export const MAX_IMPORT_ROWS = 100_000;

export type ImportStatus = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED';

/** The file's bytes as the import store holds them: named by key, checked by hash when read back. */
export interface ImportFile {
  readonly key: string;
  readonly sha256: string;
  readonly size: number;
}

/** A bad row's problem: row 1 is the first data row (CONTRACT.md). */
export interface RowError {
  readonly row: number;
  readonly field: string;
  /** The error code POST /customers would answer with (INVALID_INPUT, UMA_ADDRESS_TAKEN ...), or DUPLICATE_PLATFORM_CUSTOMER_ID. */
  readonly code: string;
  readonly message: string;
}

export interface BulkImportJob {
  /** `Job:<uuid>` */
  readonly id: string;
  readonly envId: string;
  readonly file: ImportFile;
  /** Data rows in the file. */
  readonly total: number;
  /** Rows decided so far: the next slice starts at this (0-based) index. */
  readonly next: number;
  readonly successful: number;
  readonly failed: number;
  /** The row errors, one list per slice that had any: a slice appends without copying the earlier ones. */
  readonly errors: ReadonlyArray<readonly RowError[]>;
  readonly status: ImportStatus;
  /** FAILED: why the file could not be imported. */
  readonly failureReason?: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly completedAt?: number;
}

/** A row as the importer read it before the decision: the body POST /customers would take, or what its schema refused. */
export type SliceRow = { readonly row: number; readonly input: CustomerInput } | { readonly row: number; readonly problems: readonly FieldProblem[] };

export type BulkImportEvent =
  | { type: 'bulkImport.created'; job: BulkImportJob }
  /** One slice: the rows [from, next) decided; its good rows' customers are the `customer.opened` events of the same entry. */
  | { type: 'bulkImport.sliced'; id: string; next: number; successful: number; errors: RowError[] }
  | { type: 'bulkImport.failed'; id: string; reason: string };

export function newImportJob(id: string, envId: string, file: ImportFile, total: number, at: number): BulkImportEvent[] {
  // Even a file of no rows is PENDING until its (empty) slice: its end is a slice's like any other's.
  return [{ type: 'bulkImport.created', job: { id, envId, file, total, next: 0, successful: 0, failed: 0, errors: [], status: 'PENDING', createdAt: at, updatedAt: at } }];
}

/** What a slice reads of the environment's customers: UMA owners and platformCustomerId holders. */
export type ImportDirectory = CustomerDirectory & Pick<Customers, 'platformCustomerOwner'>;

/**
 * The slice of `rows` (starting at the job's next row): the customers of its good rows and
 * its progress, in one list of events for one entry. Rows of this slice claim their UMA
 * address and platformCustomerId for the rows after them, as applied customers would.
 */
export function decideImportSlice(env: PlatformEnv, job: BulkImportJob, rows: readonly SliceRow[], directory: ImportDirectory, at: number): Array<CustomerOpened | BulkImportEvent> {
  if (job.status === 'COMPLETED' || job.status === 'FAILED') return [];
  const claimedUma = new Map<string, string>();
  const claimedIds = new Set<string>();
  const sliceDirectory: CustomerDirectory = { umaOwner: (envId, address) => claimedUma.get(address.toLowerCase()) ?? directory.umaOwner(envId, address) };
  const opened: CustomerOpened[] = [];
  const errors: RowError[] = [];
  for (const slot of rows) {
    if ('problems' in slot) {
      errors.push(...slot.problems.map((p) => ({ row: slot.row, field: columnOf(p.field), code: 'INVALID_INPUT', message: p.message })));
      continue;
    }
    const platformId = slot.input.platformCustomerId;
    if (platformId !== undefined && (claimedIds.has(platformId) || directory.platformCustomerOwner(env.id, platformId) !== undefined)) {
      errors.push({ row: slot.row, field: 'platformCustomerId', code: 'DUPLICATE_PLATFORM_CUSTOMER_ID', message: `${platformId} is the platformCustomerId of another customer of this environment` });
      continue;
    }
    const decided = decideRow(env, slot.row, slot.input, sliceDirectory, at);
    if ('problems' in decided) {
      errors.push(...decided.problems);
      continue;
    }
    opened.push(decided.event);
    claimedUma.set(decided.umaAddress, openedCustomerId(decided.event));
    if (platformId !== undefined) claimedIds.add(platformId);
  }
  const next = job.next + rows.length;
  return [...opened, { type: 'bulkImport.sliced', id: job.id, next, successful: opened.length, errors }];
}

/** One row decided as POST /customers decides a body: its customer, or its problems by field. */
function decideRow(env: PlatformEnv, row: number, input: CustomerInput, directory: CustomerDirectory, at: number): { event: CustomerOpened; umaAddress: string } | { problems: RowError[] } {
  try {
    const event = decideCreateCustomer(env, input, directory, at)[0]!;
    return { event, umaAddress: openedUmaAddress(env, event) };
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const problems = err.fields !== undefined && err.fields.length > 0 ? err.fields : [{ field: 'row', message: err.message }];
    return { problems: problems.map((p) => ({ row, field: columnOf(p.field), code: err.code, message: p.message })) };
  }
}

/** A job whose file cannot be read (gone, or not the bytes it named) ends FAILED with the reason. */
export function decideImportFailed(job: BulkImportJob, reason: string): BulkImportEvent[] {
  return job.status === 'COMPLETED' || job.status === 'FAILED' ? [] : [{ type: 'bulkImport.failed', id: job.id, reason }];
}

export function isFinished(job: BulkImportJob): boolean {
  return job.status === 'COMPLETED' || job.status === 'FAILED';
}

export class BulkImports implements RecordKind<BulkImportJob, BulkImportEvent> {
  readonly idPrefix = 'Job:';
  readonly #records = new RecordMap<BulkImportJob>();
  readonly records: ReadonlyMap<string, BulkImportJob> = this.#records;
  readonly #byEnv = new Map<string, SortedIds>();
  /** Jobs not yet COMPLETED or FAILED: what the importer resumes after a restart. */
  readonly #unfinished = new Set<string>();

  actorOf(job: BulkImportJob): string {
    return job.envId;
  }

  readonly appliers: Appliers<BulkImportEvent> = {
    'bulkImport.created': (event) => {
      if (this.#records.has(event.job.id)) throw new Error(`bulk import ${event.job.id} exists already`);
      this.restore(event.job);
    },
    'bulkImport.sliced': (event, at) => {
      const job = this.#current(event.id);
      const processed = event.next - job.next;
      const failed = processed - event.successful;
      const done = event.next >= job.total;
      const next: BulkImportJob = {
        ...job,
        next: event.next,
        successful: job.successful + event.successful,
        failed: job.failed + failed,
        errors: event.errors.length === 0 ? job.errors : [...job.errors, event.errors],
        status: done ? 'COMPLETED' : 'PROCESSING',
        updatedAt: at,
        ...(done ? { completedAt: at } : {}),
      };
      this.#put(next);
    },
    'bulkImport.failed': (event, at) => {
      this.#put({ ...this.#current(event.id), status: 'FAILED', failureReason: event.reason, updatedAt: at, completedAt: at });
    },
  };

  #current(id: string): BulkImportJob {
    const job = this.#records.get(id);
    if (job === undefined) throw new Error(`bulk import ${id} does not exist`);
    return job;
  }

  #put(job: BulkImportJob): void {
    this.#records.set(job.id, job);
    if (isFinished(job)) this.#unfinished.delete(job.id);
    else this.#unfinished.add(job.id);
  }

  restore(job: BulkImportJob): void {
    this.#put(job);
    bucket(this.#byEnv, job.envId).insert(job.id);
  }

  checkInvariants(): string[] {
    const wrong: string[] = [];
    for (const job of this.#records.values()) {
      if (job.successful + job.failed > job.next || job.next > job.total) wrong.push(`bulk import ${job.id} counts ${job.successful} + ${job.failed} of ${job.next} rows decided, ${job.total} in all`);
    }
    return wrong;
  }

  get(id: string): BulkImportJob | undefined {
    return this.#records.get(id);
  }

  inEnv(envId: string, id: string): BulkImportJob | undefined {
    const job = this.#records.get(id);
    return job?.envId === envId ? job : undefined;
  }

  unfinished(): readonly string[] {
    return [...this.#unfinished];
  }
}

export interface BulkImportErrorView {
  correlationId: string;
  code: string;
  message: string;
  details: { row: number; field: string };
}

export interface BulkImportJobView {
  id: string;
  status: ImportStatus;
  progress: { total: number; processed: number; successful: number; failed: number };
  errors: BulkImportErrorView[];
  completedAt?: string;
  failureReason?: string;
}

/** A row error in the vendor's entry shape: `row_<n>` correlates it, the details name row and field. */
function renderRowError(error: RowError): BulkImportErrorView {
  return { correlationId: `row_${error.row}`, code: error.code, message: `${error.field}: ${error.message}`, details: { row: error.row, field: error.field } };
}

export function renderImportJob(job: BulkImportJob): BulkImportJobView {
  const view: BulkImportJobView = {
    id: job.id,
    status: job.status,
    progress: { total: job.total, processed: job.next, successful: job.successful, failed: job.failed },
    errors: job.errors.flatMap((slice) => slice.map(renderRowError)),
  };
  if (job.completedAt !== undefined) view.completedAt = isoTime(job.completedAt);
  if (job.failureReason !== undefined) view.failureReason = job.failureReason;
  return view;
}
