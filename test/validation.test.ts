// A request body's unknown properties are dropped, not kept: they never reach a command
// (an Idempotency-Key's request hash is taken before, over the body as sent). The validator skips
// typebox's Value.Clean when a compiled check shows there is nothing to drop; whichever
// way it goes, what it gives must be what Value.Clean gives.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Type, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { List, Obj, Str, StringEnum, TextRecord, refusingUnknown, validator } from '../src/http/validation.js';
import { routes } from '../src/http/routes/index.js';
import { serviceForSuite } from './support/service.js';
import { assertStatus, unique } from './support/assertions.js';

const Item = Obj({ c: Str() });
const Shape = Obj({
  a: Str(),
  n: Type.Optional(Type.Integer()),
  kind: StringEnum(['X', 'Y']),
  count: Type.Optional(Type.Union([Type.String(), Type.Integer()])),
  nested: Type.Optional(Obj({ b: Str(), list: List(Item) })),
  tags: Type.Optional(TextRecord(Obj({ d: Str() }), 10)),
});
/** A union of objects: Value.Clean cleans it by the first form that fits, so it is always cleaned. */
const Forms = Obj({ pick: Type.Union([Obj({ x: Str() }), Obj({ x: Str(), y: Str() })]) });

const name = fc.stringMatching(/^[a-z]{1,6}$/);
const extras = fc.dictionary(fc.stringMatching(/^zz[a-z]{0,4}$/), fc.jsonValue(), { maxKeys: 2 });
const item = fc.record({ c: fc.string() }).chain((v) => extras.map((x) => ({ ...x, ...v })));
const value = fc
  .record(
    {
      a: fc.string(),
      n: fc.integer(),
      kind: fc.constantFrom('X', 'Y'),
      count: fc.oneof(fc.string(), fc.integer()),
      nested: fc.record({ b: fc.string(), list: fc.array(item, { maxLength: 3 }) }).chain((v) => extras.map((x) => ({ ...x, ...v }))),
      tags: fc.dictionary(name, fc.record({ d: fc.string() }).chain((v) => extras.map((x) => ({ ...x, ...v }))), { maxKeys: 3 }),
    },
    { requiredKeys: ['a', 'kind'] },
  )
  .chain((v) => extras.map((x) => ({ ...x, ...v })));

describe('request validation', () => {
  it('gives what Value.Clean gives, for values with and without unknown properties at every level', () => {
    const shape = validator(Shape);
    assert.notEqual(refusingUnknown(Shape), undefined, 'the shape has a compiled check for unknown properties');
    fc.assert(
      fc.property(value, (v) => {
        assert.deepEqual(shape.parse(structuredClone(v)), Value.Clean(Shape, structuredClone(v)));
      }),
      { numRuns: 500 },
    );
    const clean = { a: 'a', kind: 'X', nested: { b: 'b', list: [{ c: 'c' }] }, tags: { t: { d: 'd' } } };
    assert.equal(shape.parse(clean), clean, 'nothing to drop: the value itself');
    assert.deepEqual(clean, { a: 'a', kind: 'X', nested: { b: 'b', list: [{ c: 'c' }] }, tags: { t: { d: 'd' } } });
  });

  it('a union of objects is always cleaned, by the first form that fits, as Value.Clean does', () => {
    assert.equal(refusingUnknown(Forms), undefined);
    assert.deepEqual(validator(Forms).parse({ pick: { x: 'x', y: 'y' }, other: 1 }), { pick: { x: 'x' } });
  });

  it('the payment and customer bodies take the compiled way', () => {
    for (const [method, path] of [['POST', '/customers'], ['POST', '/quotes'], ['POST', '/quotes/{quoteId}/execute']] as const) {
      const route = routes.find((r) => r.method === method && r.path === path)!;
      if (route.body !== undefined) assert.notEqual(refusingUnknown(route.body.schema as TSchema), undefined, `${method} ${path}`);
    }
  });

  describe('over HTTP', () => {
    const svc = serviceForSuite();

    it('an unknown property is not kept: neither the reply nor a later read shows it', async () => {
      const body = { customerType: 'INDIVIDUAL', fullName: 'Una Known', platformCustomerId: unique('pc-'), favouriteColour: 'teal' };
      const created = await svc.request('POST', '/customers', { body: { ...body, address: { line1: 'x', city: 'y', postalCode: 'z', country: 'US', floor: 3 } } });
      assertStatus(created, 201);
      const read = await svc.request('GET', `/customers/${created.body.id}`);
      for (const shown of [created, read]) {
        assert.equal('favouriteColour' in shown.body, false);
        assert.deepEqual(shown.body.address, { line1: 'x', city: 'y', postalCode: 'z', country: 'US' });
      }
    });
  });
});
