// Receiver lookup (SERVICE_SPEC parts 3 and 4, CONTRACT.md "Money"): GET /receiver/uma/{address},
// GET /receiver/{address} and GET /receiver/external-account/{id}; the Lookup records they
// leave (valid 5 minutes, for one quote) and decideUseLookup, which quotes call.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../src/engine/clock.js';
import { DomainError } from '../actors/errors.js';
import { exchangeRate } from '../actors/fx.js';
import {
  decideUseLookup,
  LOOKUP_RETENTION_MS,
  LOOKUP_TTL_MS,
  Lookups,
  MAX_LOOKUPS_PER_ENV,
  requiredPayerDataFields,
  type Lookup,
  type LookupCurrency,
} from '../actors/lookup.js';
import { serviceForSuite, startTestService, type TestService } from './support/service.js';
import {
  absentId,
  assertError,
  assertInvalid,
  assertStatus,
  createCustomer,
  envActor,
  heldActors,
  ID_RE,
  ISO_TIME,
  supportedCurrency,
  unique,
  usdAccount,
} from './support/assertions.js';

const SANDBOX_DOMAIN = 'sandbox.uma.test';
const path = (address: string): string => `/receiver/uma/${encodeURIComponent(address)}`;

function expectDomainError(fn: () => unknown, code: string, fields: readonly string[]): DomainError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof DomainError, String(err));
    assert.equal(err.code, code, err.message);
    assert.deepEqual(
      (err.fields ?? []).map((f) => f.field),
      fields,
      err.message,
    );
    return err;
  }
  assert.fail(`expected ${code}`);
}

// --- decideUseLookup --------------------------------------------------------------------------

