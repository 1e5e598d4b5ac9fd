// Bulk import of customers (issue 39; CONTRACT.md "Today's clients, second wave"): a CSV's
// good rows become customers, bad rows job errors by row and column, a bad header or too
// many rows a 400 that changes nothing, platformCustomerId unique per environment, the
// job's progress readable while it runs (a ManualClock spaces its slices), and its end a
// BULK_UPLOAD event in ENVELOPE environments. Every answer is held to the vendor's schemas.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from './support/service.js';
import { assertStatus } from './support/assertions.js';
import { assertVendorResponse, assertVendorSchema, assertVendorWebhook } from './support/vendor-contract.js';
import { assertVendorError } from './support/vendor-error.js';
import { formBody } from './support/form-body.js';
import { ManualClock } from '../src/engine/clock.js';
import { decodeGroup } from '../src/engine/log.js';
import { open } from 'lmdb';
import { rmSync } from 'node:fs';
import { SLICE_ROWS, SLICE_SPACING_MS } from '../src/bulk/import-worker.js';

const HEADER = 'umaAddress,platformCustomerId,customerType,fullName,birthDate,addressLine1,city,state,postalCode,country,email,businessLegalName,businessTaxId,businessIncorporatedOn';
const person = (n: string, extra = '') => `$ind.${n}@uma.example.com,ind-${n},INDIVIDUAL,Person ${n},1990-01-15,1 Main St,Austin,TX,78701,US,${extra},,,`;

async function csvForm(csv: string) {
  return formBody({}, { bytes: Buffer.from(csv), name: 'customers.csv', type: 'text/csv' });
}

async function upload(svc: TestService, csv: string | { raw: Uint8Array; contentType: string }, headers: Record<string, string> = {}) {
  const { raw, contentType } = typeof csv === 'string' ? await csvForm(csv) : csv;
  return svc.request('POST', '/customers/bulk/csv', { raw, headers: { 'content-type': contentType, ...headers } });
}

/** The vendor publishes no 400 for the upload: its refusal is held to the vendor's Error400, our details list aside (CONTRACT.md). */
function assertUploadRefused(body: { details?: unknown }): void {
  const { details: _fields, ...rest } = body;
  assertVendorSchema('Error400', rest);
}

