// POST /verifications and GET /verifications/{id} (CONTRACT.md; SERVICE_SPEC part 3): the
// sandbox suffix rules for KYB (registrationNumber) and beneficial-owner KYC (lastName).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite } from './support/service.js';
import { absentId, assertError, assertInvalid, assertStatus, createCustomer, ID_RE, ISO_TIME } from './support/assertions.js';

describe('verifications', () => {
  const svc = serviceForSuite();

  const verify = async (body: unknown, auth: 'sandbox' | 'production' = 'sandbox'): Promise<any> => {
    const res = await svc.request('POST', '/verifications', { body, auth });
    assertStatus(res, 201);
    return res.body;
  };
  const owner = (lastName: string) => ({ personalInfo: { firstName: 'Ada', lastName } });

  it('KYB by the last 3 digits of registrationNumber; each owner by the last 3 characters of lastName', async () => {
    const cases: Array<[string, string]> = [
      ['REG-000123', 'APPROVED'],
      ['REG-000001', 'PENDING'],
      ['REG-000002', 'REJECTED'],
    ];
    for (const [registrationNumber, kybStatus] of cases) {
      const v = await verify({ businessInfo: { registrationNumber, legalName: 'Acme Ltd' } });
      assert.match(v.id, ID_RE('Verification'));
      assert.equal(v.kybStatus, kybStatus, registrationNumber);
      assert.equal(v.verificationStatus, kybStatus);
      assert.deepEqual(v.businessInfo, { registrationNumber, legalName: 'Acme Ltd' });
      assert.deepEqual(v.errors, []);
      assert.match(v.createdAt, ISO_TIME);
      assert.equal(v.customerId, undefined);
      const read = await svc.request('GET', `/verifications/${v.id}`);
      assertStatus(read, 200);
      assert.deepEqual(read.body, v);
    }
    const v = await verify({ businessInfo: { registrationNumber: '123456789' }, beneficialOwners: [owner('Lovelace'), owner('Smith001'), owner('Jones002')] });
    assert.equal(v.kybStatus, 'APPROVED');
    assert.deepEqual(
      v.beneficialOwners.map((o: any) => [o.personalInfo.lastName, o.kycStatus]),
      [
        ['Lovelace', 'APPROVED'],
        ['Smith001', 'PENDING'],
        ['Jones002', 'REJECTED'],
      ],
    );
    assert.equal(v.verificationStatus, 'REJECTED', 'one rejected owner rejects the whole');
    const pending = await verify({ businessInfo: { registrationNumber: '123456789' }, beneficialOwners: [owner('Lovelace'), owner('Smith001')] });
    assert.equal(pending.verificationStatus, 'PENDING');
  });

  it("a customer's verification carries its id and standing (sandbox customers are approved)", async () => {
    const customer = await createCustomer(svc);
    const v = await verify({ customerId: customer.id });
    assert.equal(v.customerId, customer.id);
    assert.equal(v.verificationStatus, customer.kycStatus);
    assert.equal(v.kybStatus, undefined);
    const business = await verify({ customerId: customer.id, businessInfo: { registrationNumber: 'X-001' } });
    assert.equal(business.kybStatus, 'PENDING');
    assert.equal(business.customerId, customer.id);
  });

  it('production has no simulated outcome: submitted checks wait as PENDING', async () => {
    const v = await verify({ businessInfo: { registrationNumber: 'REG-000123' }, beneficialOwners: [owner('Lovelace')] }, 'production');
    assert.equal(v.kybStatus, 'PENDING');
    assert.equal(v.beneficialOwners[0].kycStatus, 'PENDING');
    assert.equal(v.verificationStatus, 'PENDING');
  });

  it('refuses bad input naming the field, and reads only its own environment', async () => {
    assertInvalid(await svc.request('POST', '/verifications', { body: {} }), 'businessInfo');
    assertInvalid(await svc.request('POST', '/verifications', { body: { businessInfo: {} } }), 'businessInfo.registrationNumber');
    assertInvalid(await svc.request('POST', '/verifications', { body: { businessInfo: { registrationNumber: '' } } }), 'businessInfo.registrationNumber');
    assertInvalid(
      await svc.request('POST', '/verifications', { body: { businessInfo: { registrationNumber: '1' }, beneficialOwners: [{ personalInfo: { firstName: 'A' } }] } }),
      'beneficialOwners.0.personalInfo.lastName',
    );
    assertInvalid(await svc.request('POST', '/verifications', { body: { customerId: 'nope' } }), 'customerId');
    assertError(await svc.request('POST', '/verifications', { body: { customerId: absentId('Customer') } }), 404, 'NOT_FOUND');
    const v = await verify({ businessInfo: { registrationNumber: '555' } });
    assertError(await svc.request('GET', `/verifications/${v.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', `/verifications/${absentId('Verification')}`), 404, 'NOT_FOUND');
    assertInvalid(await svc.request('GET', '/verifications/nope'), 'id');
  });
});
