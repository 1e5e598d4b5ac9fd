// Bulk import as a plain client drives it: the service in its own process, the client side
// fetch with a FormData upload and JSON answers, nothing of the service's code imported.
// Then kill -9 in the middle of a job of a few thousand rows: restarted on the same data
// directory, the job resumes by itself and completes with every good row's customer exactly
// once (counted by platformCustomerId) and every bad row an error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { refusedNaming, sandboxClient, type PlainClient } from './support/plain-client.js';

const HEADER = 'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country';
const row = (id: string, birthDate = '1990-01-15') => `,${id},INDIVIDUAL,Person ${id},${birthDate},1 Main St,Austin,TX,78701,US`;

describe('bulk import through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'bulk-client-'));
  let child: ServiceChild;
  let api: PlainClient;
  const start = async (): Promise<void> => {
    child = await spawnService(dataDir);
    api = sandboxClient(child);
  };
  before(start);
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const upload = async (csv: string): Promise<{ status: number; body: any }> => {
    const { tokenId, clientSecret } = JSON.parse(readFileSync(child.credentialsPath, 'utf8')).sandbox;
    const form = new FormData();
    form.append('file', new Blob([csv], { type: 'text/csv' }), 'customers.csv');
    const res = await fetch(`${child.baseUrl}/customers/bulk/csv`, { method: 'POST', body: form, headers: { authorization: `Basic ${Buffer.from(`${tokenId}:${clientSecret}`).toString('base64')}` } });
    return { status: res.status, body: await res.json() };
  };
  const ended = async (jobId: string): Promise<any> => {
    for (let i = 0; i < 600; i++) {
      const job = await api.ok('GET', `/customers/bulk/jobs/${jobId}`);
      if (job.status === 'COMPLETED' || job.status === 'FAILED') return job;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.fail(`job ${jobId} did not end`);
  };
  /** How many customers hold each platformCustomerId, over every page of the list. */
  const customersByPlatformId = async (): Promise<Map<string, number>> => {
    const counts = new Map<string, number>();
    let cursor: string | undefined;
    do {
      const page = await api.ok('GET', `/customers?limit=100${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
      for (const c of page.data) counts.set(c.platformCustomerId, (counts.get(c.platformCustomerId) ?? 0) + 1);
      cursor = page.hasMore ? page.nextCursor : undefined;
    } while (cursor !== undefined);
    return counts;
  };

  it('imports a file, reports its bad rows and refuses a bad header', async () => {
    refusedNaming(await upload('platformCustomerId,customerType\nx,INDIVIDUAL\n'), 'file');
    const accepted = await upload([HEADER, row('plain-1'), row('plain-2', '1990-13-01'), row('plain-1')].join('\n'));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const job = await ended(accepted.body.jobId);
    assert.deepEqual({ status: job.status, progress: job.progress }, { status: 'COMPLETED', progress: { total: 3, processed: 3, successful: 1, failed: 2 } });
    assert.deepEqual(job.errors.map((e: any) => `${e.correlationId} ${e.details.field}`), ['row_2 birthDate', 'row_3 platformCustomerId']);
  });

  it('resumes a job after kill -9 with every good row imported exactly once', async () => {
    const total = 3_000;
    // Every 7th row is bad (a date that does not exist); every 11th repeats the row before it.
    const ids = Array.from({ length: total }, (_, i) => (i % 11 === 10 ? `crash-${i - 1}` : `crash-${i}`));
    const rows = ids.map((id, i) => row(id, i % 7 === 6 ? '1990-02-30' : '1990-01-15'));
    const accepted = await upload([HEADER, ...rows].join('\n'));
    assert.equal(accepted.status, 202, JSON.stringify(accepted.body));
    const { jobId } = accepted.body;
    let seen = await api.ok('GET', `/customers/bulk/jobs/${jobId}`);
    while (seen.progress.processed === 0) seen = await api.ok('GET', `/customers/bulk/jobs/${jobId}`);
    // A moment later, so the kill falls anywhere within a slice, not just after a progress read.
    await new Promise((resolve) => setTimeout(resolve, 15));
    child.proc.kill('SIGKILL');
    assert.ok(seen.progress.processed < total, `the job ended before the kill (${seen.progress.processed} rows)`);
    await child.exited;
    await start();
    const job = await ended(jobId);
    assert.equal(job.status, 'COMPLETED');
    const good = new Set(ids.filter((_, i) => i % 7 !== 6));
    const counts = await customersByPlatformId();
    for (const id of good) assert.equal(counts.get(id), 1, `${id} imported ${counts.get(id) ?? 0} times`);
    assert.deepEqual(job.progress, { total, processed: total, successful: good.size, failed: total - good.size });
  });
});
