// The compact customer (issue 10): POST /customers logs only the decided facts
// (`customer.opened`), its provisioned accounts are derived from the customer until money
// first moves through them, and every read, list and filter shows them as stored ones.
// Older logs (`customer.created` with full records) still apply.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { open } from 'lmdb';
import { uuidv7, newId } from '../src/engine/ids.js';
import { decodeGroup } from '../src/engine/log.js';
import { encodeStored } from '../src/engine/format.js';
import { decideCreateCustomer, openedCustomerId, type Customer, type CustomerInput } from '../actors/customer.js';
import { provisionAccounts } from '../actors/internal-account.js';
import { newPlatformEnv } from '../actors/platform.js';
import { World } from '../actors/world.js';
import { serviceForSuite, startTestService } from './support/service.js';
import { assertStatus, createCustomer, customerAccounts, read, setCurrencies, walk } from './support/assertions.js';

const FULL_PROFILE: Omit<CustomerInput, 'customerType'> = {
  platformCustomerId: 'crm-000184467',
  email: 'ada.lovelace@example.com',
  fullName: 'Ada Lovelace',
  birthDate: '1990-12-10',
  nationality: 'US',
  address: { line1: '1600 Pennsylvania Avenue NW', line2: 'Suite 100', city: 'Washington', state: 'DC', postalCode: '20500', country: 'US' },
};

function worldWithEnv(at: number): { world: World; envId: string } {
  const world = new World();
  const env = newPlatformEnv(
    {
      platformId: newId('Platform', at),
      environment: 'sandbox',
      token: { tokenId: `tok_${uuidv7(at)}`, secretHash: '0'.repeat(64) },
      umaDomain: 'sandbox.uma.test',
      isRegulatedFinancialInstitution: false,
      webhookPublicKey: `04${'0'.repeat(128)}`,
      webhookPrivateKeySealed: new Uint8Array(61),
    },
    at,
  );
  world.apply({ type: 'platform.env.created', env }, at);
  return { world, envId: env.id };
}

/** The bytes a log entry of these events takes in the store (format header included). */
function entryBytes(world: World, envId: string, input: CustomerInput, at: number): number {
  const events = decideCreateCustomer(world.envs.get(envId)!, input, world.customers, at);
  return encodeStored({ seq: 1_234_567, at, events }).length;
}

function listed(world: World, envId: string, order: 'asc' | 'desc'): string[] {
  const ids: string[] = [];
  world.internalAccounts.idsIn(envId).walk(order, (id) => ids.push(id));
  return ids;
}

