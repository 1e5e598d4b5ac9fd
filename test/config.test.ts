// Platform configuration (SERVICE_SPEC parts 2 and 4, CONTRACT.md): GET and PATCH /config
// per environment, its validation, and the platform accounts a new currency brings.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey } from 'node:crypto';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import { createPlatform } from '../src/platforms.js';
import {
  DEFAULT_CURRENCIES,
  ID_RE,
  ISO_TIME,
  assertError,
  assertInvalid,
  assertStatus,
  createCustomer,
  heldActors,
  longText,
  read,
  setCurrencies,
  supportedCurrency,
  totalCount,
  walk,
} from './support/assertions.js';

const SPKI_P256_PREFIX = '3059301306072a8648ce3d020106082a8648ce3d030107034200';

function assertP256Point(hex: string): void {
  assert.match(hex, /^04[0-9a-f]{128}$/);
  assert.equal(hex.length, 130);
  // Node refuses a point that is not on the curve.
  const key = createPublicKey({ key: Buffer.from(SPKI_P256_PREFIX + hex, 'hex'), format: 'der', type: 'spki' });
  assert.equal(key.asymmetricKeyType, 'ec');
  assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
}

async function platformAccounts(svc: TestService, code: string, auth: 'sandbox' | 'production' = 'sandbox'): Promise<any[]> {
  return (await walk(svc, `/platform/internal-accounts?currency=${code}`, 100, auth)).items;
}

