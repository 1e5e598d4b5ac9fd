// The OpenAPI document as a client generator reads it (issue 17): every operation has its
// own operationId; every resource, request body and the error is a named component that
// responses and bodies refer to; every response declares X-Request-Id; the signed retry's
// 202 and headers are described; webhooks publish each payload the service sends and the
// header its signature travels in. The payloads are checked against what a receiver gets.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Type } from '@sinclair/typebox';
import { serviceForSuite } from './support/service.js';
import { schemaErrors, type JsonSchema } from './support/json-schema.js';
import { assertStatus, createCustomer } from './support/assertions.js';
import { createQuote, fundedCustomer, getJson, quoteBody } from './support/money.js';
import { assertSigned, startReceiver } from './support/webhook-receiver.js';
import { routes } from '../src/http/routes/index.js';
import { route } from '../src/http/route.js';
import { openApiDocument } from '../src/http/openapi.js';
import { ERROR_CODES } from '../src/http/errors.js';

type Json = { [key: string]: any };
/** The document as the tests walk it (src/http/openapi.ts has its shape). */
interface Document {
  paths: Record<string, Record<string, Json>>;
  webhooks: Record<string, { post: Json }>;
  components: { schemas: Record<string, Json>; headers: Record<string, Json> };
}
const VERSION = '2025-10-13';

/** The node a `#/...` reference names. */
function resolve(doc: unknown, ref: string): Json {
  assert.ok(ref.startsWith('#/'), `${ref} is a local reference`);
  let node: any = doc;
  for (const part of ref.slice(2).split('/')) node = node?.[part];
  assert.ok(node !== undefined && node !== null && typeof node === 'object', `${ref} resolves`);
  return node;
}

const deref = (doc: unknown, node: Json): Json => (typeof node.$ref === 'string' ? resolve(doc, node.$ref) : node);

/** Every operation of the document, paths and webhooks, with where it is. */
function operations(doc: Document): Array<{ where: string; op: Json }> {
  const found: Array<{ where: string; op: Json }> = [];
  for (const [path, item] of Object.entries(doc.paths)) for (const [method, op] of Object.entries(item)) found.push({ where: `${method.toUpperCase()} ${path}`, op });
  for (const [name, item] of Object.entries(doc.webhooks)) found.push({ where: `webhook ${name}`, op: item.post });
  return found;
}

function operation(doc: Document, operationId: string): Json {
  const match = operations(doc).find(({ op }) => op.operationId === operationId);
  assert.ok(match, `the document has an operation ${operationId}`);
  return match.op;
}

/** The name of the component a body or response schema refers to. */
function componentOf(schema: Json | undefined): string | undefined {
  const ref: unknown = schema?.$ref;
  return typeof ref === 'string' && ref.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : undefined;
}

function allRefs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) allRefs(item, out);
  else if (node !== null && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else allRefs(value, out);
    }
  }
  return out;
}

const successSchema = (op: Json, status: number): Json | undefined => op.responses[String(status)]?.content?.['application/json']?.schema;

