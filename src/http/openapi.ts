// The OpenAPI 3.1 document, generated from the same route schemas that validate requests.
import type { TSchema } from '@sinclair/typebox';
import type { Route } from './route.js';
import { API_VERSION } from './server.js';
import { AccountInfoSchema } from './schemas/account-info.js';

const ERROR_SCHEMA = {
  type: 'object',
  required: ['status', 'code', 'message'],
  properties: {
    status: { type: 'integer' },
    code: { type: 'string' },
    message: { type: 'string' },
    reason: { type: 'string', description: 'on 401: the check that failed' },
    details: {
      description: 'the offending fields, as dotted paths into the request',
      type: 'array',
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

/** JSON Schema without typebox's symbols and with plain `type`s. */
function plain(schema: TSchema): unknown {
  return JSON.parse(JSON.stringify(schema));
}

/**
 * A response schema as published: every object lists all the properties it may carry
 * (`additionalProperties: false`), so a client can rely on the document and the tests
 * that hold responses to it catch a property nobody documented. Maps (string keys chosen
 * by the client, such as counterpartyInformation) publish the schema of their values.
 */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    out[key] = key === 'properties' ? Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, closed(v)])) : closed(value);
  }
  // A map (additionalProperties given as a schema) keeps its schema.
  if (out.type === 'object' && out.properties !== undefined && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

/** The headers of a wallet stamp: one stamp, under either name (both and different: 400), and a signed retry's Request-Id. */
function walletStampHeaders(kind: 'stamp' | 'signed retry'): unknown[] {
  const stamp = 'base64url JSON {publicKey, scheme: SIGNATURE_SCHEME_TK_API_P256, signature} by a session key of the wallet, over the payloadToSign';
  const headers: unknown[] = [
    { name: 'Service-Wallet-Signature', in: 'header', required: false, schema: { type: 'string', description: stamp } },
    { name: 'Grid-Wallet-Signature', in: 'header', required: false, schema: { type: 'string', description: `the same stamp under the name today's clients send; with Service-Wallet-Signature, both must be equal` } },
  ];
  if (kind === 'signed retry') headers.push({ name: 'Request-Id', in: 'header', required: false, schema: { type: 'string', description: "the 202 challenge's requestId, on the signed retry" } });
  return headers;
}

export function openApiDocument(routes: readonly Route[], baseUrl: string): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const parameters: unknown[] = [];
    for (const m of r.path.matchAll(/\{(\w+)\}/g)) parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
    const queryProps = (r.query?.schema.properties ?? {}) as Record<string, TSchema>;
    const required = new Set<string>((r.query?.schema.required as string[] | undefined) ?? []);
    for (const [name, schema] of Object.entries(queryProps)) parameters.push({ name, in: 'query', required: required.has(name), schema: plain(schema) });
    if (r.idempotent === true) parameters.push({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', pattern: '^[!-~]{1,255}$', description: 'printable ASCII without spaces' } });
    if (r.walletStamp !== undefined) parameters.push(...walletStampHeaders(r.walletStamp));
    const responses: Record<string, unknown> = {
      [String(r.status)]: { description: 'success', content: r.response === undefined ? undefined : { 'application/json': { schema: closed(plain(r.response)) } } },
    };
    for (const other of r.alsoAnswers ?? []) {
      responses[String(other.status)] = { description: 'success', content: other.response === undefined ? undefined : { 'application/json': { schema: closed(plain(other.response)) } } };
    }
    responses.default = { description: 'error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } };
    const operation: Record<string, unknown> = {
      operationId: r.operationId,
      summary: r.summary,
      tags: [r.tag],
      parameters,
      responses,
    };
    if (r.sandboxOnly === true) operation.description = 'Sandbox only: production tokens get 403 SANDBOX_ONLY.';
    if (r.body !== undefined) operation.requestBody = { required: true, content: { 'application/json': { schema: plain(r.body.schema) } } };
    const path = `/${API_VERSION}${r.path}`;
    paths[path] ??= {};
    paths[path]![r.method.toLowerCase()] = operation;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Payments and embedded-wallet API', version: API_VERSION },
    servers: [{ url: baseUrl.replace(`/${API_VERSION}`, '') }],
    security: [{ basic: [] }],
    components: {
      securitySchemes: { basic: { type: 'http', scheme: 'basic', description: '<token id>:<client secret>' } },
      schemas: { Error: ERROR_SCHEMA, AccountInfo: plain(AccountInfoSchema) },
    },
    paths,
  };
}
