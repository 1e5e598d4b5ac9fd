// API tokens and permissions (CONTRACT.md "Today's clients, second wave"): POST/GET /tokens,
// GET/DELETE /tokens/{tokenId}, every answer held to the vendor's contract; a token's
// permissions checked on every route before anything is read or decided; the secret shown
// once; a revoked token refused from the next request on, and after a restart; a store
// written before permissions opens with its tokens holding all three.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../src/engine/clock.js';
import { basicHeader, serviceForSuite, startTestService, type Response, type TestService } from './support/service.js';
import { absentId, assertError, assertInvalid, assertStatus, ID_RE, ISO_TIME } from './support/assertions.js';
import { balanceOf, createQuote, fundedCustomer, quoteBody } from './support/money.js';
import { assertVendorResponse } from './support/vendor-contract.js';
import { World } from '../actors/world.js';
import { newPlatformEnv, tokenRecordOf } from '../actors/platform.js';
import { revokeToken } from '../actors/commands/tokens.js';
import { DomainError } from '../actors/errors.js';

const ALL = ['VIEW', 'TRANSACT', 'MANAGE'];

/**
 * An error answer held to the vendor's schema for its status. The vendor's `details` is an
 * object (`{errors: [...]}`) where CONTRACT.md's error body, which the whole API answers,
 * has an array naming the fields: that one member is left out of the comparison (the
 * fields are asserted with assertError).
 */
function assertVendorError(operationId: string, res: Response): void {
  const { details: _details, ...rest } = res.body as Record<string, unknown>;
  assertVendorResponse(operationId, res.status, rest);
}

interface Made {
  id: string;
  clientId: string;
  clientSecret: string;
  auth: { header: string };
}

async function makeToken(svc: TestService, name: string, permissions: string[], auth: { header: string } | 'sandbox' = 'sandbox'): Promise<Made> {
  const res = await svc.request('POST', '/tokens', { body: { name, permissions }, auth });
  assertStatus(res, 201);
  assertVendorResponse('createToken', 201, res.body);
  const { id, clientId, clientSecret } = res.body;
  return { id, clientId, clientSecret, auth: { header: basicHeader(clientId, clientSecret) } };
}