describe('the OpenAPI document', () => {
  let doc: Document;
  const svc = serviceForSuite();
  before(async () => {
    const res = await svc.request('GET', `/${VERSION}/openapi.json`, { auth: 'none' });
    assertStatus(res, 200);
    doc = res.body as Document;
  });

  it('names every operation, webhooks included, with its own camelCase operationId', () => {
    const all = operations(doc);
    assert.equal(all.length, routes.length + Object.keys(doc.webhooks).length, 'one operation per route and per webhook');
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

  it('refers every request body and every response body to a named component, and every $ref resolves', () => {
    for (const { where, op } of operations(doc)) {
      const body = op.requestBody?.content?.['application/json']?.schema;
      if (body !== undefined) assert.deepEqual(Object.keys(body), ['$ref'], `${where}: the request body is a reference`);
      if (body !== undefined) assert.ok(componentOf(body), `${where}: the request body is a named schema`);
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        const schema = response.content?.['application/json']?.schema;
        if (schema !== undefined) assert.ok(componentOf(schema) !== undefined && Object.keys(schema).length === 1, `${where} ${status}: the body is a named schema`);
      }
    }
    for (const ref of allRefs(doc)) resolve(doc, ref);
  });

  it('publishes each resource once, as the component its operations answer with', () => {
    const answers: Array<[string, number, string]> = [
      ['createCustomer', 201, 'Customer'],
      ['getCustomer', 200, 'Customer'],
      ['listCustomers', 200, 'CustomerList'],
      ['getInternalAccount', 200, 'InternalAccount'],
      ['listInternalAccounts', 200, 'InternalAccountList'],
      ['getExternalAccount', 200, 'ExternalAccount'],
      ['createQuote', 201, 'Quote'],
      ['executeQuote', 200, 'Quote'],
      ['getTransaction', 200, 'Transaction'],
      ['listTransactions', 200, 'TransactionList'],
      ['getConfig', 200, 'PlatformConfig'],
      ['createCredential', 201, 'IssuedAuthMethod'],
      ['verifyCredential', 200, 'OpenedSession'],
      ['listSessions', 200, 'SessionList'],
      ['exportWallet', 200, 'WalletExport'],
      ['getVerification', 200, 'Verification'],
      ['listWebhookEvents', 200, 'WebhookEventList'],
      ['lookUpUmaReceiver', 200, 'UmaReceiverLookup'],
    ];
    for (const [operationId, status, name] of answers) assert.equal(componentOf(successSchema(operation(doc, operationId), status)), name, `${operationId} ${status}`);
    const schemas = doc.components.schemas;
    // A list names its items, and a resource names the resources inside it.
    assert.equal(componentOf(schemas.CustomerList!.properties.data.items), 'Customer');
    assert.deepEqual(schemas.Customer!.anyOf.map(componentOf), ['IndividualCustomer', 'BusinessCustomer']);
    assert.equal(componentOf(schemas.ExternalAccount!.properties.accountInfo), 'AccountInfo');
    assert.equal(componentOf(schemas.Quote!.properties.sendingCurrency), 'Currency');
    assert.equal(componentOf(operation(doc, 'createCustomer').requestBody.content['application/json'].schema), 'CreateCustomerRequest');
    // The request's accountInfo is checked by its own code but typed as the same AccountInfo.
    assert.equal(componentOf(schemas.CreateExternalAccountRequest!.properties.accountInfo), 'AccountInfo');
  });

  it('publishes the error with every code and a required requestId, and X-Request-Id on every response', () => {
    const error = doc.components.schemas.Error!;
    assert.ok(error.required.includes('requestId'), 'requestId is required');
    assert.equal(error.properties.requestId.type, 'string');
    const codes = deref(doc, error.properties.code).anyOf.map((branch: Json) => branch.const);
    assert.deepEqual([...codes].sort(), [...ERROR_CODES].sort());
    for (const code of ['INVALID_INPUT', 'UNAUTHORIZED', 'NOT_FOUND', 'IDEMPOTENCY_KEY_REUSED', 'RATE_LIMITED', 'INTERNAL_ERROR']) assert.ok(codes.includes(code), code);
    const requestIdHeader = doc.components.headers['X-Request-Id']!;
    assert.equal(requestIdHeader.required, true);
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        assert.equal(componentOf(op.responses.default.content['application/json'].schema), 'Error', `${method} ${path}: errors are the Error`);
        for (const [status, response] of Object.entries<Json>(op.responses)) {
          assert.equal(deref(doc, response.headers?.['X-Request-Id'] ?? {}), requestIdHeader, `${method} ${path} ${status} declares X-Request-Id`);
        }
      }
    }
  });

  it("describes the signed retry: the 202 challenge, and the retry's Request-Id and stamp headers", () => {
    const headersOf = (op: Json): Map<string, Json> =>
      new Map(op.parameters.map((p: Json) => deref(doc, p)).filter((p: Json) => p.in === 'header').map((p: Json) => [p.name, p]));
    const challenge = doc.components.schemas.SignedRequestChallenge!;
    assert.deepEqual([...challenge.required].sort(), ['expiresAt', 'payloadToSign', 'requestId']);
    const signedRetries = routes.filter((r) => r.walletStamp === 'signed retry');
    assert.equal(signedRetries.length, 7, 'create credential, verify, revoke credential, revoke session, refresh session, update account, export');
    for (const r of signedRetries) {
      const op = operation(doc, r.operationId);
      assert.equal(componentOf(successSchema(op, 202)), 'SignedRequestChallenge', `${r.operationId} 202`);
      assert.match(op.responses['202'].description, /Request-Id/, `${r.operationId}: the 202 says how to retry`);
      const headers = headersOf(op);
      for (const name of ['Request-Id', 'Service-Wallet-Signature', 'Grid-Wallet-Signature']) assert.ok(headers.has(name), `${r.operationId} takes ${name}`);
      assert.match(headers.get('Request-Id')!.description, /Request:<uuid>/);
      assert.match(headers.get('Service-Wallet-Signature')!.description, /SIGNATURE_SCHEME_TK_API_P256/);
    }
    const execute = headersOf(operation(doc, 'executeQuote'));
    assert.ok(execute.has('Service-Wallet-Signature') && execute.has('Idempotency-Key') && !execute.has('Request-Id'), 'execute takes a stamp, not a signed retry');
  });

  it('refuses to build when two different schemas share a name, and publishes one that is reused once', () => {
    const answering = (operationId: string, path: string, response: ReturnType<typeof Type.Object>) =>
      route({ method: 'GET', path, operationId, summary: operationId, tag: 'Test', permission: 'VIEW', response, status: 200, handle: async () => ({ status: 200, body: {} }) });
    const thing = Type.Object({ x: Type.String() }, { $id: 'Thing' });
    const reused = openApiDocument([answering('getThing', '/thing', thing), answering('getThingAgain', '/thing/again', Type.Object({ inner: thing }, { $id: 'Wrapper' }))], 'http://x');
    assert.deepEqual(reused.components.schemas.Thing, { type: 'object', required: ['x'], properties: { x: { type: 'string' } }, additionalProperties: false });
    assert.deepEqual(reused.components.schemas.Wrapper!.properties, { inner: { $ref: '#/components/schemas/Thing' } });
    const impostor = Type.Object({ y: Type.Integer() }, { $id: 'Thing' });
    assert.throws(() => openApiDocument([answering('getThing', '/thing', thing), answering('getOther', '/other', impostor)], 'http://x'), /two different schemas are named Thing/);
  });

  it("holds a response to its schema through the component references, catching a property it does not publish", async () => {
    const customer = await createCustomer(svc, { fullName: 'Ada', address: { line1: '1 Main St', city: 'Springfield', postalCode: '12345', country: 'US' } });
    const schema = successSchema(operation(doc, 'getCustomer'), 200) as JsonSchema;
    assert.deepEqual(schemaErrors(schema, customer, doc), []);
    // Two references deep: Customer, IndividualCustomer, then Address.
    const planted = { ...customer, address: { ...customer.address, planted: true } };
    assert.match(schemaErrors(schema, planted, doc).join('\n'), /\$\.address: unpublished property planted/);
  });

  it('publishes every webhook payload the service sends, signed in the header the document names', async () => {
    const receiver = await startReceiver(() => 200);
    try {
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookEndpoint: receiver.url } }), 200);
      const payer = await fundedCustomer(svc, 1_000);
      const payee = await fundedCustomer(svc, 0);
      await createQuote(svc, quoteBody(payer.usd.id, payee.usd.id, 400, { immediatelyExecute: true }));
      const recorded = (await getJson(svc, '/webhooks/events?limit=1')).totalCount as number;
      assertStatus(await svc.request('POST', '/webhooks/test', { body: {} }), 200);
      // An ENVELOPE environment's payload and header, shown by its TEST (test/envelope.test.ts sends every kind).
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookFormat: 'ENVELOPE' } }), 200);
      assertStatus(await svc.request('POST', '/webhooks/test', { body: {} }), 200);
      assertStatus(await svc.request('PATCH', '/config', { body: { webhookFormat: 'FLAT' } }), 200);
      await receiver.waitFor(recorded + 2);

      const payloadByType = new Map<string, { name: string; schema: Json }>();
      for (const [name, item] of Object.entries(doc.webhooks)) {
        const schema = item.post.requestBody.content['application/json'].schema;
        // FLAT payloads by their type; the envelope's type is an enum of OBJECT.EVENT names (test/envelope.test.ts sends them).
        payloadByType.set(deref(doc, schema).properties.type.const ?? 'ENVELOPE', { name, schema });
      }
      assert.deepEqual([...payloadByType.keys()].sort(), ['ACCOUNT_STATUS', 'ENVELOPE', 'INCOMING_PAYMENT', 'OUTGOING_PAYMENT', 'TEST']);
      const pem = (await getJson(svc, '/config')).webhookPublicKeyPem as string;
      const seen = new Set<string>();
      for (const request of receiver.received) {
        const kind = 'data' in request.json ? 'ENVELOPE' : (request.json.type as string);
        const published = payloadByType.get(kind);
        assert.ok(published, `a ${request.json.type} event is published`);
        assert.deepEqual(schemaErrors(published.schema as JsonSchema, request.json, doc), [], `${request.json.type} conforms to ${published.name}`);
        const signature = deref(doc, doc.webhooks[published.name]!.post.parameters[0]);
        assert.equal(signature.in, 'header');
        assert.equal(signature.required, true);
        const sent = request.headers[signature.name.toLowerCase()];
        assert.ok(typeof sent === 'string', `the signature travels in ${signature.name}`);
        assertSigned({ ...request, signature: sent }, pem);
        seen.add(kind);
      }
      assert.deepEqual([...seen].sort(), [...payloadByType.keys()].sort(), 'every published payload was sent');
    } finally {
      await receiver.close();
    }
  });
});