describe('config', () => {
  const svc = serviceForSuite();

  it('GET /config of a new platform: sandbox defaults, both environments, a P-256 webhook key that survives restart', async () => {
    const fresh = await startTestService();
    let reopened: TestService | undefined;
    try {
      const res = await fresh.request('GET', '/config');
      assertStatus(res, 200);
      const c = res.body;
      assert.match(c.id, ID_RE('PlatformConfig'));
      assert.equal(c.umaDomain, 'sandbox.uma.test');
      assert.equal(typeof c.proxyUmaSubdomain, 'string');
      assert.equal(c.webhookEndpoint, '');
      assert.equal(c.isRegulatedFinancialInstitution, false);
      assert.match(c.createdAt, ISO_TIME);
      assert.match(c.updatedAt, ISO_TIME);
      assertP256Point(c.webhookPublicKey);
      assert.deepEqual(
        c.supportedCurrencies.map((s: { currencyCode: string }) => s.currencyCode),
        ['USD', 'USDC', 'USDB'],
      );
      for (const s of c.supportedCurrencies) {
        assert.ok(Number.isInteger(s.minAmount) && Number.isInteger(s.maxAmount) && s.minAmount <= s.maxAmount, JSON.stringify(s));
        assert.deepEqual([...s.enabledTransactionTypes].sort(), ['INCOMING', 'OUTGOING']);
        assert.ok(Array.isArray(s.requiredCounterpartyFields));
        assert.ok(Array.isArray(s.providerRequiredCustomerFields));
        assert.ok(Array.isArray(s.providerRequiredCounterpartyCustomerFields));
      }
      const prd = await fresh.request('GET', '/config', { auth: 'production' });
      assertStatus(prd, 200);
      assert.notEqual(prd.body.id, c.id);
      assertP256Point(prd.body.webhookPublicKey);
      assert.notEqual(prd.body.webhookPublicKey, c.webhookPublicKey, 'each environment signs with its own key');
      assert.deepEqual(
        prd.body.supportedCurrencies.map((s: { currencyCode: string }) => s.currencyCode),
        ['USD', 'USDC', 'USDB'],
      );
      await fresh.stop({ keepData: true });
      reopened = await startTestService({ dataDir: fresh.dataDir });
      assert.equal(await read(reopened, '/config'), res.text);
      assert.equal(await read(reopened, '/config', 'production'), prd.text);
    } finally {
      if (reopened !== undefined) await reopened.stop();
      else await fresh.stop();
    }
  });

  it('PATCH /config updates umaDomain, proxyUmaSubdomain and webhookEndpoint; they read back and drive new UMA addresses', async () => {
    const before = (await svc.request('GET', '/config')).body;
    try {
      const res = await svc.request('PATCH', '/config', {
        body: { umaDomain: 'Pay.Example.COM', proxyUmaSubdomain: 'uma', webhookEndpoint: 'https://hooks.example.com/uma?x=1' },
      });
      assertStatus(res, 200);
      const c = res.body;
      assert.equal(c.id, before.id);
      assert.equal(c.umaDomain, 'pay.example.com');
      assert.equal(c.proxyUmaSubdomain, 'uma');
      assert.equal(c.webhookEndpoint, 'https://hooks.example.com/uma?x=1');
      assert.equal(c.webhookPublicKey, before.webhookPublicKey);
      assert.equal(c.createdAt, before.createdAt);
      assert.ok(Date.parse(c.updatedAt) >= Date.parse(before.updatedAt));
      assert.deepEqual(c.supportedCurrencies, before.supportedCurrencies);
      assert.equal(await read(svc, '/config'), res.text);
      const customer = await createCustomer(svc);
      assert.match(customer.umaAddress, /^\$[^@]+@pay\.example\.com$/);
      // An empty webhookEndpoint removes it; http is allowed.
      assert.equal((await svc.request('PATCH', '/config', { body: { webhookEndpoint: '' } })).body.webhookEndpoint, '');
      assert.equal((await svc.request('PATCH', '/config', { body: { webhookEndpoint: 'http://127.0.0.1:9/hook' } })).body.webhookEndpoint, 'http://127.0.0.1:9/hook');
      // The other environment is untouched.
      const prd = JSON.parse(await read(svc, '/config', 'production'));
      assert.notEqual(prd.umaDomain, 'pay.example.com');
      assert.equal(prd.webhookEndpoint, '');
    } finally {
      assertStatus(await svc.request('PATCH', '/config', { body: { umaDomain: before.umaDomain, proxyUmaSubdomain: before.proxyUmaSubdomain, webhookEndpoint: '' } }), 200);
    }
  });

  it('an empty PATCH changes nothing but updatedAt; read-only fields in the body are ignored', async () => {
    const before = (await svc.request('GET', '/config')).body;
    const empty = await svc.request('PATCH', '/config', { body: {} });
    assertStatus(empty, 200);
    assert.deepEqual({ ...empty.body, updatedAt: undefined }, { ...before, updatedAt: undefined });
    const res = await svc.request('PATCH', '/config', {
      body: { id: 'PlatformConfig:x', createdAt: '2000-01-01T00:00:00.000Z', webhookPublicKey: `04${'0'.repeat(128)}`, isRegulatedFinancialInstitution: true },
    });
    assert.ok(res.status === 200 || res.status === 400, res.text);
    const after = JSON.parse(await read(svc, '/config'));
    assert.equal(after.id, before.id);
    assert.equal(after.createdAt, before.createdAt);
    assert.equal(after.webhookPublicKey, before.webhookPublicKey);
    assert.equal(after.isRegulatedFinancialInstitution, false, 'only the operator sets isRegulatedFinancialInstitution');
    assert.deepEqual({ ...after, updatedAt: undefined }, { ...before, updatedAt: undefined });
  });

  it('a newly supported currency gets a platform internal account, once; dropping it keeps the account', async () => {
    try {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const beforeTotal = await totalCount(svc, '/platform/internal-accounts');
      const withLimits = [...DEFAULT_CURRENCIES.map((c) => supportedCurrency(c)), supportedCurrency('EUR', { minAmount: 100, maxAmount: 5_000_000, enabledTransactionTypes: ['INCOMING'] }), supportedCurrency('BTC')];
      const res = await svc.request('PATCH', '/config', { body: { supportedCurrencies: withLimits } });
      assertStatus(res, 200);
      assert.deepEqual(res.body.supportedCurrencies, withLimits);
      const eur = await platformAccounts(svc, 'EUR');
      assert.equal(eur.length, 1);
      assert.equal(eur[0].type, 'INTERNAL_FIAT');
      assert.equal(eur[0].customerId, '');
      assert.equal(eur[0].balance.amount, 0);
      assert.equal(eur[0].balance.currency.code, 'EUR');
      assert.equal(eur[0].fundingPaymentInstructions.length, 1);
      assert.equal(eur[0].fundingPaymentInstructions[0].isPlatformAccount, true);
      const btc = await platformAccounts(svc, 'BTC');
      assert.equal(btc.length, 1);
      assert.equal(btc[0].type, 'INTERNAL_CRYPTO');
      assert.equal(await totalCount(svc, '/platform/internal-accounts'), beforeTotal + 2);
      // The same list again, then without EUR, then with it back: still one EUR account.
      assertStatus(await svc.request('PATCH', '/config', { body: { supportedCurrencies: withLimits } }), 200);
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      await setCurrencies(svc, [...DEFAULT_CURRENCIES, 'EUR']);
      assert.equal((await platformAccounts(svc, 'EUR')).length, 1);
      assert.equal(await totalCount(svc, '/platform/internal-accounts'), beforeTotal + 2);
      // Production got nothing from sandbox's changes.
      assert.equal((await platformAccounts(svc, 'EUR', 'production')).length, 0);
    } finally {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
    }
  });

  it('concurrent PATCHes adding one currency make one platform account', async () => {
    try {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
      const before = (await platformAccounts(svc, 'MXN')).length;
      const body = { supportedCurrencies: [...DEFAULT_CURRENCIES, 'MXN'].map((c) => supportedCurrency(c)) };
      const results = await Promise.all(Array.from({ length: 6 }, () => svc.request('PATCH', '/config', { body })));
      for (const r of results) assertStatus(r, 200);
      assert.equal((await platformAccounts(svc, 'MXN')).length, before === 0 ? 1 : before);
    } finally {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
    }
  });

  it('PATCH naming only currency codes: new currencies take the defaults, listed ones keep their settings', async () => {
    try {
      await setCurrencies(svc, ['USD']);
      const tuned = supportedCurrency('USD', { minAmount: 500, maxAmount: 900_000, enabledTransactionTypes: ['OUTGOING'] });
      assertStatus(await svc.request('PATCH', '/config', { body: { supportedCurrencies: [tuned] } }), 200);
      const res = await svc.request('PATCH', '/config', { body: { supportedCurrencies: [{ currencyCode: 'USD' }, { currencyCode: 'MXN' }] } });
      assertStatus(res, 200);
      const shown = JSON.parse(await read(svc, '/config'));
      assert.deepEqual(shown.supportedCurrencies, res.body.supportedCurrencies);
      assert.deepEqual(shown.supportedCurrencies, [
        tuned,
        {
          currencyCode: 'MXN',
          minAmount: 1,
          maxAmount: 100_000_000,
          enabledTransactionTypes: ['OUTGOING', 'INCOMING'],
          requiredCounterpartyFields: [],
          providerRequiredCustomerFields: [],
          providerRequiredCounterpartyCustomerFields: [],
        },
      ]);
      const mxn = await platformAccounts(svc, 'MXN');
      assert.equal(mxn.length, 1);
      assert.equal(mxn[0].type, 'INTERNAL_FIAT');
      assert.equal(mxn[0].balance.currency.code, 'MXN');
    } finally {
      await setCurrencies(svc, DEFAULT_CURRENCIES);
    }
  });

  it("a PATCH holds the environment and the platform's accounts, whose currencies it reads", async () => {
    const accounts = (await walk(svc, '/platform/internal-accounts', 100)).items.map((a: any) => a.id);
    assert.ok(accounts.length >= DEFAULT_CURRENCIES.length);
    const { umaDomain } = JSON.parse(await read(svc, '/config'));
    const calls = await heldActors(svc, async () => {
      assertStatus(await svc.request('PATCH', '/config', { body: { umaDomain } }), 200);
    });
    assert.deepEqual(calls.map((actors) => [...actors].sort()), [[`${svc.credentials.platformId}#sandbox`, ...accounts].sort()]);
  });

  it('creating a platform holds the actors of both its new environments', async () => {
    let platformId = '';
    const calls = await heldActors(svc, async () => {
      platformId = (await createPlatform(svc.service.services)).platformId;
    });
    assert.deepEqual(calls.map((actors) => [...actors].sort()), [[`${platformId}#production`, `${platformId}#sandbox`]]);
  });

  it('production has its own configuration', async () => {
    try {
      const res = await svc.request('PATCH', '/config', { auth: 'production', body: { webhookEndpoint: 'https://prod.example.com/hook' } });
      assertStatus(res, 200);
      assert.equal(res.body.webhookEndpoint, 'https://prod.example.com/hook');
      assert.equal(JSON.parse(await read(svc, '/config')).webhookEndpoint, '');
      await setCurrencies(svc, [...DEFAULT_CURRENCIES, 'BRL'], 'production');
      assert.equal((await platformAccounts(svc, 'BRL', 'production')).length, 1);
      assert.equal((await platformAccounts(svc, 'BRL', 'sandbox')).length, 0);
    } finally {
      await svc.request('PATCH', '/config', { auth: 'production', body: { webhookEndpoint: '' } });
      await setCurrencies(svc, DEFAULT_CURRENCIES, 'production');
    }
  });

  it('bad PATCH bodies are 400 naming the field, and change nothing', async () => {
    await setCurrencies(svc, DEFAULT_CURRENCIES);
    const before = await read(svc, '/config');
    const accountsBefore = await totalCount(svc, '/platform/internal-accounts');
    const eurBefore = (await platformAccounts(svc, 'EUR')).length;
    const usd = supportedCurrency('USD');
    const one = (over: Record<string, unknown>): Record<string, unknown> => ({ supportedCurrencies: [{ ...usd, ...over }] });
    const without = (field: string): Record<string, unknown> => {
      const item: Record<string, unknown> = { ...usd };
      delete item[field];
      return { supportedCurrencies: [item] };
    };
    const cases: Array<[unknown, string]> = [
      [one({ currencyCode: 'XYZ' }), 'supportedCurrencies.0.currencyCode'],
      [one({ currencyCode: 'usd' }), 'supportedCurrencies.0.currencyCode'],
      [one({ currencyCode: 7 }), 'supportedCurrencies.0.currencyCode'],
      [{ supportedCurrencies: [usd, supportedCurrency('XYZ')] }, 'supportedCurrencies.1.currencyCode'],
      [{ supportedCurrencies: [usd, supportedCurrency('EUR'), usd] }, 'supportedCurrencies.2.currencyCode'],
      [one({ minAmount: 500, maxAmount: 100 }), 'supportedCurrencies.0.minAmount'],
      [one({ minAmount: -1 }), 'supportedCurrencies.0.minAmount'],
      [one({ maxAmount: 1.5 }), 'supportedCurrencies.0.maxAmount'],
      [one({ maxAmount: '100' }), 'supportedCurrencies.0.maxAmount'],
      [one({ maxAmount: 2 ** 53 }), 'supportedCurrencies.0.maxAmount'],
      [without('currencyCode'), 'supportedCurrencies.0.currencyCode'],
      [{ supportedCurrencies: [{ currencyCode: 'EUR', minAmount: 200_000_000_00 }] }, 'supportedCurrencies.0.minAmount'],
      [one({ enabledTransactionTypes: ['REFUND'] }), 'supportedCurrencies.0.enabledTransactionTypes.0'],
      [one({ enabledTransactionTypes: 'OUTGOING' }), 'supportedCurrencies.0.enabledTransactionTypes'],
      [one({ requiredCounterpartyFields: [{ name: 'FULL_NAME' }] }), 'supportedCurrencies.0.requiredCounterpartyFields.0.mandatory'],
      [one({ requiredCounterpartyFields: [{ name: 'FULL_NAME', mandatory: 'yes' }] }), 'supportedCurrencies.0.requiredCounterpartyFields.0.mandatory'],
      [one({ providerRequiredCustomerFields: Array.from({ length: 101 }, () => 'FULL_NAME') }), 'supportedCurrencies.0.providerRequiredCustomerFields'],
      [one({ providerRequiredCounterpartyCustomerFields: [longText(1025)] }), 'supportedCurrencies.0.providerRequiredCounterpartyCustomerFields.0'],
      [{ supportedCurrencies: [] }, 'supportedCurrencies'],
      [{ supportedCurrencies: 'USD' }, 'supportedCurrencies'],
      [{ supportedCurrencies: Array.from({ length: 101 }, () => usd) }, 'supportedCurrencies'],
      [{ webhookEndpoint: 'ftp://example.com/hook' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 'not a url' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 'javascript:alert(1)' }, 'webhookEndpoint'],
      [{ webhookEndpoint: '/relative/hook' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 'https://user:secret@example.com/hook' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 42 }, 'webhookEndpoint'],
      [{ webhookEndpoint: `https://example.com/${longText(2049)}` }, 'webhookEndpoint'],
      [{ webhookEndpoint: ' http://127.0.0.1/hook' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 'https://example.com/hook\n' }, 'webhookEndpoint'],
      // Sandbox reaches loopback but nothing else internal (test/webhook-target-policy.test.ts has every form).
      [{ webhookEndpoint: 'http://10.0.0.1/hook' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 'http://169.254.169.254/latest' }, 'webhookEndpoint'],
      [{ webhookEndpoint: 'http://[::ffff:a9fe:a9fe]/latest' }, 'webhookEndpoint'],
      [{ umaDomain: 'other.example.com', webhookEndpoint: 'http://192.168.0.1/' }, 'webhookEndpoint'],
      [{ umaDomain: 'not a domain' }, 'umaDomain'],
      [{ umaDomain: 'localhost' }, 'umaDomain'],
      [{ umaDomain: longText(1025) }, 'umaDomain'],
      [{ umaDomain: null }, 'umaDomain'],
      [{ proxyUmaSubdomain: longText(1025) }, 'proxyUmaSubdomain'],
      [[], 'body'],
      ['config', 'body'],
    ];
    for (const [body, field] of cases) assertInvalid(await svc.request('PATCH', '/config', { body }), field);
    // A valid change riding along with an invalid one is refused as a whole.
    assertInvalid(
      await svc.request('PATCH', '/config', { body: { webhookEndpoint: 'https://ok.example.com', supportedCurrencies: [usd, supportedCurrency('EUR'), supportedCurrency('ZZZ')] } }),
      'supportedCurrencies.2.currencyCode',
    );
    assert.equal(await read(svc, '/config'), before);
    assert.equal(await totalCount(svc, '/platform/internal-accounts'), accountsBefore);
    assert.equal((await platformAccounts(svc, 'EUR')).length, eurBefore);
  });

  it('embeddedWalletConfig: defaults filled, fields set one PATCH at a time, omitted ones unchanged', async () => {
    const fresh = await startTestService();
    try {
      const defaults = (await fresh.request('GET', '/config')).body.embeddedWalletConfig;
      // The service signer (OTP targets and tokens, exports): one key for the store, read-only.
      const signerPublicKey = Buffer.from(fresh.service.services.walletSigner.publicKey).toString('hex');
      assert.deepEqual(defaults, {
        appName: 'Embedded Wallet',
        otpLength: 6,
        expirationSeconds: 600,
        sendFromEmailAddress: 'no-reply@sandbox.uma.test',
        sendFromEmailSenderName: 'Embedded Wallet',
        sessionLifetimeSeconds: 900,
        oidcIssuers: [],
        webauthn: { rpId: 'sandbox.uma.test', rpName: 'Embedded Wallet', origins: ['https://sandbox.uma.test'] },
        signerPublicKey,
      });
      const first = await fresh.request('PATCH', '/config', {
        body: { embeddedWalletConfig: { appName: 'Acme Pay', otpLength: 8, sendFromEmailAddress: 'login@acme.example', webauthn: { rpId: 'acme.example', origins: ['https://acme.example', 'https://app.acme.example:8443'] } } },
      });
      assertStatus(first, 200);
      const second = await fresh.request('PATCH', '/config', {
        body: {
          embeddedWalletConfig: {
            sessionLifetimeSeconds: 3600,
            expirationSeconds: 300,
            sendFromEmailSenderName: 'Acme Login',
            oidcIssuers: [
              { issuer: 'https://accounts.google.com', jwksUri: 'https://www.googleapis.com/oauth2/v3/certs', audience: 'acme-client' },
              { issuer: 'https://id.acme.example', jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'BBBB', kid: 'k1', d: 'private, dropped' }] } },
            ],
            webauthn: { rpName: 'Acme' },
          },
        },
      });
      assertStatus(second, 200);
      const expected = {
        appName: 'Acme Pay',
        otpLength: 8,
        expirationSeconds: 300,
        sendFromEmailAddress: 'login@acme.example',
        sendFromEmailSenderName: 'Acme Login',
        sessionLifetimeSeconds: 3600,
        oidcIssuers: [
          { issuer: 'https://accounts.google.com', jwksUri: 'https://www.googleapis.com/oauth2/v3/certs', audience: 'acme-client' },
          { issuer: 'https://id.acme.example', jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'BBBB', kid: 'k1' }] } },
        ],
        webauthn: { rpId: 'acme.example', rpName: 'Acme', origins: ['https://acme.example', 'https://app.acme.example:8443'] },
        signerPublicKey,
      };
      assert.deepEqual(second.body.embeddedWalletConfig, expected);
      // Other PATCHes leave it alone; the other environment keeps its defaults; a restart keeps it.
      assertStatus(await fresh.request('PATCH', '/config', { body: { webhookEndpoint: 'https://hooks.example.com/x' } }), 200);
      assert.deepEqual(JSON.parse(await read(fresh, '/config')).embeddedWalletConfig, expected);
      assert.equal(JSON.parse(await read(fresh, '/config', 'production')).embeddedWalletConfig.appName, 'Embedded Wallet');
      // A new oidcIssuers list replaces the old one.
      const replaced = await fresh.request('PATCH', '/config', { body: { embeddedWalletConfig: { oidcIssuers: [] } } });
      assert.deepEqual(replaced.body.embeddedWalletConfig, { ...expected, oidcIssuers: [] });
      await fresh.stop({ keepData: true });
      const reopened = await startTestService({ dataDir: fresh.dataDir });
      try {
        assert.deepEqual(JSON.parse(await read(reopened, '/config')).embeddedWalletConfig, { ...expected, oidcIssuers: [] });
      } finally {
        await reopened.stop();
      }
    } catch (error) {
      await fresh.stop();
      throw error;
    }
  });

  it('bad embeddedWalletConfig values are 400 naming the field, and change nothing', async () => {
    const before = await read(svc, '/config');
    const ew = (over: Record<string, unknown>): Record<string, unknown> => ({ embeddedWalletConfig: over });
    const google = { issuer: 'https://accounts.google.com', jwksUri: 'https://www.googleapis.com/oauth2/v3/certs' };
    const cases: Array<[unknown, string]> = [
      [{ embeddedWalletConfig: 'yes' }, 'embeddedWalletConfig'],
      [ew({ otpLength: 3 }), 'embeddedWalletConfig.otpLength'],
      [ew({ otpLength: 13 }), 'embeddedWalletConfig.otpLength'],
      [ew({ otpLength: 6.5 }), 'embeddedWalletConfig.otpLength'],
      [ew({ otpLength: '6' }), 'embeddedWalletConfig.otpLength'],
      [ew({ sessionLifetimeSeconds: 59 }), 'embeddedWalletConfig.sessionLifetimeSeconds'],
      [ew({ sessionLifetimeSeconds: 86_401 }), 'embeddedWalletConfig.sessionLifetimeSeconds'],
      [ew({ expirationSeconds: 0 }), 'embeddedWalletConfig.expirationSeconds'],
      [ew({ appName: '' }), 'embeddedWalletConfig.appName'],
      [ew({ appName: longText(129) }), 'embeddedWalletConfig.appName'],
      [ew({ sendFromEmailAddress: 'not an address' }), 'embeddedWalletConfig.sendFromEmailAddress'],
      [ew({ sendFromEmailSenderName: 'Acme\r\nBcc: victim@example.com' }), 'embeddedWalletConfig.sendFromEmailSenderName'],
      [ew({ oidcIssuers: [{ issuer: 'https://accounts.google.com' }] }), 'embeddedWalletConfig.oidcIssuers.0.jwksUri'],
      [ew({ oidcIssuers: [{ ...google, jwks: { keys: [{ kty: 'EC' }] } }] }), 'embeddedWalletConfig.oidcIssuers.0.jwksUri'],
      [ew({ oidcIssuers: [google, { ...google }] }), 'embeddedWalletConfig.oidcIssuers.1.issuer'],
      [ew({ oidcIssuers: [{ ...google, issuer: 'accounts.google.com' }] }), 'embeddedWalletConfig.oidcIssuers.0.issuer'],
      [ew({ oidcIssuers: [{ ...google, jwksUri: 'http://keys.example.com/jwks' }] }), 'embeddedWalletConfig.oidcIssuers.0.jwksUri'],
      [ew({ oidcIssuers: [{ issuer: 'https://id.example.com', jwks: { keys: [] } }] }), 'embeddedWalletConfig.oidcIssuers.0.jwks.keys'],
      [ew({ oidcIssuers: [{ issuer: 'https://id.example.com', jwks: { keys: [{ crv: 'P-256' }] } }] }), 'embeddedWalletConfig.oidcIssuers.0.jwks.keys.0.kty'],
      [ew({ oidcIssuers: Array.from({ length: 11 }, (_, i) => ({ ...google, issuer: `https://id${i}.example.com` })) }), 'embeddedWalletConfig.oidcIssuers'],
      [ew({ webauthn: { rpId: 'https://acme.example' } }), 'embeddedWalletConfig.webauthn.rpId'],
      [ew({ webauthn: { rpId: 'acme.example', origins: [] } }), 'embeddedWalletConfig.webauthn.origins'],
      [ew({ webauthn: { rpId: 'acme.example', origins: ['https://evil.example'] } }), 'embeddedWalletConfig.webauthn.origins.0'],
      [ew({ webauthn: { rpId: 'acme.example', origins: ['https://acme.example/login'] } }), 'embeddedWalletConfig.webauthn.origins.0'],
      [ew({ webauthn: { rpId: 'acme.example', origins: ['https://acme.example', 'http://acme.example'] } }), 'embeddedWalletConfig.webauthn.origins.1'],
      // The default origin follows the default rpId: naming another rpId needs its origins.
      [ew({ webauthn: { origins: ['https://acme.example'] } }), 'embeddedWalletConfig.webauthn.origins.0'],
      [ew({ webauthn: { rpName: 7 } }), 'embeddedWalletConfig.webauthn.rpName'],
    ];
    for (const [body, field] of cases) assertInvalid(await svc.request('PATCH', '/config', { body }), field);
    assert.equal(await read(svc, '/config'), before);
  });

  it('a non-JSON PATCH is 415 and unauthenticated reads and writes are 401', async () => {
    const before = await read(svc, '/config');
    assertError(await svc.request('PATCH', '/config', { raw: 'umaDomain=x.example.com', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    assertError(await svc.request('GET', '/config', { auth: 'none' }), 401, 'UNAUTHORIZED');
    assertError(await svc.request('PATCH', '/config', { auth: 'none', body: { umaDomain: 'evil.example.com' } }), 401, 'UNAUTHORIZED');
    assert.equal(await read(svc, '/config'), before);
  });
});
