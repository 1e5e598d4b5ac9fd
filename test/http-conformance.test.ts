// Response-schema conformance: test/support/service.ts holds every success to the schema
// GET /openapi.json publishes for it. This walk reaches every route with a success, all
// of them in every shape worth seeing (lists with a second page, every external account
// variant), so the whole API is checked against its own document.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite } from './support/service.js';
import { ACCOUNT_FIXTURES, SOLANA_ADDRESS, assertStatus, createCustomer, customerAccounts } from './support/assertions.js';
import { formBody, PDF } from './support/form-body.js';
import { externalUsd } from './support/money.js';
import { routes } from '../src/http/routes/index.js';
import { newKeyPairHex } from './support/crypto-fixtures.js';
import { until } from './support/money.js';
import { startReceiver } from './support/webhook-receiver.js';

describe('responses conform to the published OpenAPI document', () => {
  const svc = serviceForSuite();

  it('every route answers a success that validates against its published schema', async () => {
    const ok = async (method: string, path: string, body?: unknown): Promise<any> => {
      const res = await svc.request(method, path, body === undefined ? {} : { body });
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      return res.body;
    };
    const customer = await createCustomer(svc, { fullName: 'Walk', address: { line1: '1 Main St', city: 'Springfield', postalCode: '12345', country: 'US' } });
    await ok('POST', '/users', { userType: 'INDIVIDUAL' });
    await createCustomer(svc);
    const list = await ok('GET', '/customers?limit=1');
    assert.equal(typeof list.nextCursor, 'string');
    await ok('GET', `/customers?limit=1&cursor=${list.nextCursor}`);
    await ok('GET', `/customers/${customer.id}`);
    await ok('PATCH', `/customers/${customer.id}`, { customerType: 'INDIVIDUAL', fullName: 'Walked' });

    const accounts = await customerAccounts(svc, customer.id);
    await ok('GET', '/internal-accounts?limit=2');
    await ok('GET', `/internal-accounts/${accounts[0].id}`);
    await ok('GET', '/platform/internal-accounts');
    await ok('POST', `/sandbox/internal-accounts/${accounts[0].id}/fund`, { amount: 500 });

    for (const fixture of ACCOUNT_FIXTURES) {
      const body: Record<string, unknown> = { customerId: customer.id, currency: fixture.currency, accountInfo: fixture.accountInfo };
      if (fixture.cryptoNetwork !== undefined) body.cryptoNetwork = fixture.cryptoNetwork;
      const res = await svc.request('POST', '/customers/external-accounts', { body });
      assertStatus(res, 201);
    }
    const fixture = ACCOUNT_FIXTURES[0]!;
    await ok('POST', '/platform/external-accounts', { currency: fixture.currency, accountInfo: fixture.accountInfo });
    await ok('GET', '/customers/external-accounts?limit=100');
    await ok('GET', `/customers/external-accounts?customerId=${customer.id}`);
    const platformExternal = await ok('GET', '/platform/external-accounts');
    await ok('GET', `/receiver/uma/${encodeURIComponent(customer.umaAddress)}?customerId=${customer.id}`);
    await ok('GET', `/receiver/${encodeURIComponent('$success.eur@sandbox.uma.test')}`);
    await ok('GET', `/receiver/external-account/${platformExternal.data[0].id}`);
    const customerExternal = (await ok('GET', `/customers/external-accounts?customerId=${customer.id}`)).data;
    await ok('GET', `/customers/external-accounts/${customerExternal[0].id}`);
    await ok('DELETE', `/customers/external-accounts/${customerExternal[0].id}`);
    await ok('GET', `/platform/external-accounts/${platformExternal.data[0].id}`);
    await ok('DELETE', `/platform/external-accounts/${platformExternal.data[0].id}`);

    const usd = accounts.find((a) => a.balance.currency.code === 'USD');
    const payee = (await customerAccounts(svc, (await createCustomer(svc, { fullName: 'Payee' })).id)).find((a) => a.balance.currency.code === 'USD');
    await ok('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { amount: 1_000 });
    const quoteTo = (accountId: string) => ({
      source: { sourceType: 'ACCOUNT', accountId: usd.id },
      destination: { destinationType: 'ACCOUNT', accountId },
      lockedCurrencySide: 'SENDING',
      lockedCurrencyAmount: 100,
      senderCustomerInfo: { FULL_NAME: 'Walk' },
    });
    const quote = await ok('POST', '/quotes', quoteTo(payee.id));
    await ok('GET', `/quotes/${quote.id}`);
    const executed = await ok('POST', `/quotes/${quote.id}/execute`);
    await ok('POST', '/quotes', { ...quoteTo(payee.id), immediatelyExecute: true });
    const transactions = await ok('GET', '/transactions?limit=1');
    assert.equal(typeof transactions.nextCursor, 'string');
    await ok('GET', `/transactions?limit=1&cursor=${transactions.nextCursor}`);
    await ok('GET', `/transactions/${executed.transactionId}`);
    const volume = await ok('GET', '/transactions/volume?period=LAST_HOUR');
    assert.ok(volume.currencies.some((c: { currency: string; sentTotal: number }) => c.currency === 'USD' && c.sentTotal > 0), 'the payments count');
    const bank = await externalUsd(svc, customer.id, '123');
    const funding = await ok('POST', '/quotes', { ...quoteTo(usd.id), source: { sourceType: 'REALTIME_FUNDING', currency: 'USD', customerId: customer.id } });
    await ok('POST', '/sandbox/send', { quoteId: funding.id, currencyCode: 'USD' });
    await ok('POST', `/transactions/${executed.transactionId}/confirm`, {});
    const inFlight = await ok('POST', '/quotes', { ...quoteTo((await externalUsd(svc, customer.id, '003')).id), immediatelyExecute: true });
    await ok('POST', `/transactions/${inFlight.transactionId}/cancel`);
    await ok('POST', '/transfer-in', { source: { accountId: bank.id }, destination: { accountId: usd.id }, amount: 200 });
    await ok('POST', '/transfer-out', { source: { accountId: usd.id }, destination: { accountId: bank.id, paymentRail: 'ACH' }, remittanceInformation: 'all of it' });
    const events = await ok('GET', '/webhooks/events?limit=1');
    await ok('GET', `/webhooks/events/${events.data[0].id}`);
    await ok('POST', `/webhooks/events/${events.data[0].id}/redeliver`);
    await ok('POST', '/webhooks/test', { url: 'http://127.0.0.1:9/hook' });
    const verification = await ok('POST', '/verifications', {
      customerId: customer.id,
      businessInfo: { registrationNumber: 'REG-001', legalName: 'Walk Ltd', country: 'US' },
      beneficialOwners: [{ personalInfo: { firstName: 'Ada', lastName: 'Lovelace', birthDate: '1990-01-01' } }],
    });
    await ok('GET', `/verifications/${verification.id}`);

    // Incoming payments: the platform answers 202 and then approves one and rejects the other.
    const platform = await startReceiver(() => 202);
    try {
      await ok('PATCH', '/config', { webhookEndpoint: platform.url });
      const incoming = { senderUmaAddress: '$alice@sandbox.uma.test', receivingCurrencyCode: 'USD', receivingCurrencyAmount: 100, customerId: payee.customerId };
      const first = await ok('POST', '/sandbox/uma/receive', incoming);
      const second = await ok('POST', '/sandbox/uma/receive', { ...incoming, customerId: undefined, receiverUmaAddress: customer.umaAddress });
      const world = svc.service.services.world;
      const answered = (txId: string) => [...world.webhookEvents.eachRecord()].some(([, e]) => e.approval === true && e.transaction?.id === txId && e.deliveryStatus === 'DELIVERED');
      await platform.waitFor(2);
      await until(svc, () => answered(first.id) && answered(second.id));
      await ok('POST', `/transactions/${first.id}/approve`);
      await ok('POST', `/transactions/${second.id}/reject`);
    } finally {
      await platform.close();
    }

    await ok('GET', '/config');
    await ok('GET', '/exchange-rates?sourceCurrency=USD&destinationCurrency=EUR&destinationCurrency=BTC');
    await ok('PATCH', '/config', { webhookEndpoint: 'http://127.0.0.1:9/hook' });
    // Embedded wallet: credentials, sessions, signed retries (sandbox literal) and export.
    const wallet = accounts.find((a) => a.type === 'EMBEDDED_WALLET');
    const clientPublicKey = newKeyPairHex().publicKey;
    const otp = await ok('POST', '/auth/credentials', { type: 'EMAIL_OTP', accountId: wallet.id, email: 'walk@example.com' });
    await ok('GET', `/auth/credentials?accountId=${wallet.id}`);
    const session = await ok('POST', `/auth/credentials/${otp.id}/verify`, { otp: '000000', clientPublicKey });
    await ok('GET', `/auth/sessions?accountId=${wallet.id}`);
    const retry = async (method: string, path: string, body?: unknown): Promise<any> => {
      const challenge = await ok(method, path, body);
      const res = await svc.request(method, path, {
        ...(body === undefined ? {} : { body }),
        headers: { 'Service-Wallet-Signature': 'sandbox-valid-signature', 'Request-Id': challenge.requestId },
      });
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path} retry: ${res.status} ${res.text}`);
      return res.body;
    };
    const passkey = await retry('POST', '/auth/credentials', {
      type: 'PASSKEY',
      accountId: wallet.id,
      nickname: 'walk',
      challenge: 'c',
      attestation: { credentialId: 'k', clientDataJson: 'e30', attestationObject: 'o2M' },
    });
    await ok('POST', `/auth/credentials/${passkey.id}/challenge`, { clientPublicKey });
    await retry('POST', `/internal-accounts/${wallet.id}/export`, { clientPublicKey });
    await retry('PATCH', `/internal-accounts/${wallet.id}`, { privateEnabled: true });
    const another = await ok('POST', `/auth/credentials/${otp.id}/verify`, { otp: '000000', clientPublicKey });
    await retry('POST', `/auth/sessions/${another.id}/refresh`, { clientPublicKey });
    await retry('DELETE', `/auth/sessions/${session.id}`);
    await retry('DELETE', `/auth/credentials/${passkey.id}`);

    await ok('DELETE', `/customers/${customer.id}`);
    await ok('GET', `/customers/${customer.id}`);

  });

  it('the second wave of operations answers a success that validates against its published schema', async () => {
    const ok = async (method: string, path: string, body?: unknown): Promise<any> => {
      const res = await svc.request(method, path, body === undefined ? {} : { body });
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      return res.body;
    };
    const sendForm = async (method: string, path: string, fields: Record<string, string>): Promise<any> => {
      const { raw, contentType } = await formBody(fields, { bytes: PDF, name: 'scan.pdf', type: 'application/pdf' });
      const res = await svc.request(method, path, { raw, headers: { 'content-type': contentType } });
      assert.ok(res.status >= 200 && res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
      return res.body;
    };
    const address = { line1: '1 Main St', postalCode: '94105', country: 'US' };
    const acme = await createCustomer(svc, {
      customerType: 'BUSINESS',
      businessInfo: { legalName: 'Acme LLC', country: 'US', taxId: '12-3456789', incorporatedOn: '2015-03-14', registrationNumber: 'REG-000777' },
      address,
    });
    const personalInfo = { firstName: 'Ada', lastName: 'Lovelace', birthDate: '1980-01-02', nationality: 'US', address, idType: 'SSN', identifier: '123-45-6789' };
    const owner = await ok('POST', '/beneficial-owners', { customerId: acme.id, roles: ['UBO', 'CONTROL_PERSON'], ownershipPercentage: 40, personalInfo });
    await ok('GET', `/beneficial-owners?customerId=${acme.id}`);
    await ok('GET', `/beneficial-owners/${owner.id}`);
    await ok('PATCH', `/beneficial-owners/${owner.id}`, { ownershipPercentage: 50 });
    const document = await sendForm('POST', '/documents', { documentHolder: acme.id, documentType: 'CERTIFICATE_OF_INCORPORATION', country: 'US' });
    await ok('GET', `/documents?documentHolder=${acme.id}`);
    await ok('GET', `/documents/${document.id}`);
    await sendForm('PUT', `/documents/${document.id}`, { documentType: 'ARTICLES_OF_INCORPORATION', country: 'US' });
    await ok('POST', '/verifications', { customerId: acme.id });
    await ok('GET', '/verifications');
    await ok('DELETE', `/documents/${document.id}`);
    const csv = await formBody({}, { bytes: Buffer.from('umaAddress,platformCustomerId,customerType\n,walk-1,INDIVIDUAL\n'), name: 'customers.csv', type: 'text/csv' });
    const imported = await svc.request('POST', '/customers/bulk/csv', { raw: csv.raw, headers: { 'content-type': csv.contentType } });
    assert.equal(imported.status, 202, imported.text);
    await ok('GET', `/customers/bulk/jobs/${imported.body.jobId}`);

    await ok('GET', '/discoveries');
    await ok('GET', '/uma-providers');
    await ok('GET', '/vasps');
    await ok('GET', '/customers/end-user-terms');
    const usdc = (await customerAccounts(svc, acme.id)).find((a) => a.balance.currency.code === 'USDC');
    await ok('POST', '/crypto/estimate-withdrawal-fee', { internalAccountId: usdc.id, currency: 'USDC', cryptoNetwork: 'SOLANA', amount: 1_000, destinationAddress: SOLANA_ADDRESS });

    const token = await ok('POST', '/tokens', { name: 'walk', permissions: ['VIEW'] });
    await ok('GET', '/tokens');
    await ok('GET', `/tokens/${token.id}`);
    await ok('DELETE', `/tokens/${token.id}`);

    const platform = await startReceiver(() => 200);
    try {
      await ok('PATCH', '/config', { webhookEndpoint: platform.url });
      await ok('POST', '/sandbox/webhooks/test');
    } finally {
      await platform.close();
    }
  });

  it('leaves no route unseen', () => {
    const missing = routes.map((r) => `${r.method} ${r.path}`).filter((r) => !svc.conformed.has(r));
    assert.deepEqual(missing, [], 'routes never seen answering a conforming success');
  });
});