describe('compact customer create', () => {
  it('a POST /customers log entry is under 400 bytes: typical, every profile field, and as POST /users maps it', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const { world, envId } = worldWithEnv(at);
    const typical = entryBytes(world, envId, { customerType: 'INDIVIDUAL' }, at);
    const full = entryBytes(world, envId, { customerType: 'INDIVIDUAL', ...FULL_PROFILE, umaAddress: '$ada.lovelace@sandbox.uma.test' }, at);
    // POST /users: platformUserId becomes platformCustomerId, userType customerType.
    const user = entryBytes(world, envId, { customerType: 'INDIVIDUAL', platformCustomerId: 'user-8841', region: 'US', currencies: ['USD', 'USDC'] }, at);
    assert.ok(typical < 400, `typical create: ${typical} bytes`);
    assert.ok(full < 400, `create with every profile field: ${full} bytes`);
    assert.ok(user < 400, `POST /users: ${user} bytes`);
  });

  it('the entry the service stores for POST /customers and POST /users is under 400 bytes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'compact-entry-'));
    const svc = await startTestService({ dataDir });
    let opened: number[];
    try {
      await createCustomer(svc);
      await createCustomer(svc, FULL_PROFILE);
      const user = await svc.request('POST', '/users', { body: { userType: 'INDIVIDUAL', platformUserId: 'user-8841' } });
      assertStatus(user, 201);
    } finally {
      await svc.stop({ keepData: true });
    }
    const root = open({ path: dataDir });
    try {
      const log = root.openDB<Buffer, number>({ name: 'log', encoding: 'binary' });
      opened = [];
      for (const { key, value } of log.getRange()) {
        // Each request was answered before the next was sent: every group holds one entry.
        const group = decodeGroup<{ type: string }>(key, value);
        if (group.length === 1 && group[0]!.events.some((e) => e.type === 'customer.opened')) opened.push(value.length);
      }
    } finally {
      await root.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
    assert.equal(opened.length, 3);
    for (const bytes of opened) assert.ok(bytes < 400, `stored entries: ${opened.join(', ')} bytes`);
  });

  it('an entry in the old shape (customer.created with full records) still applies and reads as before', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const { world, envId } = worldWithEnv(at);
    const id = newId('Customer', at);
    const customer: Customer = {
      id,
      envId,
      platformCustomerId: 'legacy-1',
      customerType: 'INDIVIDUAL',
      umaAddress: '$legacy@sandbox.uma.test',
      region: 'US',
      currencies: ['USD', 'USDC', 'USDB'],
      kycStatus: 'APPROVED',
      isDeleted: false,
      createdAt: at,
      updatedAt: at,
    };
    const accounts = provisionAccounts(envId, id, customer.currencies, at);
    world.apply({ type: 'customer.created', customer, accounts }, at);
    // A newer customer, compact, in the same environment: listings merge both kinds.
    const [opened] = decideCreateCustomer(world.envs.get(envId)!, { customerType: 'INDIVIDUAL' }, world.customers, at + 1);
    world.apply(opened!, at + 1);

    assert.deepEqual(world.customers.get(id), customer);
    assert.equal(world.customers.umaOwner(envId, '$legacy@sandbox.uma.test'), id);
    assert.deepEqual(world.customers.idsIn(envId), [id, openedCustomerId(opened!)]);
    assert.deepEqual(world.internalAccounts.idsOwnedBy(id), accounts.map((a) => a.id));
    for (const a of accounts) assert.deepEqual(world.internalAccounts.inEnv(envId, a.id), a);
    const newer = world.internalAccounts.idsOwnedBy(openedCustomerId(opened!));
    assert.equal(newer.length, 3);
    assert.deepEqual(listed(world, envId, 'asc'), [...accounts.map((a) => a.id), ...newer]);
    assert.deepEqual(listed(world, envId, 'desc'), [...accounts.map((a) => a.id), ...newer].reverse());
    assert.deepEqual(world.checkInvariants(), []);
  });

  it('a generated UMA address that had to step past a taken one is logged, and applies as decided', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const { world, envId } = worldWithEnv(at);
    // The first generated candidate is taken, so the decision picks `.1`.
    const taken = { umaOwner: (_env: string, address: string) => (address.includes('.1@') ? undefined : 'Customer:someone-else') };
    const [opened] = decideCreateCustomer(world.envs.get(envId)!, { customerType: 'INDIVIDUAL' }, taken, at);
    assert.match(opened!.a ?? '', /^\$user\.[0-9a-f]{12}\.1@sandbox\.uma\.test$/);
    world.apply(opened!, at);
    const id = openedCustomerId(opened!);
    assert.equal(world.customers.get(id)!.umaAddress, opened!.a);
    assert.equal(world.customers.umaOwner(envId, opened!.a!), id);
  });

  it('two customers opened with one UMA address break the invariant recovery checks', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const { world, envId } = worldWithEnv(at);
    const free = { umaOwner: () => undefined };
    const env = world.envs.get(envId)!;
    const [first] = decideCreateCustomer(env, { customerType: 'INDIVIDUAL', umaAddress: '$ada@sandbox.uma.test' }, free, at);
    world.apply(first!, at);
    assert.deepEqual(world.checkInvariants(), []);
    // A log written by a decision that did not check the index (as no decision here does).
    const [second] = decideCreateCustomer(env, { customerType: 'INDIVIDUAL', umaAddress: '$ADA@sandbox.uma.test' }, free, at + 1);
    world.apply(second!, at + 1);
    assert.deepEqual(world.checkInvariants(), ['the UMA address index holds 1 addresses for 2 customers']);
  });

  it('derived accounts look like provisioned ones: zero balance, the customer\'s time, ids right after the customer\'s', () => {
    const at = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const { world, envId } = worldWithEnv(at);
    const [opened] = decideCreateCustomer(world.envs.get(envId)!, { customerType: 'INDIVIDUAL' }, world.customers, at);
    world.apply(opened!, at);
    const ids = world.internalAccounts.idsOwnedBy(openedCustomerId(opened!));
    const accounts = ids.map((accountId) => world.internalAccounts.get(accountId)!);
    assert.deepEqual(
      accounts.map((a) => [a.currency, a.type, a.balance, a.inflow, a.outflow, a.customerId, a.envId, a.createdAt, a.updatedAt]),
      [
        ['USD', 'INTERNAL_FIAT', 0, 0, 0, openedCustomerId(opened!), envId, at, at],
        ['USDC', 'INTERNAL_CRYPTO', 0, 0, 0, openedCustomerId(opened!), envId, at, at],
        ['USDB', 'EMBEDDED_WALLET', 0, 0, 0, openedCustomerId(opened!), envId, at, at],
      ],
    );
    assert.match(accounts[0]!.fundingReference ?? '', /^UMA[A-Z2-9]{26}$/);
    assert.deepEqual([...ids].sort(), ids);
    assert.ok(ids[0]!.slice('InternalAccount:'.length) > openedCustomerId(opened!).slice('Customer:'.length));
    // Nothing is stored for them until money moves.
    assert.equal(world.internalAccounts.records.size, 0);
    assert.equal(world.has(ids[2]!), true);
    assert.equal(world.internalAccounts.get(`${ids[2]!.slice(0, -2)}04`), undefined, 'no fourth provisioned account');
  });
});