describe('API tokens', () => {
  const svc = serviceForSuite();

  it('a token made with a name and permissions authenticates with its clientId and clientSecret; listing and reading never show the secret', async () => {
    const res = await svc.request('POST', '/tokens', { body: { name: 'reporting', permissions: ['VIEW'] } });
    assertStatus(res, 201);
    assertVendorResponse('createToken', 201, res.body);
    const made = res.body;
    assert.match(made.id, ID_RE('Token'));
    assert.equal(made.name, 'reporting');
    assert.deepEqual(made.permissions, ['VIEW']);
    assert.match(made.clientId, /^tok_sbx_[0-9a-f]{40}$/);
    assert.match(made.clientSecret, /^sk_[A-Za-z0-9_-]{43}$/);
    assert.match(made.createdAt, ISO_TIME);
    assert.equal(made.updatedAt, made.createdAt);
    assertStatus(await svc.request('GET', '/customers', { auth: { header: basicHeader(made.clientId, made.clientSecret) } }), 200);

    const read = await svc.request('GET', `/tokens/${made.id}`);
    assertStatus(read, 200);
    assertVendorResponse('getTokenById', 200, read.body);
    const { clientSecret, ...shown } = made;
    assert.deepEqual(read.body, shown);
    const list = await svc.request('GET', '/tokens?limit=100');
    assertStatus(list, 200);
    assertVendorResponse('listTokens', 200, list.body);
    assert.deepEqual(list.body.data[0], shown, 'newest first');
    for (const text of [read.text, list.text]) {
      assert.ok(!text.includes(clientSecret) && !text.includes('clientSecret'), 'no secret in a read or a list');
    }
    assert.ok(!svc.reportLines.some((line) => line.includes(clientSecret)), 'the secret is never logged');
    // The token the environment was made with: all three permissions, an id of its own.
    const first = list.body.data.find((t: any) => t.clientId === svc.credentials.sandbox.tokenId);
    assert.match(first.id, ID_RE('Token'));
    assert.deepEqual(first.permissions, ALL);
    assertVendorResponse('getTokenById', 200, (await svc.request('GET', `/tokens/${first.id}`)).body);
  });

  it('lists by name and creation time, pages with a cursor, and keeps environments apart', async () => {
    const a = await makeToken(svc, 'pager', ['VIEW']);
    const b = await makeToken(svc, 'pager', ['TRANSACT']);
    const named = await svc.request('GET', '/tokens?name=pager&limit=1');
    assertVendorResponse('listTokens', 200, named.body);
    assert.deepEqual([named.body.data[0].id, named.body.hasMore, named.body.totalCount], [b.id, true, 2]);
    const next = await svc.request('GET', `/tokens?name=pager&limit=1&cursor=${encodeURIComponent(named.body.nextCursor)}`);
    assert.deepEqual([next.body.data[0].id, next.body.hasMore], [a.id, false]);
    const later = await svc.request('GET', `/tokens?createdAfter=${encodeURIComponent('2999-01-01T00:00:00Z')}`);
    assert.equal(later.body.totalCount, 0);
    const production = await svc.request('GET', '/tokens', { auth: 'production' });
    assert.deepEqual(
      production.body.data.map((t: any) => t.clientId),
      [svc.credentials.production.tokenId],
    );
    assertError(await svc.request('GET', `/tokens/${a.id}`, { auth: 'production' }), 404, 'TOKEN_NOT_FOUND', ['tokenId']);
  });

  it('refuses a bad request naming its field, and answers 401 and 404 in the shapes the vendor lists', async () => {
    const before = (await svc.request('GET', '/tokens')).body.totalCount;
    const bad: Array<[unknown, string]> = [
      [{ permissions: ['VIEW'] }, 'name'],
      [{ name: '', permissions: ['VIEW'] }, 'name'],
      [{ name: 'x', permissions: [] }, 'permissions'],
      [{ name: 'x', permissions: ['ADMIN'] }, 'permissions.0'],
      [{ name: 'x', permissions: ['VIEW', 'VIEW'] }, 'permissions'],
      [{ name: 'x' }, 'permissions'],
    ];
    for (const [body, field] of bad) {
      const res = await svc.request('POST', '/tokens', { body });
      assertInvalid(res, field);
      assertVendorError('createToken', res);
    }
    assert.equal((await svc.request('GET', '/tokens')).body.totalCount, before, 'nothing made');
    const list = await svc.request('GET', '/tokens?createdAfter=yesterday');
    assertInvalid(list, 'createdAfter');
    assertVendorError('listTokens', list);

    const missing = absentId('Token');
    for (const [method, operationId] of [['GET', 'getTokenById'], ['DELETE', 'deleteTokenById']] as const) {
      const res = await svc.request(method, `/tokens/${missing}`);
      assertError(res, 404, 'TOKEN_NOT_FOUND', ['tokenId']);
      assertVendorError(operationId, res);
    }
    const calls: Array<[string, string, string, unknown]> = [
      ['POST', '/tokens', 'createToken', { name: 'x', permissions: ['VIEW'] }],
      ['GET', '/tokens', 'listTokens', undefined],
      ['GET', `/tokens/${missing}`, 'getTokenById', undefined],
      ['DELETE', `/tokens/${missing}`, 'deleteTokenById', undefined],
    ];
    for (const [method, path, operationId, body] of calls) {
      const res = await svc.request(method, path, { body, auth: { header: basicHeader(svc.credentials.sandbox.tokenId, 'sk_wrong') } });
      assertError(res, 401, 'UNAUTHORIZED');
      assertVendorResponse(operationId, 401, res.body);
    }
  });

  it('a VIEW token reads everything but cannot pay: POST /quotes and execute are 403 naming TRANSACT, and nothing changes', async () => {
    const viewer = await makeToken(svc, 'viewer', ['VIEW']);
    const alice = await fundedCustomer(svc, 10_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await createQuote(svc, quoteBody(alice.usd.id, bob.usd.id, 2_500));
    for (const path of ['/customers', `/quotes/${quote.id}`, '/transactions', '/config', '/tokens']) {
      assertStatus(await svc.request('GET', path, { auth: viewer.auth }), 200);
    }
    const quotesBefore = (await svc.request('GET', '/transactions')).body.totalCount;
    const refused = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 100), auth: viewer.auth });
    assert.match(assertError(refused, 403, 'FORBIDDEN').message, /\bTRANSACT\b/);
    const execute = await svc.request('POST', `/quotes/${quote.id}/execute`, { auth: viewer.auth });
    assert.match(assertError(execute, 403, 'FORBIDDEN').message, /\bTRANSACT\b/);
    // Refused before the body is read: a malformed body gets the same 403.
    assertError(await svc.request('POST', '/quotes', { raw: '{', headers: { 'content-type': 'application/json' }, auth: viewer.auth }), 403, 'FORBIDDEN');
    assert.equal((await svc.request('GET', `/quotes/${quote.id}`)).body.status, 'PENDING');
    assert.equal(await balanceOf(svc, alice.usd.id), 10_000);
    assert.equal((await svc.request('GET', '/transactions')).body.totalCount, quotesBefore);
    const making = await svc.request('POST', '/tokens', { body: { name: 'escalate', permissions: ALL }, auth: viewer.auth });
    assert.match(assertError(making, 403, 'FORBIDDEN').message, /\bMANAGE\b/);
  });

  it('a TRANSACT token pays but cannot PATCH /config (403 naming MANAGE), which stays as it was', async () => {
    const payer = await makeToken(svc, 'payer', ['TRANSACT']);
    const alice = await fundedCustomer(svc, 1_000);
    const bob = await fundedCustomer(svc, 0);
    const quote = await svc.request('POST', '/quotes', { body: quoteBody(alice.usd.id, bob.usd.id, 100), auth: payer.auth });
    assertStatus(quote, 201);
    const config = (await svc.request('GET', '/config')).body;
    const patch = await svc.request('PATCH', '/config', { body: { umaDomain: 'changed.example.com' }, auth: payer.auth });
    assert.match(assertError(patch, 403, 'FORBIDDEN').message, /\bMANAGE\b/);
    assert.deepEqual((await svc.request('GET', '/config')).body, config);
    assert.match(assertError(await svc.request('GET', '/customers', { auth: payer.auth }), 403, 'FORBIDDEN').message, /\bVIEW\b/);
  });

  it('DELETE revokes from the next request on; a token cannot delete itself', async () => {
    const admin = await makeToken(svc, 'admin', ['MANAGE', 'VIEW']);
    const doomed = await makeToken(svc, 'doomed', ['VIEW']);
    assertStatus(await svc.request('GET', '/tokens', { auth: doomed.auth }), 200);
    const self = await svc.request('DELETE', `/tokens/${admin.id}`, { auth: admin.auth });
    assertInvalid(self, 'tokenId');
    assert.match(self.body.message, /itself/);
    assertVendorError('deleteTokenById', self);
    const gone = await svc.request('DELETE', `/tokens/${doomed.id}`, { auth: admin.auth });
    assertStatus(gone, 204);
    assert.equal(gone.text, '');
    assertError(await svc.request('GET', '/tokens', { auth: doomed.auth }), 401, 'UNAUTHORIZED');
    assertError(await svc.request('GET', `/tokens/${doomed.id}`), 404, 'TOKEN_NOT_FOUND');
    assertError(await svc.request('DELETE', `/tokens/${doomed.id}`, { auth: admin.auth }), 404, 'TOKEN_NOT_FOUND');
  });

  it('an Idempotency-Key replay answers the same token without its secret, and makes no second one', async () => {
    const headers = { 'idempotency-key': 'token-once' };
    const body = { name: 'keyed', permissions: ['MANAGE', 'VIEW'] };
    const first = await svc.request('POST', '/tokens', { body, headers });
    assertStatus(first, 201);
    assert.deepEqual(first.body.permissions, ['VIEW', 'MANAGE'], 'permissions are a set in a fixed order');
    const again = await svc.request('POST', '/tokens', { body, headers });
    assertStatus(again, 201);
    assertVendorResponse('createToken', 201, again.body);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const { clientSecret, ...shown } = first.body;
    assert.deepEqual(again.body, shown);
    assert.ok(!again.text.includes(clientSecret));
    assert.equal((await svc.request('GET', '/tokens?name=keyed')).body.totalCount, 1);
  });
});

