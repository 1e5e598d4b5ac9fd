// The OpenAPI document as a client generator reads it (issue 17): every operation has its
// own operationId.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startTestService, type TestService } from './support/service.js';
import { assertStatus } from './support/assertions.js';
import { routes } from '../src/http/routes/index.js';

type Json = { [key: string]: any };
/** The document as the tests walk it (src/http/openapi.ts has its shape). */
interface Document {
  paths: Record<string, Record<string, Json>>;
}
const VERSION = '2025-10-13';

/** Every operation of the document, with where it is. */
function operations(doc: Document): Array<{ where: string; op: Json }> {
  const found: Array<{ where: string; op: Json }> = [];
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) found.push({ where: `${method.toUpperCase()} ${path}`, op });
  return found;
}

function operation(doc: Document, operationId: string): Json {
  const match = operations(doc).find(({ op }) => op.operationId === operationId);
  assert.ok(match, `the document has an operation ${operationId}`);
  return match.op;
}

describe('the OpenAPI document', () => {
  let svc: TestService;
  let doc: Document;
  before(async () => {
    svc = await startTestService();
    const res = await svc.request('GET', `/${VERSION}/openapi.json`, { auth: 'none' });
    assertStatus(res, 200);
    doc = res.body as Document;
  });
  after(async () => {
    await svc.stop();
  });

  it('names every operation with its own camelCase operationId', () => {
    const all = operations(doc);
    assert.equal(all.length, routes.length, 'one operation per route');
    const ids = all.map(({ where, op }) => {
      assert.equal(typeof op.operationId, 'string', `${where} has an operationId`);
      assert.match(op.operationId, /^[a-z][A-Za-z]*$/, `${where}: ${op.operationId} is camelCase`);
      return op.operationId as string;
    });
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    assert.deepEqual(repeated, [], 'operationIds used twice');
    assert.equal(operation(doc, 'createCustomer'), doc.paths[`/${VERSION}/customers`]!.post);
    assert.equal(operation(doc, 'executeQuote'), doc.paths[`/${VERSION}/quotes/{quoteId}/execute`]!.post);
  });
});