describe('derived accounts through the API', () => {
  const svc = serviceForSuite();
  before(async () => {
    await setCurrencies(svc, ['USD', 'USDC', 'USDB']);
  });

  it('a funded and an unfunded account, a PATCH-added one: reads, lists, filters and cursors see them all alike', async () => {
    const first = await createCustomer(svc, { currencies: ['USD'] });
    const second = await createCustomer(svc);
    const [usd] = await customerAccounts(svc, first.id);
    const fund = await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 2_500 } });
    assertStatus(fund, 200);
    assert.equal(fund.body.balance.amount, 2_500);
    const patched = await svc.request('PATCH', `/customers/${first.id}`, { body: { customerType: 'INDIVIDUAL', currencies: ['USD', 'USDC'] } });
    assertStatus(patched, 200);

    const firstAccounts = await customerAccounts(svc, first.id);
    assert.deepEqual(
      firstAccounts.map((a) => [a.balance.currency.code, a.balance.amount]),
      [
        ['USDC', 0],
        ['USD', 2_500],
      ],
    );
    const secondAccounts = await customerAccounts(svc, second.id);
    assert.deepEqual(
      secondAccounts.map((a) => a.type),
      ['EMBEDDED_WALLET', 'INTERNAL_CRYPTO', 'INTERNAL_FIAT'],
    );
    const unfunded = secondAccounts[2];
    assert.equal(unfunded.createdAt, second.createdAt);
    assert.equal(unfunded.updatedAt, second.createdAt);
    assert.equal(unfunded.fundingPaymentInstructions[0].accountOrWalletInfo.reference.length, 29);
    assert.equal(await read(svc, `/internal-accounts/${unfunded.id}`), JSON.stringify(unfunded));

    // The whole listing, newest first, page by page: every account once, in id order.
    const all = await walk(svc, '/internal-accounts', 2);
    const ids = all.items.map((a) => a.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.deepEqual([...ids].sort().reverse(), ids);
    for (const a of [...firstAccounts, ...secondAccounts]) assert.ok(ids.includes(a.id), `${a.id} is listed`);
    assert.ok(all.totalCounts.every((n) => n === ids.length));

    const customersOnly = await walk(svc, '/customers/internal-accounts?type=INTERNAL_FIAT', 1);
    assert.ok(customersOnly.items.every((a) => a.type === 'INTERNAL_FIAT' && a.customerId !== ''));
    assert.ok(customersOnly.items.some((a) => a.id === unfunded.id));
    assert.ok(customersOnly.items.some((a) => a.id === usd.id));
    const platform = await walk(svc, '/platform/internal-accounts', 1);
    assert.ok(platform.items.length > 0 && platform.items.every((a) => a.customerId === ''));
  });

  it('a derived EMBEDDED_WALLET account takes credentials', async () => {
    const c = await createCustomer(svc);
    const wallet = (await customerAccounts(svc, c.id)).find((a) => a.type === 'EMBEDDED_WALLET');
    const res = await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: wallet.id, email: 'wallet@example.com' } });
    assertStatus(res, 201);
  });
});

