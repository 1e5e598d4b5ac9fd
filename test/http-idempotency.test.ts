// Idempotency-Key scope and bytes: a key belongs to the route a request reaches, not to
// the spelling of its path, and a key is printable ASCII or refused.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rawExchange, serviceForSuite } from './support/service.js';
import { assertInvalid, assertStatus, customerAccounts, createCustomer, totalCount, unique } from './support/assertions.js';

const VERSION = '2025-10-13';

describe('Idempotency-Key scope', () => {
  const svc = serviceForSuite();

  it('one key on /fund, /fund/, //fund and a percent-encoded id funds once', async () => {
    const customer = await createCustomer(svc);
    const usd = (await customerAccounts(svc, customer.id)).find((a) => a.balance.currency.code === 'USD');
    assert.ok(usd !== undefined);
    const key = unique('fund-');
    const spellings = [
      `/${VERSION}/sandbox/internal-accounts/${usd.id}/fund`,
      `/${VERSION}/sandbox/internal-accounts/${usd.id}/fund/`,
      `/${VERSION}//sandbox/internal-accounts/${usd.id}//fund`,
      `/${VERSION}/sandbox/internal-accounts/${encodeURIComponent(usd.id)}/fund`,
    ];
    const texts: string[] = [];
    for (const path of spellings) {
      const res = await svc.request('POST', path, { body: { amount: 100 }, headers: { 'idempotency-key': key } });
      assertStatus(res, 200);
      texts.push(res.text);
    }
    assert.deepEqual(new Set(texts).size, 1, 'every spelling replays the first answer');
    const after = await svc.request('GET', `/internal-accounts/${usd.id}`);
    assert.equal(after.body.balance.amount, 100);
  });

  it('the same key on another account is another request', async () => {
    const customer = await createCustomer(svc);
    const [a, b] = (await customerAccounts(svc, customer.id)).slice(0, 2);
    const key = unique('fund-');
    assertStatus(await svc.request('POST', `/sandbox/internal-accounts/${a.id}/fund`, { body: { amount: 7 }, headers: { 'idempotency-key': key } }), 200);
    const other = await svc.request('POST', `/sandbox/internal-accounts/${b.id}/fund`, { body: { amount: 7 }, headers: { 'idempotency-key': key } });
    assertStatus(other, 200);
    assert.equal(other.body.id, b.id);
    assert.equal(other.body.balance.amount, 7);
  });

  // uWebSockets.js trims bytes from 0x80 up at either end of a header value as if they
  // were whitespace (a signed-char comparison), so `aé` arrives as `a`: those cannot be
  // told apart here. A key made only of such bytes arrives empty, and is refused as such;
  // inside a key they arrive and are refused.
  it('a key with bytes outside printable ASCII is 400 naming Idempotency-Key and creates nothing', async () => {
    const before = await totalCount(svc, '/customers');
    const body = JSON.stringify({ customerType: 'INDIVIDUAL' });
    for (const key of [Buffer.from('é'), Buffer.from([0xff]), Buffer.from('aéa'), Buffer.from([0x61, 0x80, 0x62]), Buffer.from([0x61, 0x7f, 0x62]), Buffer.alloc(0)]) {
      const request = Buffer.concat([
        Buffer.from(`POST /${VERSION}/customers HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${svc.basic('sandbox')}\r\nContent-Type: application/json\r\n`),
        Buffer.from('Idempotency-Key: '),
        key,
        Buffer.from(`\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
      ]);
      const [res] = await rawExchange(svc.service.http.port, request, [{}]);
      assert.equal(res!.status, 400, `${key.toString('hex')}: ${res!.body}`);
      const parsed = JSON.parse(res!.body) as { code: string; details: Array<{ field: string }> };
      assert.equal(parsed.code, 'INVALID_INPUT');
      assert.ok(parsed.details.some((d) => d.field === 'Idempotency-Key'), res!.body);
    }
    assert.equal(await totalCount(svc, '/customers'), before);
    assertInvalid(await svc.request('POST', '/customers', { body: { customerType: 'INDIVIDUAL' }, headers: { 'idempotency-key': 'ca\u00e9f' } }), 'Idempotency-Key');
  });
});