describe('bulk import', () => {
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ clock });
  });
  let stopped = false;
  after(() => (stopped ? undefined : svc.stop()));

  const job = async (id: string): Promise<any> => {
    const res = await svc.request('GET', `/customers/bulk/jobs/${id}`);
    assertStatus(res, 200);
    assertVendorResponse('getBulkCustomerImportJob', 200, res.body);
    return res.body;
  };
  /** Moves the clock a slice's spacing at a time until the job has ended. */
  const finished = async (id: string): Promise<any> => {
    for (let turn = 0; turn < 2000; turn++) {
      const current = await job(id);
      if (current.status === 'COMPLETED' || current.status === 'FAILED') return current;
      clock.advance(SLICE_SPACING_MS);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    assert.fail(`job ${id} did not end`);
  };
  const accepted = async (csv: string | { raw: Uint8Array; contentType: string }, headers: Record<string, string> = {}): Promise<string> => {
    const res = await upload(svc, csv, headers);
    assertStatus(res, 202);
    assertVendorResponse('uploadCustomersCsv', 202, res.body);
    return res.body.jobId;
  };
  const byPlatformId = async (platformCustomerId: string): Promise<any[]> => {
    const res = await svc.request('GET', `/customers?platformCustomerId=${encodeURIComponent(platformCustomerId)}`);
    assertStatus(res, 200);
    return res.body.data;
  };

  it('creates the good rows and reports the bad ones by row and column', async () => {
    const csv = [
      HEADER,
      person('a1'),
      '$ind.a2@uma.example.com,ind-a2,INDIVIDUAL,Person a2,1990-02-30,1 Main St,Austin,TX,78701,US,,,,',
      '$biz.a3@uma.example.com,biz-a3,BUSINESS,,,400 Commerce Way,Austin,TX,78701,US,,Acme LLC,12-3456789,2015-03-14',
      '$ind.a4@uma.example.com,ind-a4,PERSON,Person a4,1990-01-15,1 Main St,Austin,TX,78701,US,,,,',
      person('a5', 'not-an-email'),
      '$biz.a6@uma.example.com,biz-a6,BUSINESS,,,400 Commerce Way,Austin,TX,78701,US,,Acme Two,,',
    ].join('\n');
    const done = await finished(await accepted(csv));
    assert.equal(done.status, 'COMPLETED');
    assert.deepEqual(done.progress, { total: 6, processed: 6, successful: 2, failed: 4 });
    assert.ok(done.completedAt);
    const errors = done.errors.map((e: any) => `${e.correlationId} ${e.details.field}`);
    assert.deepEqual(errors, ['row_2 birthDate', 'row_4 customerType', 'row_5 email', 'row_6 businessTaxId', 'row_6 businessIncorporatedOn']);
    const [a1] = await byPlatformId('ind-a1');
    assert.equal(a1.fullName, 'Person a1');
    assert.equal(a1.umaAddress, '$ind.a1@uma.example.com');
    const [a3] = await byPlatformId('biz-a3');
    assert.equal(a3.customerType, 'BUSINESS');
    assert.equal(a3.businessInfo.legalName, 'Acme LLC');
    for (const refused of ['ind-a2', 'ind-a4', 'ind-a5', 'biz-a6']) assert.deepEqual(await byPlatformId(refused), [], `${refused} was created`);
  });

  it('refuses a repeated platformCustomerId, of an earlier row or of an existing customer, as a row error', async () => {
    const existing = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', platformCustomerId: 'ind-b9' } });
    assertStatus(existing, 201);
    const csv = [HEADER, person('b1'), person('b1').replace('$ind.b1@', '$ind.b1x@'), person('b9')].join('\n');
    const done = await finished(await accepted(csv));
    assert.deepEqual(done.progress, { total: 3, processed: 3, successful: 1, failed: 2 });
    assert.deepEqual(done.errors.map((e: any) => [e.correlationId, e.code, e.details.field]), [
      ['row_2', 'DUPLICATE_PLATFORM_CUSTOMER_ID', 'platformCustomerId'],
      ['row_3', 'DUPLICATE_PLATFORM_CUSTOMER_ID', 'platformCustomerId'],
    ]);
    assert.equal((await byPlatformId('ind-b1')).length, 1);
    assert.equal((await byPlatformId('ind-b9')).length, 1);
  });

  it('knows a customer POST /customers creates after its index was built', async () => {
    // The index of this environment exists since the imports above; this customer joins it as it is created.
    assertStatus(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', platformCustomerId: 'ind-c1' } }), 201);
    const done = await finished(await accepted([HEADER, person('c1')].join('\n')));
    assert.deepEqual(done.progress, { total: 1, processed: 1, successful: 0, failed: 1 });
    assert.equal((await byPlatformId('ind-c1')).length, 1);
  });

  it('refuses a bad header naming the column, and more than 100,000 rows, changing nothing', async () => {
    for (const [header, column] of [
      ['platformCustomerId,customerType,fullName', 'umaAddress'],
      [`${HEADER},shoeSize`, 'shoeSize'],
      [`${HEADER},email`, 'email'],
    ] as const) {
      const res = await upload(svc, `${header}\n`);
      assertStatus(res, 400);
      assertUploadRefused(res.body);
      assert.ok(res.body.details.some((d: any) => d.field === 'file' && d.column === column), JSON.stringify(res.body));
    }
    const rows = Array.from({ length: 100_001 }, (_, i) => person(`z${i}`));
    const res = await upload(svc, [HEADER, ...rows].join('\n'));
    assertStatus(res, 400);
    assertUploadRefused(res.body);
    assert.match(res.body.message, /100000 rows/);
    assert.deepEqual(await byPlatformId('ind-z0'), []);
  });

  it('answers an upload repeated with its Idempotency-Key with the same job', async () => {
    const csv = await csvForm([HEADER, person('d1')].join('\n'));
    const first = await accepted(csv, { 'idempotency-key': 'bulk-d1' });
    const again = await accepted(csv, { 'idempotency-key': 'bulk-d1' });
    assert.equal(again, first);
    await finished(first);
    assert.equal((await byPlatformId('ind-d1')).length, 1);
  });

  it('shows progress while it runs: a slice at a time, as the clock spaces them', async () => {
    const rows = Array.from({ length: SLICE_ROWS * 2 + 5 }, (_, i) => person(`e${i}`));
    const id = await accepted([HEADER, ...rows].join('\n'));
    let seen = await job(id);
    for (let i = 0; i < 50 && seen.progress.processed === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen = await job(id);
    }
    assert.equal(seen.status, 'PROCESSING');
    assert.deepEqual(seen.progress, { total: rows.length, processed: SLICE_ROWS, successful: SLICE_ROWS, failed: 0 });
    assert.equal(seen.completedAt, undefined);
    const done = await finished(id);
    assert.deepEqual(done.progress, { total: rows.length, processed: rows.length, successful: rows.length, failed: 0 });
  });

  it('answers 404 for a job that does not exist', async () => {
    const res = await svc.request('GET', '/customers/bulk/jobs/Job:019542f5-b3e7-7d02-8000-000000000006');
    assertStatus(res, 404);
    assertVendorError('getBulkCustomerImportJob', 404, res.body);
  });

  it('ends with BULK_UPLOAD.COMPLETED in an ENVELOPE environment, beside the CUSTOMER events of its customers', async () => {
    assertStatus(await svc.request('PATCH', '/config', { body: { webhookFormat: 'ENVELOPE' } }), 200);
    const id = await accepted([HEADER, person('f1'), person('f1')].join('\n'));
    await finished(id);
    const list = await svc.request('GET', '/webhooks/events?limit=100');
    assertStatus(list, 200);
    const types = list.body.data.map((e: any) => e.type);
    const ended = list.body.data.find((e: any) => e.type === 'BULK_UPLOAD.COMPLETED');
    assert.ok(ended, types.join());
    const { deliveryStatus: _s, attempts: _a, failureReason: _r, ...body } = ended;
    assertVendorWebhook('bulk-upload', body);
    assert.equal(body.data.id, id);
    assert.deepEqual(body.data.progress, { total: 2, processed: 2, successful: 1, failed: 1 });
    const [f1] = await byPlatformId('ind-f1');
    assert.ok(list.body.data.some((e: any) => e.type === 'CUSTOMER.KYC_APPROVED' && e.data.id === f1.id), types.join());
  });
  // A restart resumes a job from its last durable slice, so a slice's customers and its
  // progress must be one entry: read in the log as written, every slice entry holds exactly
  // the customers it counts, and no other entry holds more than the one customer a POST makes.
  it("logs each slice's customers and its progress in one entry", async () => {
    const id = await accepted([HEADER, ...Array.from({ length: SLICE_ROWS + 7 }, (_, i) => person(`g${i}`))].join('\n'));
    await finished(id);
    await svc.stop({ keepData: true });
    stopped = true;
    const root = open({ path: svc.dataDir });
    const slices: Array<{ successful: number; opened: number }> = [];
    let mostOutsideSlices = 0;
    try {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      for (const { key, value } of log.getRange()) {
        for (const entry of decodeGroup<{ type: string; successful?: number }>(key, value)) {
          const opened = entry.events.filter((e) => e.type === 'customer.opened').length;
          const slice = entry.events.find((e) => e.type === 'bulkImport.sliced');
          if (slice !== undefined) slices.push({ successful: slice.successful!, opened });
          else mostOutsideSlices = Math.max(mostOutsideSlices, opened);
        }
      }
    } finally {
      await root.close();
      rmSync(svc.dataDir, { recursive: true, force: true });
    }
    assert.ok(slices.length >= 2, `slice entries: ${slices.length}`);
    assert.deepEqual(slices.filter((s) => s.opened !== s.successful), [], 'a slice entry holds exactly the customers it counts');
    assert.ok(mostOutsideSlices <= 1, `an entry outside the slices opens ${mostOutsideSlices} customers`);
  });
});