describe('decideUseLookup', () => {
  const T0 = Date.UTC(2026, 0, 1);
  const usd: LookupCurrency = {
    currency: 'USD',
    min: 1,
    max: 1_000_000,
    estimatedExchangeRate: 1,
    requiredPayerDataFields: [
      { name: 'FULL_NAME', mandatory: true },
      { name: 'BIRTH_DATE', mandatory: true },
      { name: 'NATIONALITY', mandatory: false },
    ],
  };
  const usdc: LookupCurrency = { currency: 'USDC', min: 1, max: 1_000_000, requiredPayerDataFields: [{ name: 'NATIONALITY', mandatory: true }] };
  const lookup: Lookup = {
    id: 'Lookup:0190d0a0-0000-7000-8000-000000000001',
    envId: 'Platform:x#sandbox',
    receiver: { kind: 'CUSTOMER', umaAddress: '$ada@sandbox.uma.test', customerId: 'Customer:0190d0a0-0000-7000-8000-000000000002' },
    sendingCurrency: 'USD',
    supportedCurrencies: [usd, usdc],
    createdAt: T0,
    expiresAt: T0 + LOOKUP_TTL_MS,
  };
  const input = {
    lookupId: lookup.id,
    umaAddress: '$Ada@Sandbox.UMA.test',
    senderCustomerInfo: { FULL_NAME: 'Grace Hopper', BIRTH_DATE: '1906-12-09' },
    quoteId: 'Quote:0190d0a0-0000-7000-8000-000000000003',
  };

  it('returns the receiver, the default currency and the event that marks the lookup used', () => {
    const used = decideUseLookup(lookup, input, T0 + LOOKUP_TTL_MS - 1);
    assert.deepEqual(used.receiver, lookup.receiver);
    assert.equal(used.currency, usd);
    assert.deepEqual(used.event, { type: 'lookup.used', lookupId: lookup.id, quoteId: input.quoteId });
    const named = decideUseLookup(lookup, { ...input, currency: 'USDC', senderCustomerInfo: { NATIONALITY: 'US' } }, T0);
    assert.equal(named.currency, usdc);
  });

  it('unknown lookup: 400 naming lookupId', () => {
    const err = expectDomainError(() => decideUseLookup(undefined, input, T0), 'INVALID_INPUT', ['lookupId']);
    assert.match(err.message, /unknown lookup/);
  });

  it('expired from 5 minutes on: LOOKUP_EXPIRED naming lookupId', () => {
    expectDomainError(() => decideUseLookup(lookup, input, T0 + LOOKUP_TTL_MS), 'LOOKUP_EXPIRED', ['lookupId']);
  });

  it('a lookup serves one quote: LOOKUP_ALREADY_USED names the quote that used it', () => {
    const err = expectDomainError(() => decideUseLookup({ ...lookup, usedByQuote: input.quoteId }, input, T0), 'LOOKUP_ALREADY_USED', ['lookupId']);
    assert.match(err.message, new RegExp(input.quoteId));
  });

  it('another address, or an external-account lookup, is refused naming destination.umaAddress', () => {
    expectDomainError(() => decideUseLookup(lookup, { ...input, umaAddress: '$bob@sandbox.uma.test' }, T0), 'INVALID_INPUT', ['destination.umaAddress']);
    const accountLookup: Lookup = { ...lookup, receiver: { kind: 'EXTERNAL_ACCOUNT', accountId: 'ExternalAccount:0190d0a0-0000-7000-8000-000000000004', customerId: null } };
    expectDomainError(() => decideUseLookup(accountLookup, input, T0), 'INVALID_INPUT', ['destination.umaAddress']);
  });

  it('a currency the receiver does not take is refused naming destination.currency', () => {
    const err = expectDomainError(() => decideUseLookup(lookup, { ...input, currency: 'EUR' }, T0), 'INVALID_INPUT', ['destination.currency']);
    assert.match(err.message, /USD, USDC/);
  });

  it('missing mandatory payer data: MISSING_MANDATORY_PAYEE_DATA naming each field; blank counts as missing, optional ones are not asked', () => {
    const err = expectDomainError(
      () => decideUseLookup(lookup, { ...input, senderCustomerInfo: { BIRTH_DATE: '  ' } }, T0),
      'MISSING_MANDATORY_PAYEE_DATA',
      ['senderCustomerInfo.FULL_NAME', 'senderCustomerInfo.BIRTH_DATE'],
    );
    assert.match(err.message, /FULL_NAME, BIRTH_DATE/);
    const { senderCustomerInfo: _omitted, ...withoutInfo } = input;
    expectDomainError(() => decideUseLookup(lookup, withoutInfo, T0), 'MISSING_MANDATORY_PAYEE_DATA', [
      'senderCustomerInfo.FULL_NAME',
      'senderCustomerInfo.BIRTH_DATE',
    ]);
    // Only the chosen currency's fields count: USDC asks for NATIONALITY alone.
    expectDomainError(() => decideUseLookup(lookup, { ...input, currency: 'USDC' }, T0), 'MISSING_MANDATORY_PAYEE_DATA', ['senderCustomerInfo.NATIONALITY']);
  });

  it('the published payer data is the union over currencies, mandatory when any currency makes it so', () => {
    assert.deepEqual(requiredPayerDataFields(lookup), [
      { name: 'FULL_NAME', mandatory: true },
      { name: 'BIRTH_DATE', mandatory: true },
      { name: 'NATIONALITY', mandatory: true },
    ]);
  });

  it('Lookups: used once, pruned after expiry plus retention by the next lookup created, counted per environment', () => {
    const kind = new Lookups();
    kind.appliers['lookup.created']({ type: 'lookup.created', lookup }, T0);
    kind.appliers['lookup.used']({ type: 'lookup.used', lookupId: lookup.id, quoteId: input.quoteId }, T0 + 1);
    assert.equal(kind.inEnv(lookup.envId, lookup.id)?.usedByQuote, input.quoteId);
    assert.equal(kind.inEnv('Platform:x#production', lookup.id), undefined);
    const prunedAt = lookup.expiresAt + LOOKUP_RETENTION_MS;
    assert.equal(kind.heldAfterPrune(lookup.envId, prunedAt - 1), 1);
    assert.equal(kind.heldAfterPrune(lookup.envId, prunedAt), 0);
    assert.equal(kind.oldestPrunedAt(lookup.envId), prunedAt);
    const later: Lookup = { ...lookup, id: 'Lookup:0190d0a0-0000-7000-8000-000000000005', createdAt: prunedAt - 1, expiresAt: prunedAt - 1 + LOOKUP_TTL_MS };
    kind.appliers['lookup.created']({ type: 'lookup.created', lookup: later }, prunedAt - 1);
    assert.ok(kind.inEnv(lookup.envId, lookup.id), 'kept until its retention ends');
    const last: Lookup = { ...later, id: 'Lookup:0190d0a0-0000-7000-8000-000000000006', createdAt: prunedAt, expiresAt: prunedAt + LOOKUP_TTL_MS };
    kind.appliers['lookup.created']({ type: 'lookup.created', lookup: last }, prunedAt);
    assert.equal(kind.inEnv(lookup.envId, lookup.id), undefined);
    assert.equal(kind.heldAfterPrune(lookup.envId, prunedAt), 2);
    assert.deepEqual(kind.checkInvariants(), []);
  });

  it("Lookups: another environment's lookup prunes none of them (they are their environment actor's records)", () => {
    const kind = new Lookups();
    kind.appliers['lookup.created']({ type: 'lookup.created', lookup }, T0);
    const prunedAt = lookup.expiresAt + LOOKUP_RETENTION_MS;
    const elsewhere: Lookup = { ...lookup, id: 'Lookup:0190d0a0-0000-7000-8000-000000000007', envId: 'Platform:x#production', createdAt: prunedAt, expiresAt: prunedAt + LOOKUP_TTL_MS };
    kind.appliers['lookup.created']({ type: 'lookup.created', lookup: elsewhere }, prunedAt);
    assert.ok(kind.inEnv(lookup.envId, lookup.id), 'kept until its own environment makes a lookup');
    assert.equal(kind.heldAfterPrune(lookup.envId, prunedAt), 0);
    assert.equal(kind.heldAfterPrune(elsewhere.envId, prunedAt), 1);
    assert.deepEqual(kind.checkInvariants(), []);
  });
});

