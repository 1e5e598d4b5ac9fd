// Bulk import of customers (issue 39; the vendor's uploadCustomersCsv and
// getBulkCustomerImportJob; CONTRACT.md "Today's clients, second wave"). The upload is
// multipart/form-data with one `file` part of CSV: the form is parsed and the file read
// whole before anything is written (a bad header or too many rows is a 400 that changes
// nothing), its bytes are then written durably to the import store, and only then is the
// job made that names them; the 202 goes out once that entry is durable, and the importer
// (src/bulk/import-worker.ts) moves the job in slices from there.
import { Type } from '@sinclair/typebox';
import { renderImportJob, type ImportFile } from '../../../actors/bulk-import.js';
import { startBulkImport } from '../../../actors/commands/bulk-imports.js';
import { invalidField } from '../../../actors/errors.js';
import { bulkImportJob } from '../../../actors/queries/bulk-imports.js';
import { storeBytes } from '../../engine/blob-store.js';
import { readCsv } from '../bulk-csv.js';
import { FORM_OVERHEAD_BYTES, parseForm, type MultipartBody } from '../multipart.js';
import { route, type Reply, type Route, type RouteContext } from '../route.js';
import { IdOf } from '../schemas/resources.js';
import { List, Obj, Str, StringEnum, validator, type Parsed } from '../validation.js';

/** CONTRACT.md: an import's file is at most 20 MiB. */
export const MAX_IMPORT_FILE_BYTES = 20 * 1024 * 1024;

const UploadForm = Obj({ file: Str({ format: 'binary', description: 'CSV (UTF-8), a header row and at most 100,000 rows, at most 20 MiB' }) }, { $id: 'BulkCustomerImportRequest' });
const JobAccepted = Obj({ jobId: Str(), status: StringEnum(['PENDING', 'PROCESSING'] as const) }, { $id: 'BulkCustomerImportJobAccepted' });
const RowErrorView = Obj(
  { correlationId: Str({ description: 'row_<n>; row 1 is the first data row' }), code: Str(), message: Str(), details: Obj({ row: Type.Integer(), field: Str({ description: 'the CSV column' }) }) },
  { $id: 'BulkCustomerImportErrorEntry' },
);
const Counts = Obj({ total: Type.Integer(), processed: Type.Integer(), successful: Type.Integer(), failed: Type.Integer() });
export const BulkImportJobView = Obj(
  {
    id: Str(),
    status: StringEnum(['PENDING', 'PROCESSING', 'COMPLETED', 'FAILED'] as const),
    progress: Counts,
    errors: List(RowErrorView),
    completedAt: Type.Optional(Str({ format: 'date-time' })),
    failureReason: Type.Optional(Str({ description: 'FAILED: why the file could not be imported' })),
  },
  { $id: 'BulkCustomerImportJob' },
);
const JobIdParam = validator(Obj({ jobId: IdOf('Job') }));

async function upload(ctx: RouteContext<MultipartBody, undefined>): Promise<Reply> {
  const form = await parseForm(ctx.body, MAX_IMPORT_FILE_BYTES);
  if (form.file === undefined || form.file.bytes.length === 0) throw invalidField('file', 'required: the CSV as a file part named `file`');
  const { bytes } = form.file;
  const table = await readCsv(bytes);
  const file: ImportFile = await storeBytes(ctx.ports.bulkImports.bytes, bytes);
  let jobId: string | undefined;
  const reply = await ctx.run(startBulkImport, { envId: ctx.env.id, file, total: table.rows.length }, (job) => {
    jobId = job.id;
    return { status: 202, body: { jobId: job.id, status: job.status } };
  });
  if (jobId !== undefined) ctx.ports.bulkImports.kick(jobId, table);
  return reply;
}

export const bulkImportRoutes: Route[] = [
  route<MultipartBody>({
    method: 'POST',
    path: '/customers/bulk/csv',
    operationId: 'uploadCustomersCsv',
    summary: 'Import customers from a CSV file: 202 with a job that creates the good rows in slices and reports bad rows by row and column',
    tag: 'Customers',
    permission: 'MANAGE',
    multipart: { schema: UploadForm, maxBytes: MAX_IMPORT_FILE_BYTES + FORM_OVERHEAD_BYTES },
    response: JobAccepted,
    status: 202,
    idempotent: true,
    handle: upload,
  }),
  route<undefined, undefined, Parsed<typeof JobIdParam>>({
    method: 'GET',
    path: '/customers/bulk/jobs/{jobId}',
    operationId: 'getBulkCustomerImportJob',
    summary: "A bulk import's status, progress, row errors and completion time",
    tag: 'Customers',
    permission: 'VIEW',
    params: JobIdParam,
    response: BulkImportJobView,
    status: 200,
    handle: async ({ read, env, params }) => ({ status: 200, body: renderImportJob(await read(bulkImportJob, { envId: env.id, jobId: params.jobId })) }),
  }),
];
