// BUSINESS customers (CONTRACT.md "Real clients"): created with businessInfo, shown with
// businessInfo and kybStatus in place of a person's fields and kycStatus; the sandbox takes
// the kybStatus from the registration number's suffix, production starts UNVERIFIED until
// PATCH sets it; PATCH keeps the type and merges a partial businessInfo; the region comes
// from region, businessInfo.country, address.country, then US. A business holds accounts,
// pays and is paid as a person is, is listed by type, is verified, and survives a restart.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite, startTestService } from './support/service.js';
import { assertInvalid, assertStatus, read, setCurrencies, totalCount, walk, type Auth } from './support/assertions.js';
import { accountIn, assertLedgerHolds, balanceOf, createQuote, execute, fund, quoteBody } from './support/money.js';

const ACME = { legalName: 'Acme Trading LLC', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-03-14' } as const;
const FULL_INFO = {
  ...ACME,
  doingBusinessAs: 'Acme',
  registrationNumber: 'DE-7781-123',
  entityType: 'LLC',
  businessType: 'wholesale',
  purposeOfAccount: 'supplier payouts',
  sourceOfFunds: 'sales revenue',
  countriesOfOperation: ['US', 'MX'],
  expectedMonthlyTransactionCount: 'COUNT_100_TO_500',
  expectedMonthlyTransactionVolume: 250_000,
  primaryContactFirstName: 'Rosa',
  primaryContactLastName: 'Diaz',
};

describe('BUSINESS customers', () => {
  const svc = serviceForSuite();
  before(async () => {
    for (const auth of ['sandbox', 'production'] as const) await setCurrencies(svc, ['USD', 'MXN', 'USDC'], auth);
  });

  async function business(businessInfo: Record<string, unknown>, more: Record<string, unknown> = {}, auth: Auth = 'sandbox'): Promise<any> {
    const res = await svc.request('POST', '/customers', { body: { customerType: 'BUSINESS', businessInfo, ...more }, auth });
    assertStatus(res, 201);
    return res.body;
  }
  const patch = (id: string, body: Record<string, unknown>, auth: Auth = 'sandbox') => svc.request('PATCH', `/customers/${id}`, { body, auth });

  it('is created with its businessInfo and shown with kybStatus, without kycStatus or a person’s fields', async () => {
    const c = await business(FULL_INFO, { email: 'ap@acme.test', address: { line1: '1 Dock St', city: 'Houston', postalCode: '77002', country: 'US' } });
    assert.equal(c.customerType, 'BUSINESS');
    assert.deepEqual(c.businessInfo, FULL_INFO);
    assert.equal(c.kybStatus, 'APPROVED');
    assert.equal(c.email, 'ap@acme.test');
    assert.equal(c.address.city, 'Houston');
    for (const field of ['kycStatus', 'fullName', 'birthDate', 'nationality']) assert.equal(field in c, false, field);
    assert.equal(c.region, 'US');
    assert.deepEqual(await svc.request('GET', `/customers/${c.id}`).then((r) => r.body), c);
    // Its accounts are provisioned as a person's are.
    assert.ok((await accountIn(svc, c.id, 'USD')).id.startsWith('InternalAccount:'));
  });

  it('sandbox: kybStatus by the registration number suffix (001 PENDING, 002 REJECTED, else or none APPROVED)', async () => {
    for (const [registrationNumber, kybStatus] of [
      ['REG-001', 'PENDING'],
      ['REG-002', 'REJECTED'],
      ['REG-003', 'APPROVED'],
      [undefined, 'APPROVED'],
    ] as const) {
      const c = await business(registrationNumber === undefined ? ACME : { ...ACME, registrationNumber });
      assert.equal(c.kybStatus, kybStatus, String(registrationNumber));
    }
  });

  it('production: UNVERIFIED whatever the number, until PATCH sets kybStatus (HOLD included)', async () => {
    const c = await business({ ...ACME, registrationNumber: 'REG-002' }, {}, 'production');
    assert.equal(c.kybStatus, 'UNVERIFIED');
    for (const kybStatus of ['HOLD', 'APPROVED']) {
      const res = await patch(c.id, { customerType: 'BUSINESS', kybStatus }, 'production');
      assertStatus(res, 200);
      assert.equal(res.body.kybStatus, kybStatus);
    }
    assert.equal(JSON.parse(await read(svc, `/customers/${c.id}`, 'production')).kybStatus, 'APPROVED');
  });

  it('the region is region, else businessInfo.country, else address.country, else US', async () => {
    assert.equal((await business({ ...ACME, country: 'MX' })).region, 'MX');
    assert.deepEqual((await business({ ...ACME, country: 'MX' })).currencies, ['MXN', 'USDC']);
    assert.equal((await business({ ...ACME, country: 'MX' }, { region: 'US' })).region, 'US');
    assert.equal((await business({ ...ACME, country: 'MX' }, { address: { country: 'US' } })).region, 'MX');
    assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'BUSINESS', businessInfo: { ...ACME, country: 'JP' } } }), 'businessInfo.country');
  });

  it('bad input is a 400 naming the field, and creates nothing', async () => {
    const before = await totalCount(svc, '/customers?isIncludingDeleted=true');
    const { legalName: _l, ...noLegalName } = ACME;
    const { incorporatedOn: _i, ...noIncorporatedOn } = ACME;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ customerType: 'BUSINESS' }, 'businessInfo'],
      [{ customerType: 'BUSINESS', businessInfo: noLegalName }, 'businessInfo.legalName'],
      [{ customerType: 'BUSINESS', businessInfo: noIncorporatedOn }, 'businessInfo.incorporatedOn'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, taxId: '' } }, 'businessInfo.taxId'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, incorporatedOn: '2015-02-30' } }, 'businessInfo.incorporatedOn'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, incorporatedOn: '2999-01-01' } }, 'businessInfo.incorporatedOn'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, incorporatedOn: '14/03/2015' } }, 'businessInfo.incorporatedOn'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, country: 'us' } }, 'businessInfo.country'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, entityType: 'GUILD' } }, 'businessInfo.entityType'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, countriesOfOperation: ['US', 'QQ'] } }, 'businessInfo.countriesOfOperation.1'],
      [{ customerType: 'BUSINESS', businessInfo: { ...ACME, expectedMonthlyTransactionCount: -1 } }, 'businessInfo.expectedMonthlyTransactionCount'],
      [{ customerType: 'BUSINESS', businessInfo: ACME, fullName: 'Acme' }, 'fullName'],
      [{ customerType: 'BUSINESS', businessInfo: ACME, birthDate: '2015-03-14' }, 'birthDate'],
      [{ customerType: 'INDIVIDUAL', businessInfo: ACME }, 'businessInfo'],
    ];
    for (const [body, field] of cases) assertInvalid(await svc.request('POST', '/customers', { body }), field);
    assert.equal(await totalCount(svc, '/customers?isIncludingDeleted=true'), before);
  });

  it('PATCH keeps the type, merges a partial businessInfo and checks it whole; refused changes leave the record as it was', async () => {
    const c = await business({ ...ACME, registrationNumber: 'REG-123' });
    const was = await read(svc, `/customers/${c.id}`);
    assertInvalid(await patch(c.id, { customerType: 'INDIVIDUAL' }), 'customerType');
    assertInvalid(await patch(c.id, { customerType: 'BUSINESS', kycStatus: 'APPROVED' }), 'kycStatus');
    assertInvalid(await patch(c.id, { customerType: 'BUSINESS', fullName: 'Acme' }), 'fullName');
    assertInvalid(await patch(c.id, { customerType: 'BUSINESS', businessInfo: { incorporatedOn: '2015-13-01' } }), 'businessInfo.incorporatedOn');
    assertInvalid(await patch(c.id, { customerType: 'BUSINESS', businessInfo: { legalName: '' } }), 'businessInfo.legalName');
    assertInvalid(await patch(c.id, { customerType: 'BUSINESS', kybStatus: 'MAYBE' }), 'kybStatus');
    assert.equal(await read(svc, `/customers/${c.id}`), was);

    const res = await patch(c.id, { customerType: 'BUSINESS', businessInfo: { doingBusinessAs: 'Acme Freight', entityType: 'CORPORATION' } });
    assertStatus(res, 200);
    assert.deepEqual(res.body.businessInfo, { ...ACME, registrationNumber: 'REG-123', doingBusinessAs: 'Acme Freight', entityType: 'CORPORATION' });
    assert.equal(res.body.kybStatus, 'APPROVED');
    // A new registration number is checked again in the sandbox; a status the PATCH gives wins.
    assert.equal((await patch(c.id, { customerType: 'BUSINESS', businessInfo: { registrationNumber: 'REG-002' } })).body.kybStatus, 'REJECTED');
    assert.equal((await patch(c.id, { customerType: 'BUSINESS', businessInfo: { registrationNumber: 'REG-001' }, kybStatus: 'HOLD' })).body.kybStatus, 'HOLD');

    const person = (await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Pat' } })).body;
    assertInvalid(await patch(person.id, { customerType: 'BUSINESS' }), 'customerType');
    assertInvalid(await patch(person.id, { customerType: 'INDIVIDUAL', businessInfo: { legalName: 'Pat Inc' } }), 'businessInfo');
    assertInvalid(await patch(person.id, { customerType: 'INDIVIDUAL', kybStatus: 'APPROVED' }), 'kybStatus');
  });

  it('a business pays a person and is paid by one; the ledger holds', async () => {
    const acme = await business(ACME);
    const pat = (await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', fullName: 'Pat' } })).body;
    const acmeUsd = await accountIn(svc, acme.id, 'USD');
    const patUsd = await accountIn(svc, pat.id, 'USD');
    await fund(svc, acmeUsd.id, 50_000);
    const paid = await execute(svc, (await createQuote(svc, quoteBody(acmeUsd.id, patUsd.id, 20_000))).id);
    assert.equal(paid.status, 'COMPLETED');
    const back = await execute(svc, (await createQuote(svc, quoteBody(patUsd.id, acmeUsd.id, 5_000))).id);
    assert.equal(back.status, 'COMPLETED');
    assert.equal(await balanceOf(svc, acmeUsd.id), 35_000);
    assert.equal(await balanceOf(svc, patUsd.id), 15_000);
    assertLedgerHolds(svc);
  });

  it('customerType=BUSINESS lists the businesses only, paged', async () => {
    const { items, totalCounts } = await walk(svc, '/customers?customerType=BUSINESS', 2);
    assert.ok(items.length >= 10);
    assert.ok(items.every((c) => c.customerType === 'BUSINESS' && typeof c.kybStatus === 'string'));
    assert.ok(totalCounts.every((n) => n === items.length));
    const people = await walk(svc, '/customers?customerType=INDIVIDUAL', 100);
    assert.ok(people.items.length >= 2 && people.items.every((c) => c.customerType === 'INDIVIDUAL'));
  });

  it('/verifications of a business customer named alone lists what it lacks (issue 39); with businessInfo inline, the suffix rule answers as before', async () => {
    const c = await business({ ...ACME, registrationNumber: 'REG-001' });
    const alone = await svc.request('POST', '/verifications', { body: { customerId: c.id } });
    assertStatus(alone, 200);
    assert.equal(alone.body.verificationStatus, 'RESOLVE_ERRORS');
    assert.ok(alone.body.errors.some((e: { type: string }) => e.type === 'MISSING_BENEFICIAL_OWNER'));
    const kyb = await svc.request('POST', '/verifications', { body: { customerId: c.id, businessInfo: { registrationNumber: 'REG-777' } } });
    assertStatus(kyb, 201);
    assert.equal(kyb.body.kybStatus, 'APPROVED');
    assert.equal(kyb.body.customerId, c.id);
  });

  for (const snapshotEveryEntries of [undefined, 1]) {
    it(`survives a restart (${snapshotEveryEntries === undefined ? 'from the log' : 'from a snapshot'})`, async () => {
      const options = snapshotEveryEntries === undefined ? {} : { snapshotEveryEntries };
      const first = await startTestService(options);
      const made = await first.request('POST', '/customers', { body: { customerType: 'BUSINESS', businessInfo: FULL_INFO } });
      assertStatus(made, 201);
      assertStatus(await first.request('PATCH', `/customers/${made.body.id}`, { body: { customerType: 'BUSINESS', businessInfo: { taxId: '98-7654321' }, kybStatus: 'HOLD' } }), 200);
      const was = await read(first, `/customers/${made.body.id}`);
      await first.stop({ keepData: true });
      const second = await startTestService({ dataDir: first.dataDir, ...options });
      try {
        assert.equal(await read(second, `/customers/${made.body.id}`), was);
        assert.equal(JSON.parse(was).businessInfo.taxId, '98-7654321');
        assert.equal(JSON.parse(was).kybStatus, 'HOLD');
      } finally {
        await second.stop();
      }
    });
  }
});