describe('a revoked token after a restart', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'tokens-restart-'));
  let svc: TestService | undefined;
  after(async () => {
    await svc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('stays refused, whether the snapshot or the log holds the revocation, and the tokens left keep their permissions', async () => {
    svc = await startTestService({ dataDir });
    const admin = await makeToken(svc, 'admin', ['MANAGE']);
    const viewer = await makeToken(svc, 'viewer', ['VIEW']);
    const revoked = await makeToken(svc, 'revoked', ALL);
    const revokedLater = await makeToken(svc, 'revoked later', ALL);
    assertStatus(await svc.request('DELETE', `/tokens/${revoked.id}`, { auth: admin.auth }), 204);
    await svc.service.services.engine.snapshot();
    assertStatus(await svc.request('DELETE', `/tokens/${revokedLater.id}`, { auth: admin.auth }), 204);
    await svc.stop({ keepData: true });
    svc = await startTestService({ dataDir });
    for (const gone of [revoked, revokedLater]) assertError(await svc.request('GET', '/config', { auth: gone.auth }), 401, 'UNAUTHORIZED');
    assertStatus(await svc.request('GET', '/config', { auth: viewer.auth }), 200);
    assertError(await svc.request('PATCH', '/config', { body: {}, auth: viewer.auth }), 403, 'FORBIDDEN');
    assertStatus(await svc.request('POST', '/tokens', { body: { name: 'after', permissions: ['VIEW'] }, auth: admin.auth }), 201);
    const names = (await svc.request('GET', '/tokens?limit=100')).body.data.map((t: any) => t.name);
    assert.deepEqual(names.sort(), ['Sandbox token made with the platform', 'admin', 'after', 'viewer']);
  });
});

