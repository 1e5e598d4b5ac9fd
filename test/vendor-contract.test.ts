// The checker the second wave's tests hold answers with (support/vendor-contract.ts) must
// refuse what the vendor's clients would refuse: a missing field, a wrong enum value, a bad
// time; otherwise every test built on it could not fail.
import { test } from 'node:test';
import { strict as assert } from 'node:assert';
import { assertVendorResponse, assertVendorSchema, assertVendorWebhook, vendorOperation } from './support/vendor-contract.js';

const token = {
  id: 'Token:019542f5-b3e7-1d02-0000-000000000001',
  name: 'Sandbox read-only token',
  permissions: ['VIEW'],
  clientId: '01947d2284054f890000e63bca4810df',
  createdAt: '2025-07-21T17:32:28Z',
  updatedAt: '2025-07-21T17:32:28Z',
};

test('an answer of the vendor\'s shape passes, by operation and by schema name', () => {
  assertVendorResponse('createToken', 201, { ...token, clientSecret: 'ed0ad25881e234cc28fb2dec0a4fe64e4172' });
  assertVendorResponse('getTokenById', 200, token);
  assertVendorSchema('ApiToken', token);
  assert.deepEqual(vendorOperation('cancelTransaction').method, 'post');
});

test('a missing field, an unknown enum value or a malformed time fails, naming where', () => {
  const { clientId: _, ...noClient } = token;
  assert.throws(() => assertVendorResponse('createToken', 201, noClient), /clientId/);
  assert.throws(() => assertVendorSchema('ApiToken', { ...token, permissions: ['ADMIN'] }), /permissions\/0/);
  assert.throws(() => assertVendorSchema('ApiToken', { ...token, createdAt: 'yesterday' }), /createdAt/);
});

test('a webhook body is held to the webhook\'s schema; an unknown operation or webhook is an error, not a pass', () => {
  assert.throws(() => assertVendorWebhook('test-webhook', { id: 1 }), /test-webhook/);
  assert.throws(() => assertVendorWebhook('no-such-webhook', {}), /no webhook/);
  assert.throws(() => assertVendorResponse('noSuchOperation', 200, {}), /no operation/);
  assert.throws(() => assertVendorResponse('createToken', 299, {}), /no JSON body/);
});
