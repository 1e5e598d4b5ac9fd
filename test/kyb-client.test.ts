// Business verification through plain HTTP (issue 39), the service in its own process:
// fetch with FormData uploads the documents, exactly as an integrator's code would, and
// nothing of the service's code is imported. A document survives kill -9: its record is
// read back after the restart, and its bytes are in the store (read with lmdb itself).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { killAll, spawnService, type ServiceChild } from './support/service-process.js';
import { refusedNaming, sandboxClient, type PlainClient } from './support/plain-client.js';

const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8ffff3f0005fe02fea7d6a4a60000000049454e44ae426082', 'hex');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
const ADDRESS = { line1: '1 Main St', postalCode: '94105', country: 'US' };
const person = (lastName: string) => ({ firstName: 'Ada', lastName, birthDate: '1980-01-02', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' });

describe('business verification through plain HTTP, the service in its own process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kyb-client-'));
  let child: ServiceChild;
  let api: PlainClient;
  let authorization: string;
  const connect = (started: ServiceChild): void => {
    child = started;
    api = sandboxClient(child);
    const { tokenId, clientSecret } = JSON.parse(readFileSync(child.credentialsPath, 'utf8')).sandbox;
    authorization = `Basic ${Buffer.from(`${tokenId}:${clientSecret}`).toString('base64')}`;
  };
  before(async () => connect(await spawnService(dataDir)));
  after(async () => {
    await killAll();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** POST /documents with fetch's own FormData encoding. */
  const upload = async (holder: string, documentType: string, bytes: Buffer, name: string, type: string) => {
    const form = new FormData();
    form.append('documentHolder', holder);
    form.append('documentType', documentType);
    form.append('country', 'US');
    form.append('file', new Blob([new Uint8Array(bytes)], { type }), name);
    const res = await fetch(`${child.baseUrl}/documents`, { method: 'POST', headers: { authorization }, body: form });
    return { status: res.status, body: await res.json() };
  };

  it('a business gets owners and documents until its verification has no errors; a document survives kill -9', async () => {
    const acme = await api.ok('POST', '/customers', {
      customerType: 'BUSINESS',
      address: ADDRESS,
      businessInfo: { legalName: 'Acme LLC', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-03-14', registrationNumber: 'R-123' },
    });
    const first = await api.ok('POST', '/verifications', { customerId: acme.id });
    assert.equal(first.verificationStatus, 'RESOLVE_ERRORS');
    const ubo = await api.ok('POST', '/beneficial-owners', { customerId: acme.id, roles: ['UBO', 'CONTROL_PERSON'], ownershipPercentage: 100, personalInfo: person('Lovelace') });
    refusedNaming(await upload(acme.id, 'PASSPORT', Buffer.from('just text'), 'passport.pdf', 'application/pdf'), 'file');
    const passport = await upload(ubo.id, 'PASSPORT', PNG, 'passport.pdf', 'application/pdf');
    assert.equal(passport.status, 201, JSON.stringify(passport.body));
    for (const type of ['CERTIFICATE_OF_INCORPORATION', 'UTILITY_BILL']) assert.equal((await upload(acme.id, type, PDF, `${type}.pdf`, 'application/pdf')).status, 201);
    const done = await api.ok('POST', '/verifications', { customerId: acme.id });
    assert.deepEqual([done.verificationStatus, done.errors], ['APPROVED', []]);
    assert.equal((await api.ok('GET', `/verifications?customerId=${acme.id}`)).totalCount, 2);

    child.proc.kill('SIGKILL');
    await child.exited;
    connect(await spawnService(dataDir));
    const read = await api.ok('GET', `/documents/${passport.body.id}`);
    assert.deepEqual(read, passport.body);
    child.proc.kill('SIGKILL');
    await child.exited;
    // The bytes are in the store's document table, whole (the API serves a document's details only).
    const store = open({ path: dataDir, readOnly: true });
    const table = store.openDB<Buffer, string>({ name: 'document-bytes', encoding: 'binary' });
    const hashes = [...table.getRange()].map(({ value }) => createHash('sha256').update(value).digest('hex'));
    await store.close();
    assert.ok(hashes.includes(createHash('sha256').update(PNG).digest('hex')), 'the passport bytes are not in the store after kill -9');
  });
});