describe('a store written before permissions existed', () => {
  const FIXTURE = fileURLToPath(new URL('../../test/fixtures/store-9386337', import.meta.url));
  const dataDir = mkdtempSync(join(tmpdir(), 'tokens-fixture-'));
  cpSync(FIXTURE, dataDir, { recursive: true });
  let svc: TestService | undefined;
  after(async () => {
    await svc?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('opens with its tokens holding all three permissions', async () => {
    const { now } = JSON.parse(readFileSync(join(FIXTURE, 'expected.json'), 'utf8')) as { now: number };
    svc = await startTestService({ dataDir, clock: new ManualClock(now) });
    for (const environment of ['sandbox', 'production'] as const) {
      const list: Response<any> = await svc.request('GET', '/tokens', { auth: environment });
      assertStatus(list, 200);
      assertVendorResponse('listTokens', 200, list.body);
      assert.deepEqual(
        list.body.data.map((t: any) => [t.clientId, t.permissions]),
        [[svc.credentials[environment].tokenId, ALL]],
      );
    }
    assertStatus(await svc.request('PATCH', '/config', { body: {} }), 200);
    await makeToken(svc, 'new', ['VIEW']);
  });
});

describe('the last MANAGE token', () => {
  it('is not revoked, whoever asks (through the API the caller holds MANAGE itself, so this is the decision alone)', () => {
    const world = new World();
    const at = Date.UTC(2026, 0, 1);
    const env = newPlatformEnv(
      {
        platformId: 'Platform:019a0000-0000-7000-8000-000000000001',
        environment: 'sandbox',
        token: { tokenId: 'tok_sbx_000000000000000000000001', secretHash: '0'.repeat(64) },
        umaDomain: 'sandbox.uma.test',
        isRegulatedFinancialInstitution: false,
        webhookPublicKey: '',
        webhookPrivateKeySealed: new Uint8Array(),
      },
      at,
    );
    world.apply({ type: 'platform.env.created', env }, at);
    const only = tokenRecordOf(env, env.tokens[0]!);
    assert.throws(
      () => revokeToken.decide({ envId: env.id, id: only.id, callerTokenId: '' }, world, at, undefined),
      (err: unknown) => err instanceof DomainError && err.code === 'INVALID_INPUT' && /last token with MANAGE/.test(err.message),
    );
  });
});
