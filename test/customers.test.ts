// Customers (SERVICE_SPEC parts 2 and 4, CONTRACT.md "Customers and accounts"): POST, GET,
// PATCH, DELETE /customers[/{id}] and POST /users, through HTTP as an integrator sees them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite } from './support/service.js';
import {
  DEFAULT_CURRENCIES,
  ID_RE,
  ISO_TIME,
  absentId,
  assertEnvelope,
  assertError,
  assertInvalid,
  assertStatus,
  createCustomer,
  customerAccounts,
  envActor,
  heldActors,
  longText,
  read,
  setCurrencies,
  totalCount,
  unique,
  usdAccount,
  walk,
} from './support/assertions.js';

/** Reads a funding reference back: `UMA`, then 128 bits in the service's base32 alphabet. */
function uuidOfReference(reference: string): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZ23456789';
  let bits = '';
  for (const c of reference.slice(3)) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  const hex = BigInt(`0b${bits.slice(0, 128)}`).toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

describe('customers', () => {
  const svc = serviceForSuite();

  describe('POST /customers', () => {
    it('with only customerType: generated ids and UMA address, region US, default currencies, APPROVED in sandbox', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const res = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' } });
      assertStatus(res, 201);
      const c = res.body;
      assert.match(c.id, ID_RE('Customer'));
      assert.equal(typeof c.platformCustomerId, 'string');
      assert.ok(c.platformCustomerId.length > 0);
      assert.equal(c.customerType, 'INDIVIDUAL');
      assert.match(c.umaAddress, /^\$[A-Za-z0-9][A-Za-z0-9._-]*@sandbox\.uma\.test$/);
      assert.equal(c.region, 'US');
      assert.deepEqual(c.currencies, ['USD', 'USDC', 'USDB']);
      assert.equal(c.kycStatus, 'APPROVED');
      assert.equal(c.isDeleted, false);
      assert.match(c.createdAt, ISO_TIME);
      assert.match(c.updatedAt, ISO_TIME);
      for (const absent of ['email', 'fullName', 'birthDate', 'nationality', 'address']) assert.equal(c[absent], undefined, absent);
      // It reads back exactly as created.
      assert.deepEqual(JSON.parse(await read(svc, `/customers/${c.id}`)), c);
      // A second customer gets its own generated values.
      const other = await createCustomer(svc);
      assert.notEqual(other.id, c.id);
      assert.notEqual(other.platformCustomerId, c.platformCustomerId);
      assert.notEqual(other.umaAddress, c.umaAddress);
    });

    it('answers its fields in one order, the same bytes on create and on read, for a person and a business', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const profile = { email: 'ada@example.com', address: { line1: '1 Main St', country: 'US' }, fullName: 'Ada Lovelace', birthDate: '1990-12-10', nationality: 'US' };
      const person = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', ...profile } });
      assertStatus(person, 201);
      const common = ['id', 'platformCustomerId', 'umaAddress', 'region', 'currencies', 'isDeleted', 'createdAt', 'updatedAt'];
      assert.deepEqual(Object.keys(JSON.parse(person.text)), [...common, 'email', 'address', 'customerType', 'kycStatus', 'fullName', 'birthDate', 'nationality']);
      assert.equal(await read(svc, `/customers/${(person.body as { id: string }).id}`), person.text);
      const businessInfo = { legalName: 'Acme Corp', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-02-03' };
      const business = await svc.request('POST', '/customers', { body: { customerType: 'BUSINESS', businessInfo } });
      assertStatus(business, 201);
      assert.deepEqual(Object.keys(JSON.parse(business.text)), [...common, 'customerType', 'kybStatus', 'businessInfo']);
      assert.equal(await read(svc, `/customers/${(business.body as { id: string }).id}`), business.text);
    });

    it('in production the customer starts UNVERIFIED with an address on the production UMA domain', async () => {
      const config = JSON.parse(await read(svc, '/config', 'production'));
      const c = await createCustomer(svc, {}, 'production');
      assert.equal(c.kycStatus, 'UNVERIFIED');
      assert.ok(c.umaAddress.endsWith(`@${config.umaDomain}`), `${c.umaAddress} on ${config.umaDomain}`);
      assert.equal(c.region, 'US');
      assert.deepEqual(c.currencies, ['USD', 'USDC', 'USDB']);
    });

    it('provisions INTERNAL_FIAT USD with funding instructions, INTERNAL_CRYPTO USDC and an EMBEDDED_WALLET USDB', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const c = await createCustomer(svc);
      const accounts = await customerAccounts(svc, c.id);
      assert.equal(accounts.length, 3);
      const byCode = new Map(accounts.map((a) => [a.balance.currency.code, a]));
      const usd = byCode.get('USD');
      const usdc = byCode.get('USDC');
      const usdb = byCode.get('USDB');
      assert.ok(usd && usdc && usdb, JSON.stringify(accounts));
      assert.equal(usd.type, 'INTERNAL_FIAT');
      assert.equal(usdc.type, 'INTERNAL_CRYPTO');
      assert.equal(usdb.type, 'EMBEDDED_WALLET');
      for (const a of accounts) {
        assert.match(a.id, ID_RE('InternalAccount'));
        assert.equal(a.customerId, c.id);
        assert.equal(a.balance.amount, 0);
        assert.match(a.createdAt, ISO_TIME);
      }
      assert.deepEqual(usd.balance.currency, { code: 'USD', name: 'United States Dollar', symbol: '$', decimals: 2 });
      assert.equal(usdc.balance.currency.decimals, 6);
      assert.equal(usd.fundingPaymentInstructions.length, 1);
      const instruction = usd.fundingPaymentInstructions[0];
      assert.equal(instruction.isPlatformAccount, false);
      assert.equal(instruction.accountOrWalletInfo.accountType, 'USD_ACCOUNT');
      assert.match(instruction.accountOrWalletInfo.accountNumber, /^\d+$/);
      assert.match(instruction.accountOrWalletInfo.routingNumber, /^\d{9}$/);
      assert.equal(typeof instruction.accountOrWalletInfo.reference, 'string');
      assert.ok(instruction.accountOrWalletInfo.reference.length >= 6);
      assert.ok(instruction.instructionsNotes.includes(instruction.accountOrWalletInfo.reference));
      assert.deepEqual(usdc.fundingPaymentInstructions, []);
      assert.deepEqual(usdb.fundingPaymentInstructions, []);
      // Each account reads back by id.
      for (const a of accounts) assert.deepEqual(JSON.parse(await read(svc, `/internal-accounts/${a.id}`)), a);
    });

    it('funding references are unique across every account of both environments', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      for (let i = 0; i < 6; i++) await createCustomer(svc);
      await createCustomer(svc, {}, 'production');
      const references: string[] = [];
      for (const env of ['sandbox', 'production'] as const) {
        const { items } = await walk(svc, '/internal-accounts', 100, env);
        for (const a of items) for (const i of a.fundingPaymentInstructions) references.push(i.accountOrWalletInfo.reference);
      }
      assert.ok(references.length >= 8, `only ${references.length} references`);
      assert.equal(new Set(references).size, references.length, `duplicate references: ${references.join(', ')}`);
    });

    it("a funding reference is its account's id in base32, so it names one account in the whole store", async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      for (const env of ['sandbox', 'production'] as const) {
        const c = await createCustomer(svc, {}, env);
        const usd = (await customerAccounts(svc, c.id, env)).find((a) => a.balance.currency.code === 'USD');
        const reference: string = usd.fundingPaymentInstructions[0].accountOrWalletInfo.reference;
        assert.match(reference, /^UMA[A-HJ-NP-Z2-9]{26}$/);
        assert.equal(uuidOfReference(reference), usd.id.slice('InternalAccount:'.length));
      }
    });

    it('echoes the profile it was given', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const platformCustomerId = unique('pc-');
      const umaAddress = `$${unique('ada.')}@sandbox.uma.test`;
      const body = {
        customerType: 'INDIVIDUAL',
        platformCustomerId,
        umaAddress,
        email: 'ada@example.com',
        fullName: 'Ada Lovelace',
        birthDate: '1815-12-10',
        nationality: 'GB',
        region: 'US',
        currencies: ['USD', 'USDC'],
        address: { line1: '1 Main St', line2: 'Apt 2', city: 'Springfield', state: 'IL', postalCode: '62701', country: 'US' },
      };
      const c = await createCustomer(svc, body);
      for (const [k, v] of Object.entries(body)) assert.deepEqual(c[k], v, k);
      const accounts = await customerAccounts(svc, c.id);
      assert.deepEqual(accounts.map((a) => a.balance.currency.code).sort(), ['USD', 'USDC']);
    });

    it('region comes from address.country, else nationality, else US', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      assert.equal((await createCustomer(svc, { address: { country: 'MX', city: 'CDMX' } })).region, 'MX');
      assert.equal((await createCustomer(svc, { nationality: 'BR' })).region, 'BR');
      assert.equal((await createCustomer(svc, { nationality: 'BR', address: { country: 'DE' } })).region, 'DE');
      assert.equal((await createCustomer(svc, { region: 'AE', nationality: 'BR', address: { country: 'DE' } })).region, 'AE');
      assert.equal((await createCustomer(svc, { fullName: 'Nobody' })).region, 'US');
    });

    it('an MX customer holds MXN only when the platform supports MXN, else USD', async () => {
      try {
        await setCurrencies(svc, DEFAULT_CURRENCIES);
        const without = await createCustomer(svc, { region: 'MX' });
        assert.deepEqual(without.currencies, ['USD', 'USDC', 'USDB']);
        assert.deepEqual((await customerAccounts(svc, without.id)).map((a) => a.balance.currency.code).sort(), ['USD', 'USDB', 'USDC']);
        // Asking for MXN while the platform does not offer it is refused, naming the entry.
        const before = await totalCount(svc, '/customers');
        assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', region: 'MX', currencies: ['MXN'] } }), 'currencies.0');
        assert.equal(await totalCount(svc, '/customers'), before);

        await setCurrencies(svc, [...DEFAULT_CURRENCIES, 'MXN']);
        const withMxn = await createCustomer(svc, { address: { country: 'MX' } });
        assert.equal(withMxn.region, 'MX');
        assert.deepEqual(withMxn.currencies, ['MXN', 'USDC', 'USDB']);
        const accounts = await customerAccounts(svc, withMxn.id);
        const mxn = accounts.find((a) => a.balance.currency.code === 'MXN');
        assert.ok(mxn, JSON.stringify(accounts));
        assert.equal(mxn.type, 'INTERNAL_FIAT');
        assert.equal(mxn.fundingPaymentInstructions.length, 1);
        assert.equal(typeof mxn.fundingPaymentInstructions[0].accountOrWalletInfo.reference, 'string');
        // MXN plus USD is a valid combination for MX.
        assert.deepEqual((await createCustomer(svc, { region: 'MX', currencies: ['MXN', 'USD'] })).currencies, ['MXN', 'USD']);
      } finally {
        await setCurrencies(svc, DEFAULT_CURRENCIES);
      }
    });

    it('fiat outside the region is 400 INVALID_CURRENCY_COMBINATION listing the currencies that need another customer', async () => {
      try {
        await setCurrencies(svc, [...DEFAULT_CURRENCIES, 'EUR']);
        const before = await totalCount(svc, '/customers');
        const res = await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', region: 'US', currencies: ['USD', 'EUR', 'USDC'] } });
        const err = assertError(res, 400, 'INVALID_CURRENCY_COMBINATION', ['currencies']);
        assert.ok(JSON.stringify(err.details).includes('EUR'), `details list EUR: ${JSON.stringify(err.details)}`);
        const [detail] = err.details as Array<{ field: string; separateCustomerRequired?: unknown }>;
        assert.equal(detail!.field, 'currencies');
        assert.deepEqual(detail!.separateCustomerRequired, ['EUR']);
        assert.equal(await totalCount(svc, '/customers'), before);
        // The same currencies are fine for a euro-area customer, and USD with them.
        const de = await createCustomer(svc, { region: 'DE', currencies: ['EUR', 'USD', 'USDC'] });
        assert.deepEqual(de.currencies, ['EUR', 'USD', 'USDC']);
        // A German customer with inferred currencies holds EUR.
        assert.deepEqual((await createCustomer(svc, { address: { country: 'DE' } })).currencies, ['EUR', 'USDC', 'USDB']);
      } finally {
        await setCurrencies(svc, DEFAULT_CURRENCIES);
      }
    });

    it('a currency the platform does not support is 400 naming the entry', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const before = await totalCount(svc, '/customers');
      assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', currencies: ['USD', 'EUR'] } }), 'currencies.1');
      assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', currencies: ['BTC'] } }), 'currencies.0');
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('a taken UMA address is 400 UMA_ADDRESS_TAKEN (case-insensitively), per environment', async () => {
      const local = unique('taken.');
      const address = `$${local}@sandbox.uma.test`;
      const first = await createCustomer(svc, { umaAddress: address });
      assert.equal(first.umaAddress, address);
      const before = await totalCount(svc, '/customers');
      for (const candidate of [address, `$${local.toUpperCase()}@SANDBOX.uma.test`]) {
        assertError(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress: candidate } }), 400, 'UMA_ADDRESS_TAKEN', ['umaAddress']);
        assertError(await svc.request('POST', '/users', { body: { userType: 'INDIVIDUAL', umaAddress: candidate } }), 400, 'UMA_ADDRESS_TAKEN', ['umaAddress']);
      }
      assert.equal(await totalCount(svc, '/customers'), before);
      assert.equal(await totalCount(svc, `/customers?umaAddress=${encodeURIComponent(address)}`), 1);
      // The other environment has its own address space.
      const prod = await createCustomer(svc, { umaAddress: address }, 'production');
      assert.equal(prod.umaAddress, address);
    });

    it('two concurrent creates of one UMA address: exactly one wins', async () => {
      const address = `$${unique('race.')}@sandbox.uma.test`;
      const results = await Promise.all(
        Array.from({ length: 6 }, () => svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress: address } })),
      );
      assert.equal(results.filter((r) => r.status === 201).length, 1, results.map((r) => r.status).join(','));
      for (const r of results.filter((x) => x.status !== 201)) assertError(r, 400, 'UMA_ADDRESS_TAKEN');
      assert.equal(await totalCount(svc, `/customers?umaAddress=${encodeURIComponent(address)}`), 1);
    });

    it('bad inputs are 400 INVALID_INPUT naming the field, and create nothing', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ customerType: undefined }, 'customerType'],
        [{ customerType: 'COMPANY' }, 'customerType'],
        [{ customerType: 'BUSINESS' }, 'businessInfo'],
        [{ customerType: 5 }, 'customerType'],
        [{ customerType: null }, 'customerType'],
        [{ platformCustomerId: longText(1025) }, 'platformCustomerId'],
        [{ platformCustomerId: '' }, 'platformCustomerId'],
        [{ platformCustomerId: 123 }, 'platformCustomerId'],
        [{ region: 'usa' }, 'region'],
        [{ region: 'us' }, 'region'],
        [{ region: 'ZZ' }, 'region'],
        [{ region: 'JP' }, 'region'],
        [{ region: 7 }, 'region'],
        [{ currencies: 'USD' }, 'currencies'],
        [{ currencies: [] }, 'currencies'],
        [{ currencies: ['usd'] }, 'currencies.0'],
        [{ currencies: ['XYZ'] }, 'currencies.0'],
        [{ currencies: [5] }, 'currencies.0'],
        [{ currencies: ['USD', 'USD'] }, 'currencies.1'],
        [{ currencies: Array.from({ length: 101 }, () => 'USD') }, 'currencies'],
        [{ currencies: [longText(1025)] }, 'currencies.0'],
        [{ email: 'not-an-email' }, 'email'],
        [{ email: `${longText(1020)}@x.com` }, 'email'],
        [{ umaAddress: 'alice@sandbox.uma.test' }, 'umaAddress'],
        [{ umaAddress: '$alice' }, 'umaAddress'],
        [{ umaAddress: `$${longText(1025)}@sandbox.uma.test` }, 'umaAddress'],
        [{ fullName: '' }, 'fullName'],
        [{ fullName: longText(1025) }, 'fullName'],
        [{ fullName: ['Ada'] }, 'fullName'],
        [{ birthDate: '1990-13-01' }, 'birthDate'],
        [{ birthDate: '1990-02-30' }, 'birthDate'],
        [{ birthDate: '10/12/1990' }, 'birthDate'],
        [{ birthDate: '2999-01-01' }, 'birthDate'],
        [{ nationality: 'XX' }, 'nationality'],
        [{ nationality: 'gb' }, 'nationality'],
        [{ address: '1 Main St' }, 'address'],
        [{ address: {} }, 'address.country'],
        [{ address: { country: 'ZZ' } }, 'address.country'],
        [{ address: { country: 'JP' } }, 'address.country'],
        [{ address: { country: 'US', line1: longText(1025) } }, 'address.line1'],
        [{ address: { country: 'US', postalCode: 12345 } }, 'address.postalCode'],
        [{ nationality: 'JP' }, 'nationality'],
      ];
      const before = await totalCount(svc, '/customers');
      for (const [patch, field] of cases) {
        const body = 'customerType' in patch ? { ...patch } : { customerType: 'INDIVIDUAL', ...patch };
        if (body.customerType === undefined) delete body.customerType;
        const res = await svc.request('POST', '/customers', { body });
        assertInvalid(res, field);
      }
      assert.equal(await totalCount(svc, '/customers'), before);
    });
  });

  describe('POST /users', () => {
    it('creates a Customer: platformUserId is platformCustomerId, userType is customerType', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const platformUserId = unique('user-');
      const umaAddress = `$${unique('bob.')}@sandbox.uma.test`;
      const res = await svc.request('POST', '/users', {
        body: {
          umaAddress,
          platformUserId,
          userType: 'INDIVIDUAL',
          fullName: 'Bob Builder',
          birthDate: '1985-06-15',
          address: { line1: '2 Side St', city: 'Austin', state: 'TX', postalCode: '73301', country: 'US' },
        },
      });
      assertStatus(res, 201);
      const c = res.body;
      assert.match(c.id, ID_RE('Customer'));
      assert.equal(c.platformCustomerId, platformUserId);
      assert.equal(c.customerType, 'INDIVIDUAL');
      assert.equal(c.umaAddress, umaAddress);
      assert.equal(c.region, 'US');
      assert.equal(c.fullName, 'Bob Builder');
      assert.equal(c.birthDate, '1985-06-15');
      assert.equal(c.kycStatus, 'APPROVED');
      assert.deepEqual(c.currencies, ['USD', 'USDC', 'USDB']);
      assert.deepEqual(JSON.parse(await read(svc, `/customers/${c.id}`)), c);
      const listed = await svc.request('GET', `/customers?platformCustomerId=${platformUserId}`);
      assert.equal(listed.body.totalCount, 1);
      assert.equal(listed.body.data[0].id, c.id);
      assert.equal((await customerAccounts(svc, c.id)).length, 3);
    });

    it('with only userType it generates the rest', async () => {
      const res = await svc.request('POST', '/users', { body: { userType: 'INDIVIDUAL' } });
      assertStatus(res, 201);
      assert.match(res.body.umaAddress, /@sandbox\.uma\.test$/);
      assert.ok(res.body.platformCustomerId.length > 0);
    });

    it('bad inputs are 400 naming the field, and create nothing', async () => {
      const before = await totalCount(svc, '/customers');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{}, 'userType'],
        [{ customerType: 'INDIVIDUAL' }, 'userType'],
        [{ userType: 'COMPANY' }, 'userType'],
        [{ userType: 'BUSINESS' }, 'businessInfo'],
        [{ userType: 'INDIVIDUAL', platformUserId: longText(1025) }, 'platformUserId'],
        [{ userType: 'INDIVIDUAL', platformUserId: 42 }, 'platformUserId'],
        [{ userType: 'INDIVIDUAL', umaAddress: 'bob' }, 'umaAddress'],
        [{ userType: 'INDIVIDUAL', birthDate: '1985-02-29' }, 'birthDate'],
        [{ userType: 'INDIVIDUAL', address: { country: 'ZZ' } }, 'address.country'],
        [{ userType: 'INDIVIDUAL', currencies: Array.from({ length: 101 }, () => 'USD') }, 'currencies'],
        [{ userType: 'INDIVIDUAL', fullName: longText(1025) }, 'fullName'],
      ];
      for (const [body, field] of cases) assertInvalid(await svc.request('POST', '/users', { body }), field);
      assert.equal(await totalCount(svc, '/customers'), before);
    });
  });

  describe('GET /customers/{customerId}', () => {
    it('malformed ids are 400 naming customerId; unknown ids and ids of the other environment are 404', async () => {
      for (const id of ['abc', 'Customer:123', `InternalAccount:${absentId('X').split(':')[1]}`, 'Customer:01900000-0000-7000-8000-00000000000G', `Customer:${longText(40)}`]) {
        assertInvalid(await svc.request('GET', `/customers/${encodeURIComponent(id)}`), 'customerId');
      }
      assertError(await svc.request('GET', `/customers/${absentId('Customer')}`), 404, 'NOT_FOUND');
      const sbx = await createCustomer(svc, {}, 'sandbox');
      const prd = await createCustomer(svc, {}, 'production');
      assertError(await svc.request('GET', `/customers/${sbx.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
      assertError(await svc.request('GET', `/customers/${prd.id}`, { auth: 'sandbox' }), 404, 'NOT_FOUND');
      assert.equal(JSON.parse(await read(svc, `/customers/${prd.id}`, 'production')).id, prd.id);
    });
  });

  describe('PATCH /customers/{customerId}', () => {
    it("adding a currency holds the environment, whose configuration it reads and whose currencies it depends on, and the customer's accounts, whose currencies it reads", async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const c = await createCustomer(svc, { currencies: ['USD'] });
      const accounts = (await customerAccounts(svc, c.id)).map((a) => a.id);
      assert.equal(accounts.length, 1);
      const calls = await heldActors(svc, async () => {
        const res = await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', currencies: ['USD', 'USDC'] } });
        assertStatus(res, 200);
      });
      assert.deepEqual(calls.map((actors) => [...actors].sort()), [[envActor(svc), c.id, ...accounts].sort()]);
      assert.deepEqual((await customerAccounts(svc, c.id)).map((a) => a.balance.currency.code).sort(), ['USD', 'USDC']);
    });

    it('updates the profile, kycStatus and UMA address; the change reads back', async () => {
      const c = await createCustomer(svc, { fullName: 'Old Name', email: 'old@example.com' });
      const umaAddress = `$${unique('new.')}@sandbox.uma.test`;
      const res = await svc.request('PATCH', `/customers/${c.id}`, {
        body: { customerType: 'INDIVIDUAL', fullName: 'New Name', email: 'new@example.com', kycStatus: 'PENDING', umaAddress, birthDate: '1970-01-01' },
      });
      assertStatus(res, 200);
      const u = res.body;
      assert.equal(u.id, c.id);
      assert.equal(u.fullName, 'New Name');
      assert.equal(u.email, 'new@example.com');
      assert.equal(u.kycStatus, 'PENDING');
      assert.equal(u.umaAddress, umaAddress);
      assert.equal(u.birthDate, '1970-01-01');
      assert.equal(u.region, c.region);
      assert.equal(u.platformCustomerId, c.platformCustomerId);
      assert.equal(u.createdAt, c.createdAt);
      assert.ok(Date.parse(u.updatedAt) >= Date.parse(c.updatedAt));
      assert.deepEqual(JSON.parse(await read(svc, `/customers/${c.id}`)), u);
      // The old address is free again; the new one is taken.
      assertStatus(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress: c.umaAddress } }), 201);
      assertError(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL', umaAddress } }), 400, 'UMA_ADDRESS_TAKEN', ['umaAddress']);
      // Keeping its own address is not a conflict.
      assertStatus(await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', umaAddress } }), 200);
    });

    it('region is immutable: another region is 400 naming region, the same region is fine', async () => {
      const c = await createCustomer(svc, { region: 'US' });
      const before = await read(svc, `/customers/${c.id}`);
      assertInvalid(await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', region: 'MX' } }), 'region');
      assert.equal(await read(svc, `/customers/${c.id}`), before);
      const same = await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', region: 'US' } });
      assertStatus(same, 200);
      assert.equal(same.body.region, 'US');
      // Changing the address country does not move the customer either.
      const moved = await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', address: { country: 'MX' } } });
      assertStatus(moved, 200);
      assert.equal(moved.body.region, 'US');
      // An address always carries its country, on update as on create (the published schema says so too).
      assertInvalid(await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', address: { city: 'Lima' } } }), 'address.country');
      assert.deepEqual(JSON.parse(await read(svc, `/customers/${c.id}`)).address, { country: 'MX' });
    });

    it('new currencies provision their accounts; dropping one keeps its account; re-adding makes no duplicate', async () => {
      try {
        await setCurrencies(svc, [...DEFAULT_CURRENCIES, 'BTC']);
        const c = await createCustomer(svc, { currencies: ['USD'] });
        assert.equal((await customerAccounts(svc, c.id)).length, 1);
        const res = await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', currencies: ['USD', 'USDC', 'USDB', 'BTC'] } });
        assertStatus(res, 200);
        assert.deepEqual(res.body.currencies, ['USD', 'USDC', 'USDB', 'BTC']);
        const accounts = await customerAccounts(svc, c.id);
        assert.deepEqual(
          accounts.map((a) => `${a.balance.currency.code}:${a.type}`).sort(),
          ['BTC:INTERNAL_CRYPTO', 'USD:INTERNAL_FIAT', 'USDB:EMBEDDED_WALLET', 'USDC:INTERNAL_CRYPTO'],
        );
        const dropped = await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', currencies: ['USD'] } });
        assertStatus(dropped, 200);
        assert.deepEqual(dropped.body.currencies, ['USD']);
        assert.equal((await customerAccounts(svc, c.id)).length, 4);
        assertStatus(await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', currencies: ['USD', 'USDB'] } }), 200);
        assert.equal((await customerAccounts(svc, c.id)).length, 4);
      } finally {
        await setCurrencies(svc, DEFAULT_CURRENCIES);
      }
    });

    it('a PATCH to fiat outside the region is INVALID_CURRENCY_COMBINATION and changes nothing', async () => {
      try {
        await setCurrencies(svc, [...DEFAULT_CURRENCIES, 'EUR']);
        const c = await createCustomer(svc, { region: 'US' });
        const before = await read(svc, `/customers/${c.id}`);
        const accountsBefore = (await customerAccounts(svc, c.id)).length;
        const err = assertError(
          await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', currencies: ['USD', 'EUR'] } }),
          400,
          'INVALID_CURRENCY_COMBINATION',
          ['currencies'],
        );
        assert.ok(JSON.stringify(err.details).includes('EUR'));
        assert.equal(await read(svc, `/customers/${c.id}`), before);
        assert.equal((await customerAccounts(svc, c.id)).length, accountsBefore);
      } finally {
        await setCurrencies(svc, DEFAULT_CURRENCIES);
      }
    });

    it('bad inputs are 400 naming the field and leave the record unchanged', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const c = await createCustomer(svc, { fullName: 'Stable' });
      const other = await createCustomer(svc);
      const before = await read(svc, `/customers/${c.id}`);
      const cases: Array<[Record<string, unknown>, string, string]> = [
        [{}, 'INVALID_INPUT', 'customerType'],
        [{ fullName: 'No type' }, 'INVALID_INPUT', 'customerType'],
        [{ customerType: 'BUSINESS' }, 'INVALID_INPUT', 'customerType'],
        [{ customerType: 'INDIVIDUAL', kycStatus: 'DONE' }, 'INVALID_INPUT', 'kycStatus'],
        [{ customerType: 'INDIVIDUAL', kycStatus: true }, 'INVALID_INPUT', 'kycStatus'],
        [{ customerType: 'INDIVIDUAL', email: 'nope' }, 'INVALID_INPUT', 'email'],
        [{ customerType: 'INDIVIDUAL', fullName: longText(1025) }, 'INVALID_INPUT', 'fullName'],
        [{ customerType: 'INDIVIDUAL', currencies: ['EUR'] }, 'INVALID_INPUT', 'currencies.0'],
        [{ customerType: 'INDIVIDUAL', currencies: [] }, 'INVALID_INPUT', 'currencies'],
        [{ customerType: 'INDIVIDUAL', currencies: Array.from({ length: 101 }, () => 'USD') }, 'INVALID_INPUT', 'currencies'],
        [{ customerType: 'INDIVIDUAL', umaAddress: 'plain@sandbox.uma.test' }, 'INVALID_INPUT', 'umaAddress'],
        [{ customerType: 'INDIVIDUAL', umaAddress: other.umaAddress }, 'UMA_ADDRESS_TAKEN', 'umaAddress'],
        [{ customerType: 'INDIVIDUAL', birthDate: '2001-02-29' }, 'INVALID_INPUT', 'birthDate'],
        [{ customerType: 'INDIVIDUAL', nationality: 'QQ' }, 'INVALID_INPUT', 'nationality'],
        [{ customerType: 'INDIVIDUAL', address: { line1: 'no country' } }, 'INVALID_INPUT', 'address.country'],
        [{ customerType: 'INDIVIDUAL', region: 'mx' }, 'INVALID_INPUT', 'region'],
      ];
      for (const [body, code, field] of cases) {
        assertError(await svc.request('PATCH', `/customers/${c.id}`, { body }), 400, code, [field]);
      }
      assert.equal(await read(svc, `/customers/${c.id}`), before);
    });

    it('concurrent PATCHes adding the same currencies provision each account once', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const c = await createCustomer(svc, { currencies: ['USD'] });
      const body = { customerType: 'INDIVIDUAL', currencies: ['USD', 'USDC', 'USDB'] };
      const results = await Promise.all(Array.from({ length: 6 }, () => svc.request('PATCH', `/customers/${c.id}`, { body })));
      for (const r of results) assertStatus(r, 200);
      const accounts = await customerAccounts(svc, c.id);
      assert.deepEqual(accounts.map((a) => a.balance.currency.code).sort(), ['USD', 'USDB', 'USDC']);
    });

    it('malformed ids are 400; unknown and other-environment ids are 404 and change nothing', async () => {
      const body = { customerType: 'INDIVIDUAL', fullName: 'Intruder' };
      assertInvalid(await svc.request('PATCH', '/customers/not-an-id', { body }), 'customerId');
      assertError(await svc.request('PATCH', `/customers/${absentId('Customer')}`, { body }), 404, 'NOT_FOUND');
      const prd = await createCustomer(svc, { fullName: 'Prod' }, 'production');
      const before = await read(svc, `/customers/${prd.id}`, 'production');
      assertError(await svc.request('PATCH', `/customers/${prd.id}`, { body, auth: 'sandbox' }), 404, 'NOT_FOUND');
      assert.equal(await read(svc, `/customers/${prd.id}`, 'production'), before);
      const sbx = await createCustomer(svc, { fullName: 'Sandbox' });
      const sbxBefore = await read(svc, `/customers/${sbx.id}`);
      assertError(await svc.request('PATCH', `/customers/${sbx.id}`, { body, auth: 'production' }), 404, 'NOT_FOUND');
      assert.equal(await read(svc, `/customers/${sbx.id}`), sbxBefore);
    });
  });

  describe('DELETE /customers/{customerId}', () => {
    it('soft-deletes: the customer stays readable with isDeleted true, and no external account can be made for it', async () => {
      const c = await createCustomer(svc, { fullName: 'Leaving' });
      const res = await svc.request('DELETE', `/customers/${c.id}`);
      assertStatus(res, 200);
      assert.equal(res.body.id, c.id);
      assert.equal(res.body.isDeleted, true);
      assert.equal(res.body.fullName, 'Leaving');
      const read1 = JSON.parse(await read(svc, `/customers/${c.id}`));
      assert.deepEqual(read1, res.body);
      // Listed among deleted customers, not among active ones.
      const deleted = await walk(svc, '/customers?isDeleted=true', 100);
      assert.ok(deleted.items.some((x) => x.id === c.id));
      assert.ok(deleted.items.every((x) => x.isDeleted === true));
      const active = await walk(svc, '/customers?isDeleted=false', 100);
      assert.ok(!active.items.some((x) => x.id === c.id));
      // Its internal accounts remain readable.
      assert.equal((await customerAccounts(svc, c.id)).length, c.currencies.length);
      // Nothing new for it.
      const refused = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('123456789', { customerId: c.id }) });
      assertError(refused, 409, 'CONFLICT');
      assert.equal(await totalCount(svc, `/customers/external-accounts?customerId=${c.id}`), 0);
      assertError(await svc.request('PATCH', `/customers/${c.id}`, { body: { customerType: 'INDIVIDUAL', fullName: 'Back' } }), 409, 'CONFLICT');
      assert.deepEqual(JSON.parse(await read(svc, `/customers/${c.id}`)), read1);
      // Deleting again answers the same record.
      const again = await svc.request('DELETE', `/customers/${c.id}`);
      assertStatus(again, 200);
      assert.deepEqual(again.body, read1);
    });

    it('malformed ids are 400; unknown and other-environment ids are 404 and delete nothing', async () => {
      assertInvalid(await svc.request('DELETE', '/customers/Customer:nope'), 'customerId');
      assertError(await svc.request('DELETE', `/customers/${absentId('Customer')}`), 404, 'NOT_FOUND');
      const prd = await createCustomer(svc, {}, 'production');
      assertError(await svc.request('DELETE', `/customers/${prd.id}`, { auth: 'sandbox' }), 404, 'NOT_FOUND');
      assert.equal(JSON.parse(await read(svc, `/customers/${prd.id}`, 'production')).isDeleted, false);
      const sbx = await createCustomer(svc);
      assertError(await svc.request('DELETE', `/customers/${sbx.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
      assert.equal(JSON.parse(await read(svc, `/customers/${sbx.id}`)).isDeleted, false);
    });
  });

  describe('GET /customers', () => {
    it('lists newest first; limit/cursor paging visits every customer exactly once with a steady totalCount', async () => {
      for (let i = 0; i < 7; i++) await createCustomer(svc, { platformCustomerId: unique('page-') });
      const all = await svc.request('GET', '/customers?limit=100');
      assertStatus(all, 200);
      assertEnvelope(all.body);
      const total = all.body.totalCount;
      assert.ok(total >= 7);
      for (const limit of [1, 3, 7, 100]) {
        const { items, totalCounts } = await walk(svc, '/customers', limit);
        assert.equal(items.length, total, `limit ${limit}`);
        assert.equal(new Set(items.map((c) => c.id)).size, total, `limit ${limit}: duplicates`);
        assert.ok(totalCounts.every((t) => t === total));
        for (let i = 1; i < items.length; i++) {
          assert.ok(items[i - 1].id > items[i].id, 'newest first by id');
          assert.ok(Date.parse(items[i - 1].createdAt) >= Date.parse(items[i].createdAt), 'newest first by createdAt');
        }
      }
    });

    it('customers created while paging do not disturb the walk', async () => {
      for (let i = 0; i < 5; i++) await createCustomer(svc);
      const first = await svc.request('GET', '/customers?limit=2');
      const expected = (await walk(svc, '/customers', 100)).items.map((c) => c.id);
      const seen: string[] = first.body.data.map((c: { id: string }) => c.id);
      let cursor: string | undefined = first.body.nextCursor;
      while (cursor !== undefined) {
        await createCustomer(svc);
        const page = await svc.request('GET', `/customers?limit=2&cursor=${encodeURIComponent(cursor)}`);
        assertStatus(page, 200);
        seen.push(...page.body.data.map((c: { id: string }) => c.id));
        cursor = page.body.hasMore ? page.body.nextCursor : undefined;
      }
      assert.deepEqual(seen, expected);
    });

    it('defaults to 20 per page with hasMore and nextCursor', async () => {
      let total = await totalCount(svc, '/customers');
      while (total < 21) {
        await createCustomer(svc);
        total++;
      }
      const res = await svc.request('GET', '/customers');
      assertStatus(res, 200);
      assertEnvelope(res.body);
      assert.equal(res.body.data.length, 20);
      assert.equal(res.body.hasMore, true);
      assert.equal(typeof res.body.nextCursor, 'string');
      const last = await svc.request('GET', `/customers?limit=100`);
      assert.equal(last.body.hasMore, last.body.totalCount > 100);
    });

    it('filters by platformCustomerId, umaAddress, region and isDeleted', async () => {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const pcid = unique('filter-');
      const target = await createCustomer(svc, { platformCustomerId: pcid, region: 'MX' });
      const byPcid = await svc.request('GET', `/customers?platformCustomerId=${pcid}`);
      assert.equal(byPcid.body.totalCount, 1);
      assert.deepEqual(byPcid.body.data, [target]);
      const byUma = await svc.request('GET', `/customers?umaAddress=${encodeURIComponent(target.umaAddress.toUpperCase())}`);
      assert.equal(byUma.body.totalCount, 1);
      assert.equal(byUma.body.data[0].id, target.id);
      const mx = await walk(svc, '/customers?region=MX', 100);
      assert.ok(mx.items.length >= 1);
      assert.ok(mx.items.every((c) => c.region === 'MX'));
      assert.ok(mx.items.some((c) => c.id === target.id));
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${pcid}&region=US`), 0);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${pcid}&isDeleted=true`), 0);
      await svc.request('DELETE', `/customers/${target.id}`);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${pcid}&isDeleted=true`), 1);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${pcid}&isDeleted=false`), 0);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${unique('none-')}`), 0);
    });

    it('each environment lists only its own customers', async () => {
      const prd = await createCustomer(svc, { platformCustomerId: unique('prd-') }, 'production');
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${prd.platformCustomerId}`, 'sandbox'), 0);
      assert.equal(await totalCount(svc, `/customers?platformCustomerId=${prd.platformCustomerId}`, 'production'), 1);
      const sbxIds = new Set((await walk(svc, '/customers', 100, 'sandbox')).items.map((c) => c.id));
      assert.ok(!sbxIds.has(prd.id));
    });

    it('bad query parameters are 400 naming the parameter', async () => {
      const cases: Array<[string, string]> = [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=-1', 'limit'],
        ['limit=abc', 'limit'],
        ['limit=', 'limit'],
        ['cursor=garbage', 'cursor'],
        [`cursor=${Buffer.from('Customer:not-a-uuid').toString('base64url')}`, 'cursor'],
        [`cursor=${longText(1025)}`, 'cursor'],
        ['region=mx', 'region'],
        ['region=MEX', 'region'],
        ['isDeleted=maybe', 'isDeleted'],
        [`platformCustomerId=${longText(1025)}`, 'platformCustomerId'],
        [`umaAddress=${longText(1025)}`, 'umaAddress'],
      ];
      for (const [query, field] of cases) assertInvalid(await svc.request('GET', `/customers?${query}`), field);
    });
  });
});
