// Business verification (issue 39, CONTRACT.md "Today's clients, second wave"): beneficial
// owners, documents (multipart, typed by content, bytes durable before the answer) and a
// business's verification whose errors name what is missing until it is complete. Every
// answer of these operations is held to the vendor's published schema.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite, type TestService } from './support/service.js';
import { assertError, assertInvalid, assertStatus } from './support/assertions.js';
import { assertVendorResponse } from './support/vendor-contract.js';
import { TableBlobStore } from '../src/engine/blob-store.js';
import type { StorageTable, Written } from '../src/engine/storage.js';
import { businessVerificationRoutes } from '../src/http/routes/business-verification.js';
import type { RouteContext, RoutePorts } from '../src/http/route.js';
import { formBody, JPEG, PDF, PNG } from './support/form-body.js';

const ADDRESS = { line1: '1 Main St', postalCode: '94105', country: 'US' };
const person = (lastName: string) => ({ firstName: 'Ada', lastName, birthDate: '1980-01-02', nationality: 'US', address: ADDRESS, idType: 'SSN', identifier: '123-45-6789' });

async function business(svc: TestService, registrationNumber: string, auth: 'sandbox' | 'production' = 'sandbox', address: unknown = ADDRESS): Promise<any> {
  // null: no address at all.
  const businessInfo = { legalName: 'Acme LLC', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-03-14', registrationNumber };
  const res = await svc.request('POST', '/customers', { body: { customerType: 'BUSINESS', businessInfo, ...(address === null ? {} : { address }) }, auth });
  assertStatus(res, 201);
  return res.body;
}

describe('business verification', () => {
  const svc = serviceForSuite();

  const addOwner = async (customerId: string, roles: string[], lastName = 'Lovelace', auth: 'sandbox' | 'production' = 'sandbox'): Promise<any> => {
    const res = await svc.request('POST', '/beneficial-owners', { body: { customerId, roles, ownershipPercentage: 40, personalInfo: person(lastName) }, auth });
    assertStatus(res, 201);
    assertVendorResponse('createBeneficialOwner', 201, res.body);
    return res.body;
  };
  const upload = async (holder: string, documentType: string, file = { bytes: PDF, name: 'scan.pdf', type: 'application/pdf' }, auth: 'sandbox' | 'production' = 'sandbox') => {
    const { raw, contentType } = await formBody({ documentHolder: holder, documentType, country: 'US' }, file);
    return svc.request('POST', '/documents', { raw, headers: { 'content-type': contentType }, auth });
  };
  const uploaded = async (holder: string, documentType: string, auth: 'sandbox' | 'production' = 'sandbox'): Promise<any> => {
    const res = await upload(holder, documentType, undefined, auth);
    assertStatus(res, 201);
    assertVendorResponse('uploadDocument', 201, res.body);
    return res.body;
  };
  const verify = async (customerId: string, auth: 'sandbox' | 'production' = 'sandbox'): Promise<any> => {
    const res = await svc.request('POST', '/verifications', { body: { customerId }, auth });
    assertStatus(res, 200);
    assertVendorResponse('createVerification', 200, res.body);
    return res.body;
  };
  const missing = (v: any): string[] => v.errors.map((e: any) => `${e.type}${e.field === undefined ? '' : ` ${e.field}`}${e.resourceId.startsWith('BeneficialOwner:') ? ' owner' : ''}`);

  it("errors go from MISSING_* to none as owners and documents are added; then the KYB suffix rule decides", async () => {
    const acme = await business(svc, 'REG-000123', 'sandbox', null);
    let v = await verify(acme.id);
    assert.equal(v.verificationStatus, 'RESOLVE_ERRORS');
    assert.deepEqual(missing(v), [
      'MISSING_FIELD customer.address.line1',
      'MISSING_FIELD customer.address.postalCode',
      'MISSING_FIELD customer.address.country',
      'MISSING_BENEFICIAL_OWNER',
      'MISSING_CONTROL_PERSON',
      'MISSING_LEGAL_PRESENCE_DOCUMENT',
      'MISSING_PROOF_OF_ADDRESS_DOCUMENT',
    ]);
    assertStatus(await svc.request('PATCH', `/customers/${acme.id}`, { body: { customerType: 'BUSINESS', address: ADDRESS } }), 200);
    const ubo = await addOwner(acme.id, ['UBO']);
    v = await verify(acme.id);
    assert.deepEqual(missing(v), ['MISSING_CONTROL_PERSON', 'MISSING_LEGAL_PRESENCE_DOCUMENT', 'MISSING_PROOF_OF_ADDRESS_DOCUMENT', 'MISSING_IDENTITY_DOCUMENT owner']);
    const controller = await addOwner(acme.id, ['CONTROL_PERSON', 'DIRECTOR'], 'Hopper');
    await uploaded(acme.id, 'CERTIFICATE_OF_INCORPORATION');
    await uploaded(acme.id, 'UTILITY_BILL');
    await uploaded(ubo.id, 'PASSPORT');
    v = await verify(acme.id);
    assert.deepEqual(v.errors.map((e: any) => [e.type, e.resourceId]), [['MISSING_IDENTITY_DOCUMENT', controller.id]]);
    assert.deepEqual(v.errors[0].acceptedDocumentTypes, ['PASSPORT', 'DRIVERS_LICENSE', 'NATIONAL_ID']);
    await uploaded(controller.id, 'DRIVERS_LICENSE');
    v = await verify(acme.id);
    assert.deepEqual(v.errors, []);
    assert.equal(v.verificationStatus, 'APPROVED');

    // The suffix rule on the business's registration number, once complete.
    for (const [registrationNumber, status] of [['REG-000001', 'PENDING_MANUAL_REVIEW'], ['REG-000002', 'REJECTED']]) {
      const other = await business(svc, registrationNumber!);
      const [o1, o2] = [await addOwner(other.id, ['UBO']), await addOwner(other.id, ['CONTROL_PERSON'])];
      for (const [holder, type] of [[other.id, 'ARTICLES_OF_INCORPORATION'], [other.id, 'BANK_STATEMENT'], [o1.id, 'NATIONAL_ID'], [o2.id, 'PASSPORT']]) await uploaded(holder!, type!);
      assert.equal((await verify(other.id)).verificationStatus, status, registrationNumber);
    }

    const read = await svc.request('GET', `/verifications/${v.id}`);
    assertStatus(read, 200);
    assertVendorResponse('getVerification', 200, read.body);
    assert.deepEqual(read.body, v);
    const listed = await svc.request('GET', `/verifications?customerId=${acme.id}&verificationStatus=RESOLVE_ERRORS&limit=2`);
    assertStatus(listed, 200);
    assertVendorResponse('listVerifications', 200, listed.body);
    assert.equal(listed.body.totalCount, 3);
    assert.equal(listed.body.data.length, 2);
    assert.ok(listed.body.data.every((x: any) => x.verificationStatus === 'RESOLVE_ERRORS'));
  });

  it('production waits in PENDING_MANUAL_REVIEW until PATCH /customers/{id} sets kybStatus', async () => {
    const acme = await business(svc, 'REG-000123', 'production');
    const [ubo, controller] = [await addOwner(acme.id, ['UBO'], 'Lovelace', 'production'), await addOwner(acme.id, ['CONTROL_PERSON'], 'Hopper', 'production')];
    assert.equal(ubo.kycStatus, 'PENDING');
    for (const [holder, type] of [[acme.id, 'STATE_REGISTRY_EXCERPT'], [acme.id, 'RENT_OR_LEASE_AGREEMENT'], [ubo.id, 'PASSPORT'], [controller.id, 'PASSPORT']]) await uploaded(holder!, type!, 'production');
    const v = await verify(acme.id, 'production');
    assert.equal(v.verificationStatus, 'PENDING_MANUAL_REVIEW');
    assertStatus(await svc.request('PATCH', `/customers/${acme.id}`, { body: { customerType: 'BUSINESS', kybStatus: 'APPROVED' }, auth: 'production' }), 200);
    const read = await svc.request('GET', `/verifications/${v.id}`, { auth: 'production' });
    assert.equal(read.body.verificationStatus, 'APPROVED');
    assertVendorResponse('getVerification', 200, read.body);
  });

  it('owners: created with the suffix rule on lastName, read, listed, patched field by field', async () => {
    const acme = await business(svc, 'REG-000123');
    const owner = await addOwner(acme.id, ['UBO', 'DIRECTOR'], 'Smith001');
    assert.equal(owner.kycStatus, 'PENDING');
    assert.deepEqual(owner.personalInfo, person('Smith001'));
    const read = await svc.request('GET', `/beneficial-owners/${owner.id}`);
    assertStatus(read, 200);
    assertVendorResponse('getBeneficialOwner', 200, read.body);
    assert.deepEqual(read.body, owner);
    const patched = await svc.request('PATCH', `/beneficial-owners/${owner.id}`, { body: { ownershipPercentage: 60, personalInfo: { lastName: 'Jones002' } } });
    assertStatus(patched, 200);
    assertVendorResponse('updateBeneficialOwner', 200, patched.body);
    assert.equal(patched.body.kycStatus, 'REJECTED');
    assert.equal(patched.body.ownershipPercentage, 60);
    assert.equal(patched.body.personalInfo.firstName, 'Ada');
    assert.deepEqual(patched.body.roles, ['UBO', 'DIRECTOR']);
    const listed = await svc.request('GET', `/beneficial-owners?customerId=${acme.id}`);
    assertStatus(listed, 200);
    assertVendorResponse('listBeneficialOwners', 200, listed.body);
    assert.deepEqual(listed.body.data, [patched.body]);

    const { personalInfo: _p, ...noPerson } = { customerId: acme.id, roles: ['UBO'], ownershipPercentage: 10, personalInfo: person('X') };
    assertInvalid(await svc.request('POST', '/beneficial-owners', { body: noPerson }), 'personalInfo');
    assertInvalid(await svc.request('POST', '/beneficial-owners', { body: { ...noPerson, personalInfo: person('X'), ownershipPercentage: 101 } }), 'ownershipPercentage');
    const individual = (await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } })).body;
    assertInvalid(await svc.request('POST', '/beneficial-owners', { body: { ...noPerson, customerId: individual.id, personalInfo: person('X') } }), 'customerId');
    assertError(await svc.request('GET', `/beneficial-owners/${owner.id}`, { auth: 'production' }), 404, 'NOT_FOUND', ['beneficialOwnerId']);
  });

  it('a file is typed by its bytes: a PNG named .pdf is a PNG, a text file named .pdf is refused naming file', async () => {
    const acme = await business(svc, 'REG-000123');
    const png = await upload(acme.id, 'PASSPORT', { bytes: PNG, name: 'passport.pdf', type: 'application/pdf' });
    assertStatus(png, 201);
    assert.equal(png.body.fileName, 'passport.pdf');
    const jpeg = await upload(acme.id, 'UTILITY_BILL', { bytes: JPEG, name: 'bill', type: 'text/plain' });
    assertStatus(jpeg, 201);
    const text = await upload(acme.id, 'PASSPORT', { bytes: Buffer.from('%not a pdf, just text\n'), name: 'passport.pdf', type: 'application/pdf' });
    assertInvalid(text, 'file');
    assertInvalid(await upload(acme.id, 'PASSPORT', { bytes: Buffer.alloc(0), name: 'empty.pdf', type: 'application/pdf' }), 'file');
    assertInvalid(await upload(acme.id, 'PASSPORT', { bytes: Buffer.concat([PDF, Buffer.alloc(10 * 1024 * 1024)]), name: 'big.pdf', type: 'application/pdf' }), 'file');
    assertInvalid(await upload(acme.id, 'LIBRARY_CARD'), 'documentType');
    assertError(await upload('Customer:0190a000-0000-7000-8000-000000000000', 'PASSPORT'), 404, 'NOT_FOUND', ['documentHolder']);
    assertError(await svc.request('POST', '/documents', { body: { documentHolder: acme.id } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const listed = await svc.request('GET', `/documents?documentHolder=${acme.id}`);
    assertVendorResponse('listDocuments', 200, listed.body);
    assert.deepEqual(listed.body.data.map((d: any) => d.id), [jpeg.body.id, png.body.id]);
  });

  it('PUT replaces a document, DELETE removes it from reads at once', async () => {
    const acme = await business(svc, 'REG-000123');
    const doc = await uploaded(acme.id, 'UTILITY_BILL');
    const { raw, contentType } = await formBody({ documentType: 'BANK_STATEMENT', country: 'GB', side: 'FRONT' }, { bytes: PNG, name: 'statement.png', type: 'image/png' });
    const replaced = await svc.request('PUT', `/documents/${doc.id}`, { raw, headers: { 'content-type': contentType } });
    assertStatus(replaced, 200);
    assertVendorResponse('replaceDocument', 200, replaced.body);
    assert.deepEqual([replaced.body.documentType, replaced.body.country, replaced.body.side, replaced.body.fileName, replaced.body.createdAt], ['BANK_STATEMENT', 'GB', 'FRONT', 'statement.png', doc.createdAt]);
    const read = await svc.request('GET', `/documents/${doc.id}`);
    assertVendorResponse('getDocument', 200, read.body);
    assert.deepEqual(read.body, replaced.body);
    assertStatus(await svc.request('DELETE', `/documents/${doc.id}`), 204);
    assertError(await svc.request('GET', `/documents/${doc.id}`), 404, 'NOT_FOUND', ['documentId']);
    assertError(await svc.request('DELETE', `/documents/${doc.id}`), 404, 'NOT_FOUND', ['documentId']);
    assert.deepEqual((await svc.request('GET', `/documents?documentHolder=${acme.id}`)).body.data, []);
  });
});

/** A table whose puts commit at once but whose fsync waits for `release`. */
function heldFlushTable(): { table: StorageTable<string>; release: () => void } {
  let release!: () => void;
  const flushed = new Promise<boolean>((resolve) => (release = () => resolve(true)));
  const values = new Map<string, Buffer>();
  const table = {
    get: (key: string) => values.get(key),
    put: (key: string, value: Buffer): Written => {
      values.set(key, value);
      return Object.assign(Promise.resolve(true), { flushed });
    },
  } as unknown as StorageTable<string>;
  return { table, release };
}

describe("a document's bytes are durable before anything names them", () => {
  it('TableBlobStore.put resolves only once the bytes are flushed', async () => {
    const { table, release } = heldFlushTable();
    let done = false;
    const put = new TableBlobStore(table).put('k', PNG).then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(done, false, 'put resolved before the fsync');
    release();
    await put;
    assert.equal(done, true);
  });

  it("the upload's command, and so its 201, waits for the bytes' put", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const events: string[] = [];
    let putCalled!: () => void;
    const putting = new Promise<void>((resolve) => (putCalled = resolve));
    const documentBytes = {
      put: async () => {
        putCalled();
        await held;
        events.push('bytes durable');
      },
    } as unknown as RoutePorts['documentBytes'];
    const uploadRoute = businessVerificationRoutes.find((r) => r.operationId === 'uploadDocument')!;
    const { raw, contentType } = await formBody({ documentHolder: 'Customer:0190a000-0000-7000-8000-000000000000', documentType: 'PASSPORT', country: 'US' }, { bytes: PDF, name: 'p.pdf', type: 'application/pdf' });
    const ctx = {
      env: { id: 'env' },
      body: { contentType, bytes: Buffer.from(raw) },
      ports: { documentBytes },
      run: async () => {
        events.push('entry logged');
        return { status: 201, body: {} };
      },
    } as unknown as RouteContext<unknown, unknown>;
    const answered = uploadRoute.handle(ctx).then(() => events.push('answered'));
    await putting;
    for (let turn = 0; turn < 10; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(events, [], 'the entry was logged (or the answer sent) before the bytes were durable');
    release();
    await answered;
    assert.deepEqual(events, ['bytes durable', 'entry logged', 'answered']);
  });
});
