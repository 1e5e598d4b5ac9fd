// What the HTTP front refuses before a body reaches a route: nesting deeper than the
// stated limit, strings that are not well-formed Unicode (they would not survive the
// store's UTF-8 round trip), and bytes that are not UTF-8. Each is a 400 naming the field
// and changes nothing.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serviceForSuite } from './support/service.js';
import { ACCOUNT_FIXTURES, assertInvalid, createCustomer, totalCount, unique } from './support/assertions.js';

function nested(levels: number): string {
  return '{"customerType":"INDIVIDUAL","fullName":"Deep","extra":' + '['.repeat(levels) + ']'.repeat(levels) + '}';
}

describe('HTTP input', () => {
  const svc = serviceForSuite();

  describe('nesting depth', () => {
    it('5,000 levels of nesting is 400 naming body, on a keyed create and on external accounts, with no stack trace logged', async () => {
      const customer = await createCustomer(svc);
      const customers = await totalCount(svc, '/customers');
      const accounts = await totalCount(svc, '/customers/external-accounts');
      const keyed = await svc.request('POST', '/customers', {
        raw: nested(5000),
        headers: { 'content-type': 'application/json', 'idempotency-key': unique('deep-') },
      });
      assertInvalid(keyed, 'body');
      const fixture = ACCOUNT_FIXTURES[0]!;
      const deepInfo = '{"x":'.repeat(5000) + '1' + '}'.repeat(5000);
      const external = await svc.request('POST', '/customers/external-accounts', {
        raw: `{"customerId":${JSON.stringify(customer.id)},"currency":"${fixture.currency}","accountInfo":${deepInfo}}`,
        headers: { 'content-type': 'application/json' },
      });
      assertInvalid(external, 'body');
      assert.equal(await totalCount(svc, '/customers'), customers);
      assert.equal(await totalCount(svc, '/customers/external-accounts'), accounts);
      const traces = svc.reportLines.filter((line) => /\n\s+at /.test(line) || /RangeError|Maximum call stack/.test(line));
      assert.deepEqual(traces, []);
    });

    it('nesting up to the limit is accepted, one level more is refused', async () => {
      // The body object itself is level 1; `extra` adds the arrays.
      const ok = await svc.request('POST', '/customers', { raw: nested(31), headers: { 'content-type': 'application/json' } });
      assert.equal(ok.status, 201, ok.text);
      assertInvalid(await svc.request('POST', '/customers', { raw: nested(32), headers: { 'content-type': 'application/json' } }), 'body');
    });
  });

  describe('Unicode', () => {
    it('a lone surrogate in a string is 400 naming the field, and creates nothing', async () => {
      const before = await totalCount(svc, '/customers');
      for (const escape of ['\\ud800', '\\udfff', 'a\\ud83d', '\\ude00b']) {
        const raw = `{"customerType":"INDIVIDUAL","fullName":"${escape}"}`;
        assertInvalid(await svc.request('POST', '/customers', { raw, headers: { 'content-type': 'application/json' } }), 'fullName');
        const keyed = await svc.request('POST', '/customers', { raw, headers: { 'content-type': 'application/json', 'idempotency-key': unique('sur-') } });
        assertInvalid(keyed, 'fullName');
      }
      // Nested fields are named by their dotted path.
      const address = '{"customerType":"INDIVIDUAL","address":{"line1":"\\ud800","country":"US"}}';
      assertInvalid(await svc.request('POST', '/customers', { raw: address, headers: { 'content-type': 'application/json' } }), 'address.line1');
      assert.equal(await totalCount(svc, '/customers'), before);
      // A well-formed pair is fine and reads back unchanged.
      const pair = await svc.request('POST', '/customers', { raw: '{"customerType":"INDIVIDUAL","fullName":"\\ud83d\\ude00"}', headers: { 'content-type': 'application/json' } });
      assert.equal(pair.status, 201, pair.text);
      assert.equal(pair.body.fullName, '\u{1F600}');
    });

    it('a lone surrogate in an object key is 400, also in a property nobody reads', async () => {
      const before = await totalCount(svc, '/customers');
      const raw = '{"customerType":"INDIVIDUAL","\\ud800":"x"}';
      const res = await svc.request('POST', '/customers', { raw, headers: { 'content-type': 'application/json' } });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.code, 'INVALID_INPUT');
      assert.equal(await totalCount(svc, '/customers'), before);
    });

    it('a body that is not UTF-8 is 400 naming body, not silently replaced', async () => {
      const before = await totalCount(svc, '/customers');
      const prefix = Buffer.from('{"customerType":"INDIVIDUAL","fullName":"');
      for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf]]) {
        const raw = Buffer.concat([prefix, Buffer.from(bad), Buffer.from('"}')]);
        assertInvalid(await svc.request('POST', '/customers', { raw, headers: { 'content-type': 'application/json' } }), 'body');
      }
      assert.equal(await totalCount(svc, '/customers'), before);
    });
  });
});
