// Bulk import commands (issue 39): a job is made once its file's bytes are durable (the
// route writes them first, then runs `startBulkImport` naming them), then the importer
// (src/bulk/import-worker.ts) runs one `importSlice` per slice. A slice holds the job's
// environment: it opens customers, whose UMA index is the environment's.
import { decideImportFailed, decideImportSlice, newImportJob, type BulkImportJob, type ImportFile, type SliceRow } from '../bulk-import.js';
import { notFound } from '../errors.js';
import { newId } from '../../src/engine/ids.js';
import type { DomainCommand, World } from '../world.js';

/** The job `id` of environment `envId`; else a 404 naming jobId. */
export function importJobIn(world: World, envId: string, id: string): BulkImportJob {
  const job = world.bulkImports.inEnv(envId, id);
  if (job === undefined) throw notFound('jobId', 'bulk import job', id);
  return job;
}

function jobOf(world: World, id: string): BulkImportJob {
  const job = world.bulkImports.get(id);
  if (job === undefined) throw new Error(`bulk import ${id} does not exist`);
  return job;
}

export const startBulkImport: DomainCommand<{ envId: string; file: ImportFile; total: number }, BulkImportJob> = {
  name: 'bulkImport.start',
  actors: ({ envId }) => [envId],
  decide: ({ envId, file, total }, world, at) => {
    const id = newId('Job', at);
    return { events: newImportJob(id, envId, file, total, at), reply: () => world.bulkImports.get(id)! };
  },
};

/**
 * The slice of rows from `from` on, read from the file before anything is held. A slice
 * whose rows the job has moved past (decided by an earlier run) logs nothing: a row is
 * decided once.
 */
export const importSlice: DomainCommand<{ jobId: string; from: number; rows: readonly SliceRow[] }, BulkImportJob> = {
  name: 'bulkImport.slice',
  actors: ({ jobId }, world) => [jobOf(world, jobId).envId],
  decide: ({ jobId, from, rows }, world, at) => {
    const job = jobOf(world, jobId);
    const events = job.next === from ? decideImportSlice(world.envs.get(job.envId)!, job, rows, world.customers, at) : [];
    return { events, reply: () => world.bulkImports.get(jobId)! };
  },
};

export const failBulkImport: DomainCommand<{ jobId: string; reason: string }, BulkImportJob> = {
  name: 'bulkImport.fail',
  actors: ({ jobId }, world) => [jobOf(world, jobId).envId],
  decide: ({ jobId, reason }, world) => ({ events: decideImportFailed(jobOf(world, jobId), reason), reply: () => world.bulkImports.get(jobId)! }),
};