// --- HTTP -------------------------------------------------------------------------------------

function lookupIn(svc: TestService, id: string): Lookup | undefined {
  return svc.service.services.world.lookups.inEnv(envActor(svc), id);
}

describe('receiver lookup', () => {
  const clock = new ManualClock();
  const svc = serviceForSuite({ clock });

  const lookupOf = (id: string): Lookup | undefined => lookupIn(svc, id);

  it('finds a customer of the same environment, case-insensitively, on both paths', async () => {
    const address = `$${unique('ada.')}@${SANDBOX_DOMAIN}`;
    const c = await createCustomer(svc, { umaAddress: address });
    for (const route of ['/receiver/uma/', '/receiver/']) {
      const res = await svc.request('GET', `${route}${encodeURIComponent(address.toUpperCase())}`);
      assertStatus(res, 200);
      const body = res.body;
      assert.match(body.lookupId, ID_RE('Lookup'));
      assert.equal(body.receiverUmaAddress, address.toLowerCase());
      assert.equal(body.accountId, undefined);
      assert.deepEqual(body.supportedCurrencies.map((s: any) => s.currency.code), c.currencies);
      const usd = body.supportedCurrencies[0];
      assert.deepEqual(usd.currency, { code: 'USD', name: usd.currency.name, symbol: '$', decimals: 2 });
      assert.equal(usd.estimatedExchangeRate, 1);
      assert.equal(usd.min, 1);
      assert.equal(usd.max, 100_000_000);
      assert.deepEqual(body.requiredPayerDataFields, []);
      assert.match(body.expiresAt, ISO_TIME);
      assert.equal(Date.parse(body.expiresAt), clock.now() + LOOKUP_TTL_MS);
      const stored = lookupOf(body.lookupId);
      assert.deepEqual(stored?.receiver, { kind: 'CUSTOMER', umaAddress: address.toLowerCase(), customerId: c.id });
    }
  });

  it("another environment's customer, a deleted customer and an unknown address are 404", async () => {
    const address = `$${unique('prod.')}@${SANDBOX_DOMAIN}`;
    await createCustomer(svc, { umaAddress: address }, 'production');
    assertError(await svc.request('GET', path(address)), 404, 'NOT_FOUND');
    assertStatus(await svc.request('GET', path(address), { auth: 'production' }), 200);
    const deleted = await createCustomer(svc, { umaAddress: `$${unique('gone.')}@${SANDBOX_DOMAIN}` });
    assertStatus(await svc.request('DELETE', `/customers/${deleted.id}`), 200);
    assertError(await svc.request('GET', path(deleted.umaAddress)), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', path(`$nobody.${unique('x')}@elsewhere.example`)), 404, 'NOT_FOUND');
  });

  it('the sandbox test addresses answer with their currency; a non-existent one is 404', async () => {
    const cases: Array<[string, string, string]> = [
      ['$success.usd', 'USD', 'SUCCESS'],
      ['$success.eur', 'EUR', 'SUCCESS'],
      ['$success.mxn', 'MXN', 'SUCCESS'],
      ['$pending.long.usd', 'USD', 'PENDING_LONG'],
      ['$fail.compliance.usd', 'USD', 'FAIL_COMPLIANCE'],
    ];
    for (const [local, currency, behaviour] of cases) {
      const address = `${local}@${SANDBOX_DOMAIN}`;
      const res = await svc.request('GET', path(address));
      assertStatus(res, 200);
      assert.equal(res.body.receiverUmaAddress, address);
      assert.deepEqual(res.body.supportedCurrencies.map((s: any) => s.currency.code), [currency]);
      // The platform supports USD only: the estimate converts from USD.
      assert.equal(res.body.supportedCurrencies[0].estimatedExchangeRate, exchangeRate('USD', currency));
      assert.deepEqual(lookupOf(res.body.lookupId)?.receiver, { kind: 'SANDBOX_TEST_ADDRESS', umaAddress: address, behaviour });
    }
    const missing = await svc.request('GET', path(`$non.existent.usd@${SANDBOX_DOMAIN}`));
    assertError(missing, 404, 'NOT_FOUND');
    assert.match(missing.body.message, /\$non\.existent\.usd@sandbox\.uma\.test/);
    // A test address exists at the sandbox UMA domain only.
    assertError(await svc.request('GET', path('$success.usd@other.example')), 404, 'NOT_FOUND');
  });

  it('a production token does not reach the sandbox test addresses: 404', async () => {
    for (const local of ['$success.usd', '$success.eur', '$pending.long.usd']) {
      assertError(await svc.request('GET', path(`${local}@${SANDBOX_DOMAIN}`), { auth: 'production' }), 404, 'NOT_FOUND');
    }
  });

  it("required payer data comes from the configuration's requiredCounterpartyFields for the receiving currency", async () => {
    const fields = [
      { name: 'FULL_NAME', mandatory: true },
      { name: 'NATIONALITY', mandatory: false },
    ];
    const patch = await svc.request('PATCH', '/config', {
      body: { supportedCurrencies: [supportedCurrency('USD', { requiredCounterpartyFields: fields, minAmount: 100, maxAmount: 5_000 }), supportedCurrency('USDC'), supportedCurrency('USDB')] },
    });
    assertStatus(patch, 200);
    try {
      const res = await svc.request('GET', path(`$success.usd@${SANDBOX_DOMAIN}`));
      assertStatus(res, 200);
      assert.deepEqual(res.body.requiredPayerDataFields, fields);
      assert.equal(res.body.supportedCurrencies[0].min, 100);
      assert.equal(res.body.supportedCurrencies[0].max, 5_000);
      const eur = await svc.request('GET', path(`$success.eur@${SANDBOX_DOMAIN}`));
      assert.deepEqual(eur.body.requiredPayerDataFields, []);
    } finally {
      await svc.request('PATCH', '/config', { body: { supportedCurrencies: ['USD', 'USDC', 'USDB'].map((c) => supportedCurrency(c)) } });
    }
  });

  it('looks up an external account of this environment; 404 from the other environment or for an unknown id', async () => {
    const c = await createCustomer(svc);
    const created = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('123456789', { customerId: c.id }) });
    assertStatus(created, 201);
    const res = await svc.request('GET', `/receiver/external-account/${created.body.id}`);
    assertStatus(res, 200);
    assert.equal(res.body.accountId, created.body.id);
    assert.equal(res.body.receiverUmaAddress, undefined);
    assert.deepEqual(res.body.supportedCurrencies.map((s: any) => s.currency.code), ['USD']);
    assert.deepEqual(lookupOf(res.body.lookupId)?.receiver, { kind: 'EXTERNAL_ACCOUNT', accountId: created.body.id, customerId: c.id });
    assertError(await svc.request('GET', `/receiver/external-account/${created.body.id}`, { auth: 'production' }), 404, 'NOT_FOUND');
    assertError(await svc.request('GET', `/receiver/external-account/${absentId('ExternalAccount')}`), 404, 'NOT_FOUND');
    assertInvalid(await svc.request('GET', '/receiver/external-account/ExternalAccount:123'), 'accountId');
  });

  it('malformed addresses and query values are 400 naming the field; nothing is recorded', async () => {
    const held = svc.service.services.world.lookups.heldAfterPrune(envActor(svc), clock.now());
    for (const bad of ['alice', 'alice@sandbox.uma.test', '$@sandbox.uma.test', '$alice@', '$alice@nodot', `$${'a'.repeat(70)}@sandbox.uma.test`]) {
      assertInvalid(await svc.request('GET', path(bad)), 'receiverUmaAddress');
      assertInvalid(await svc.request('GET', `/receiver/${encodeURIComponent(bad)}`), 'receiverUmaAddress');
    }
    const ok = path(`$success.usd@${SANDBOX_DOMAIN}`);
    assertInvalid(await svc.request('GET', `${ok}?customerId=Customer:1`), 'customerId');
    assertInvalid(await svc.request('GET', `${ok}?senderUmaAddress=bob`), 'senderUmaAddress');
    assertError(await svc.request('GET', `${ok}?customerId=${absentId('Customer')}`), 404, 'NOT_FOUND');
    assert.equal(svc.service.services.world.lookups.heldAfterPrune(envActor(svc), clock.now()), held);
  });

  it("records the sender: the estimate converts from the sending customer's default currency", async () => {
    const sender = await createCustomer(svc);
    const senderUmaAddress = `$${unique('payer.')}@${SANDBOX_DOMAIN}`;
    const res = await svc.request('GET', `${path(`$success.eur@${SANDBOX_DOMAIN}`)}?customerId=${sender.id}&senderUmaAddress=${encodeURIComponent(senderUmaAddress)}`);
    assertStatus(res, 200);
    const stored = lookupOf(res.body.lookupId)!;
    assert.equal(stored.senderCustomerId, sender.id);
    assert.equal(stored.senderUmaAddress, senderUmaAddress);
    assert.equal(stored.sendingCurrency, sender.currencies[0]);
    assert.equal(res.body.supportedCurrencies[0].estimatedExchangeRate, exchangeRate(sender.currencies[0], 'EUR'));
  });

  it("a lookup holds the environment, the sending customer and the receiver's owner: the customer at the address, or the external account's", async () => {
    const sender = await createCustomer(svc);
    const receiver = await createCustomer(svc, { umaAddress: `$${unique('payee.')}@${SANDBOX_DOMAIN}` });
    const account = await svc.request('POST', '/customers/external-accounts', { body: usdAccount('123456789', { customerId: receiver.id }) });
    assertStatus(account, 201);
    const calls = await heldActors(svc, async () => {
      assertStatus(await svc.request('GET', `${path(receiver.umaAddress)}?customerId=${sender.id}`), 200);
      assertStatus(await svc.request('GET', `/receiver/external-account/${account.body.id}?customerId=${sender.id}`), 200);
      assertStatus(await svc.request('GET', path(`$success.usd@${SANDBOX_DOMAIN}`)), 200);
    });
    const both = [envActor(svc), sender.id, receiver.id].sort();
    assert.deepEqual(calls.map((actors) => [...actors].sort()), [both, both, [envActor(svc)]]);
  });

  it('each GET is a new lookup, valid for one quote within 5 minutes of ManualClock', async () => {
    const address = `$success.usd@${SANDBOX_DOMAIN}`;
    const first = await svc.request('GET', path(address));
    const second = await svc.request('GET', path(address));
    assert.notEqual(first.body.lookupId, second.body.lookupId);
    const use = (at: number) =>
      decideUseLookup(lookupOf(first.body.lookupId), { lookupId: first.body.lookupId, umaAddress: address, quoteId: 'Quote:0190d0a0-0000-7000-8000-000000000009' }, at);
    clock.advance(LOOKUP_TTL_MS - 1);
    assert.equal(use(clock.now()).currency.currency, 'USD');
    clock.advance(1);
    expectDomainError(() => use(clock.now()), 'LOOKUP_EXPIRED', ['lookupId']);
    // Kept through its retention, then pruned when the next lookup is made.
    clock.advance(LOOKUP_RETENTION_MS);
    assertStatus(await svc.request('GET', path(address)), 200);
    assert.equal(lookupOf(first.body.lookupId), undefined);
    expectDomainError(() => use(clock.now()), 'INVALID_INPUT', ['lookupId']);
  });
});

