// Reads of bulk imports (issue 39): a job of the calling environment, with its progress.
import type { BulkImportJob } from '../bulk-import.js';
import { importJobIn } from '../commands/bulk-imports.js';
import type { DomainQuery } from '../world.js';

export const bulkImportJob: DomainQuery<{ envId: string; jobId: string }, BulkImportJob> = ({ envId, jobId }, world) => importJobIn(world, envId, jobId);