describe('derived accounts across a restart', () => {
  it('survive a snapshot and the log replayed after it unchanged', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'compact-restart-'));
    try {
      let svc = await startTestService({ dataDir });
      let paths: string[];
      let seen: string[];
      try {
        const before = await createCustomer(svc, { currencies: ['USD', 'USDB'] });
        const accounts = await customerAccounts(svc, before.id);
        const usd = accounts.find((a) => a.type === 'INTERNAL_FIAT');
        const wallet = accounts.find((a) => a.type === 'EMBEDDED_WALLET');
        assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${usd.id}/fund`, { body: { amount: 700 } }), 200);
        // A wallet credential on a derived account: recovery checks that its account exists.
        assertStatus(await svc.request('POST', '/auth/credentials', { body: { type: 'EMAIL_OTP', accountId: wallet.id, email: 'w@example.com' } }), 201);
        await svc.service.services.engine.snapshot();
        const afterSnapshot = await createCustomer(svc);
        const usd2 = (await customerAccounts(svc, afterSnapshot.id)).find((a) => a.type === 'INTERNAL_FIAT');
        assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${usd2.id}/fund`, { body: { amount: 300 } }), 200);
        paths = [
          '/internal-accounts?limit=100',
          `/customers/internal-accounts?customerId=${afterSnapshot.id}`,
          `/customers/${before.id}`,
          `/internal-accounts/${usd.id}`,
          `/internal-accounts/${wallet.id}`,
          `/auth/credentials?accountId=${wallet.id}`,
          '/customers?limit=100',
        ];
        seen = await Promise.all(paths.map((p) => read(svc, p)));
      } finally {
        await svc.stop({ keepData: true });
      }

      svc = await startTestService({ dataDir });
      try {
        assert.match(svc.reportLines.join('\n'), /snapshot at [1-9]/);
        assert.deepEqual(await Promise.all(paths.map((p) => read(svc, p))), seen);
      } finally {
        await svc.stop({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('a log holding customer.created in the old shape replays, and reads and lists as before', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'compact-old-log-'));
    try {
      let svc = await startTestService({ dataDir });
      let paths: string[];
      let seen: string[];
      try {
        const env = svc.service.services.world.envs.token(svc.credentials.sandbox.tokenId)!;
        const at = svc.service.services.engine.clock.now();
        const id = newId('Customer', at);
        const customer: Customer = {
          id,
          envId: env.envId,
          platformCustomerId: 'legacy-2',
          customerType: 'INDIVIDUAL',
          umaAddress: '$legacy.two@sandbox.uma.test',
          region: 'US',
          currencies: ['USD', 'USDC'],
          kycStatus: 'APPROVED',
          isDeleted: false,
          createdAt: at,
          updatedAt: at,
        };
        // Logged as the service did before customer.opened: the records themselves.
        await svc.service.services.engine.exec([env.envId], (now) => ({
          events: [{ type: 'customer.created', customer, accounts: provisionAccounts(env.envId, id, customer.currencies, now) }],
          reply: () => undefined,
        }));
        const newer = await createCustomer(svc);
        const [legacyAccount] = await customerAccounts(svc, id);
        assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${legacyAccount.id}/fund`, { body: { amount: 50 } }), 200);
        paths = ['/internal-accounts?limit=100', `/customers/internal-accounts?customerId=${id}`, `/customers/${id}`, `/customers/${newer.id}`, '/customers?limit=100'];
        seen = await Promise.all(paths.map((p) => read(svc, p)));
        assert.equal(JSON.parse(seen[2]!).platformCustomerId, 'legacy-2');
        assert.equal(JSON.parse(seen[1]!).totalCount, 2);
      } finally {
        await svc.stop({ keepData: true });
      }

      svc = await startTestService({ dataDir });
      try {
        assert.deepEqual(await Promise.all(paths.map((p) => read(svc, p))), seen);
      } finally {
        await svc.stop({ keepData: true });
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