describe('receiver lookup limit', () => {
  it(`an environment holding MAX_LOOKUPS_PER_ENV lookups answers 429 with Retry-After until the oldest is pruned`, async () => {
    const clock = new ManualClock();
    const svc = await startTestService({ clock });
    try {
      const lookups = svc.service.services.world.lookups;
      const address = path(`$success.usd@${SANDBOX_DOMAIN}`);
      const first = await svc.request('GET', address);
      assertStatus(first, 200);
      const template = lookupIn(svc, first.body.lookupId)!;
      // Fill the environment as many lookups would, without making them one request at a time.
      for (let i = lookups.heldAfterPrune(envActor(svc), clock.now()); i < MAX_LOOKUPS_PER_ENV; i++) {
        lookups.restore({ ...template, id: `Lookup:0190d0a0-0000-7000-8000-${i.toString(16).padStart(12, '0')}` });
      }
      const refused = await svc.request('GET', address);
      assertError(refused, 429, 'RATE_LIMITED');
      assert.equal(refused.headers.get('retry-after'), String((LOOKUP_TTL_MS + LOOKUP_RETENTION_MS) / 1000));
      assertError(await svc.request('GET', address, { auth: 'production' }), 404, 'NOT_FOUND');
      clock.advance(LOOKUP_TTL_MS + LOOKUP_RETENTION_MS);
      assertStatus(await svc.request('GET', address), 200);
      assert.equal(lookups.heldAfterPrune(envActor(svc), clock.now()), 1);
    } finally {
      await svc.stop();
    }
  });
});

describe('receiver lookup durability', () => {
  it('a lookup survives a restart, from the log and from a snapshot', async () => {
    for (const snapshotEveryEntries of [undefined, 1]) {
      const clock = new ManualClock();
      const options = { clock, ...(snapshotEveryEntries !== undefined ? { snapshotEveryEntries } : {}) };
      const first = await startTestService(options);
      const res = await first.request('GET', path(`$pending.long.usd@${SANDBOX_DOMAIN}`));
      assertStatus(res, 200);
      const before = first.service.services.world.lookups.inEnv(envActor(first), res.body.lookupId);
      assert.ok(before);
      await first.stop({ keepData: true });
      const second = await startTestService({ ...options, dataDir: first.dataDir });
      try {
        assert.deepEqual(second.service.services.world.lookups.inEnv(envActor(second), res.body.lookupId), before);
        assert.deepEqual(second.service.services.world.checkInvariants(), []);
      } finally {
        await second.stop();
      }
    }
  });
});
