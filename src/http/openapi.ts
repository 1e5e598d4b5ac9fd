// The OpenAPI 3.1 document, generated from the definitions that serve the API: the routes
// (routes/*.ts) with the typebox schemas that validate their requests and type their
// handlers, the error body (schemas/error.ts) and the webhooks the service sends
// (schemas/webhooks.ts).
//
// Named schemas: a schema built with an `$id` (typebox's own option, `Obj({...}, { $id:
// 'Customer' })`) is a component. It is published once, as components/schemas/<$id>, and
// wherever it is used (a response, a request body, a property of another schema) the
// document refers to it with a $ref, so a generated client gets one named type per
// resource. The schema object stays the one definition: it validates requests, gives
// handlers their types (Static) and is what the document says. Two different schemas under
// one name would leave the document, and typebox's compiler (which compiles one function
// per $id), using one of them for both, so building the document fails instead.
import type { TSchema } from '@sinclair/typebox';
import { ENVELOPE_SIGNATURE_HEADER, WEBHOOK_SIGNATURE_HEADER } from '../crypto/webhook-signature.js';
import type { Route } from './route.js';
import { API_VERSION } from './server.js';
import { ErrorSchema } from './schemas/error.js';
import { componentRefTo } from './schemas/named.js';
import { WEBHOOKS, type WebhookDefinition } from './schemas/webhooks.js';

type Json = { [key: string]: unknown };

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: Json;
  servers: Json[];
  security: Json[];
  /** By path, then by lower-case method. */
  paths: Record<string, Record<string, Json>>;
  /** By name, each a path item with its `post`. */
  webhooks: Record<string, { post: Json }>;
  components: { securitySchemes: Json; schemas: Record<string, Json>; parameters: Record<string, Json>; headers: Record<string, Json> };
}

/** Component names OpenAPI allows. */
const COMPONENT_NAME = /^[A-Za-z0-9._-]+$/;

/** The named schemas met while publishing, each under its name once. */
class SchemaComponents {
  readonly #byName = new Map<string, { schema: Json; text: string }>();

  /**
   * `schema` as published: plain JSON (no typebox symbols), its named parts (itself
   * included) moved to components and referred to, and every object closed: it lists all
   * the properties it may carry (`additionalProperties: false`), so a client can rely on
   * the document and the tests that hold responses to it catch a property nobody
   * documented. Request bodies are published closed too (a schema such as Address serves
   * both): the service ignores, and drops, a property they do not list. A map (string keys
   * chosen by the client, such as counterpartyInformation) keeps the schema of its values.
   */
  publish(schema: TSchema): unknown {
    return this.#publish(JSON.parse(JSON.stringify(schema)) as unknown);
  }

  #publish(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((item) => this.#publish(item));
    if (node === null || typeof node !== 'object') return node;
    const { $id: name, ...rest } = node as Json;
    const out: Json = {};
    for (const [key, value] of Object.entries(rest)) {
      out[key] = key === 'properties' ? mapValues(value as Json, (property) => this.#publish(property)) : this.#publish(value);
    }
    if (out.type === 'object' && out.properties !== undefined && out.additionalProperties === undefined) out.additionalProperties = false;
    return typeof name === 'string' ? this.#named(name, out) : out;
  }

  #named(name: string, schema: Json): Json {
    if (!COMPONENT_NAME.test(name)) throw new Error(`schema name ${JSON.stringify(name)} is not a component name (letters, digits, . _ -)`);
    const text = JSON.stringify(schema);
    const known = this.#byName.get(name);
    if (known !== undefined && known.text !== text) throw new Error(`two different schemas are named ${name}:\n${known.text}\n${text}`);
    this.#byName.set(name, { schema, text });
    return { $ref: componentRefTo(name) };
  }

  /** Every component, by name in alphabetical order. */
  all(): Record<string, Json> {
    return Object.fromEntries([...this.#byName].sort(([a], [b]) => a.localeCompare(b)).map(([name, { schema }]) => [name, schema]));
  }
}

function mapValues(record: Json, f: (value: unknown) => unknown): Json {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(value)]));
}

const STAMP =
  'A stamp: base64url (plain base64 also accepted) of the JSON {publicKey, scheme: "SIGNATURE_SCHEME_TK_API_P256", signature}, publicKey being a session key of the wallet ' +
  '(compressed SEC1 hex) and signature the DER hex of ECDSA P-256 SHA-256 over the exact bytes of the payloadToSign the service handed out for this request ' +
  "(a 202 SignedRequestChallenge's, or for quote execution the quote's EMBEDDED_WALLET paymentInstructions). Sandbox also accepts the literal sandbox-valid-signature";

/** Header parameters several operations take, each published once under components/parameters. */
const PARAMETERS: Record<string, Json> = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description: 'Remembered 24 hours per environment and route: the same key and body get the first response again, byte for byte; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED',
    schema: { type: 'string', pattern: '^[!-~]{1,255}$', description: 'printable ASCII without spaces' },
  },
  ServiceWalletSignature: { name: 'Service-Wallet-Signature', in: 'header', required: false, description: STAMP, schema: { type: 'string' } },
  GridWalletSignature: {
    name: 'Grid-Wallet-Signature',
    in: 'header',
    required: false,
    description: "The same stamp under the name today's clients send; sent with Service-Wallet-Signature, both must be equal (else 400 naming Grid-Wallet-Signature)",
    schema: { type: 'string' },
  },
  RequestId: {
    name: 'Request-Id',
    in: 'header',
    required: false,
    description:
      'On the signed retry: the requestId (Request:<uuid>) of the 202 SignedRequestChallenge this request answers, sent with the stamp before its expiresAt; absent on the first request. ' +
      "On a PASSKEY verify: the requestId (a UUID) of the PasskeyAuthChallenge the assertion answers",
    schema: { type: 'string' },
  },
  WebhookSignature: {
    name: WEBHOOK_SIGNATURE_HEADER,
    in: 'header',
    required: true,
    description:
      "base64 of the DER ECDSA P-256 SHA-256 signature over the exact body bytes, by the environment's webhook key: verify it with webhookPublicKey (uncompressed SEC1 hex) " +
      'or webhookPublicKeyPem (SPKI PEM) of GET /config before trusting the body',
    schema: { type: 'string' },
  },
  EnvelopeWebhookSignature: {
    name: ENVELOPE_SIGNATURE_HEADER,
    in: 'header',
    required: true,
    description: 'The same signature as WebhookSignature (over the exact body bytes, by the same key), under the header an ENVELOPE environment gets',
    schema: { type: 'string' },
  },
};

/** Response headers, each published once under components/headers. */
const HEADERS: Record<string, Json> = {
  'X-Request-Id': {
    description: "The service's id for this request, on every response: it names the request in the service's logs, and an error body repeats it as requestId",
    required: true,
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'On 429 and 503: seconds to wait before trying again', required: false, schema: { type: 'integer', minimum: 0 } },
};

const ref = (kind: 'parameters' | 'headers', name: string): Json => ({ $ref: `#/components/${kind}/${name}` });

function response(description: string, schema: unknown, headers: Json = { 'X-Request-Id': ref('headers', 'X-Request-Id') }): Json {
  const out: Json = { description, headers };
  if (schema !== undefined) out.content = { 'application/json': { schema } };
  return out;
}

const SUCCESS: Readonly<Record<number, string>> = { 200: 'OK', 201: 'Created', 204: 'No content' };

/** The header parameters a route reads besides its path and query. */
function headerParameters(r: Route): Json[] {
  const headers: Json[] = [];
  if (r.idempotent === true) headers.push(ref('parameters', 'IdempotencyKey'));
  if (r.walletStamp !== undefined) headers.push(ref('parameters', 'ServiceWalletSignature'), ref('parameters', 'GridWalletSignature'));
  if (r.walletStamp === 'signed retry') headers.push(ref('parameters', 'RequestId'));
  return headers;
}

/** The path's `{name}` parameters, each with the schema the route reads it with: a path and its params schema that name different parameters fail the document. */
function pathParameters(r: Route, components: SchemaComponents): Json[] {
  const schemas = (r.params?.schema.properties ?? {}) as Record<string, TSchema>;
  const names = [...r.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const unread = names.filter((name) => schemas[name] === undefined);
  const absent = Object.keys(schemas).filter((name) => !names.includes(name));
  if (unread.length > 0 || absent.length > 0) throw new Error(`${r.method} ${r.path}: the params schema must name exactly the path's parameters (${names.join(', ')})`);
  return names.map((name) => ({ name, in: 'path', required: true, schema: components.publish(schemas[name]!) }));
}

function operationOf(r: Route, components: SchemaComponents, error: unknown): Json {
  const parameters: unknown[] = pathParameters(r, components);
  const queryProps = (r.query?.schema.properties ?? {}) as Record<string, TSchema>;
  const required = new Set<string>((r.query?.schema.required as string[] | undefined) ?? []);
  for (const [name, schema] of Object.entries(queryProps)) parameters.push({ name, in: 'query', required: required.has(name), schema: components.publish(schema) });
  parameters.push(...headerParameters(r));
  const publish = (schema: TSchema | undefined): unknown => (schema === undefined ? undefined : components.publish(schema));
  const responses: Json = { [String(r.status)]: response(SUCCESS[r.status] ?? 'Success', publish(r.response)) };
  for (const other of r.alsoAnswers ?? []) responses[String(other.status)] = response(other.description, publish(other.response));
  responses.default = response("An error: its status is its code's (src/http/errors.ts)", error, {
    'X-Request-Id': ref('headers', 'X-Request-Id'),
    'Retry-After': ref('headers', 'Retry-After'),
  });
  const operation: Json = { operationId: r.operationId, summary: r.summary, tags: [r.tag], parameters, 'x-permission': r.permission };
  const needs = `Needs an API token with the ${r.permission} permission (403 FORBIDDEN without it).`;
  operation.description = r.sandboxOnly === true ? `${needs} Sandbox only: production tokens get 403 SANDBOX_ONLY.` : needs;
  if (r.body !== undefined) operation.requestBody = { required: true, content: { 'application/json': { schema: components.publish(r.body.schema) } } };
  if (r.multipart !== undefined) operation.requestBody = { required: true, content: { 'multipart/form-data': { schema: components.publish(r.multipart.schema) } } };
  operation.responses = responses;
  return operation;
}

/** What the service POSTs to the platform's webhookEndpoint: signed, not Basic-authenticated. */
function webhookOperationOf(w: WebhookDefinition, components: SchemaComponents): Json {
  return {
    operationId: w.operationId,
    summary: w.summary,
    security: [],
    parameters: [ref('parameters', w.envelope === true ? 'EnvelopeWebhookSignature' : 'WebhookSignature')],
    requestBody: { required: true, content: { 'application/json': { schema: components.publish(w.payload) } } },
    responses: mapValues(w.answers, (description) => ({ description })),
  };
}

const DESCRIPTION =
  'Payments and embedded wallets. Every response carries X-Request-Id, and an error body repeats it as requestId. ' +
  'Request bodies: a property a schema does not list is ignored and not kept. ' +
  `Webhooks: what the service POSTs to the configured webhookEndpoint, signed in ${WEBHOOK_SIGNATURE_HEADER} (webhookFormat FLAT) or ${ENVELOPE_SIGNATURE_HEADER} (ENVELOPE).`;

export function openApiDocument(routes: readonly Route[], baseUrl: string): OpenApiDocument {
  const components = new SchemaComponents();
  const error = components.publish(ErrorSchema);
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    const path = `/${API_VERSION}${r.path}`;
    paths[path] ??= {};
    paths[path]![r.method.toLowerCase()] = operationOf(r, components, error);
  }
  const webhooks = Object.fromEntries(WEBHOOKS.map((w) => [w.name, { post: webhookOperationOf(w, components) }]));
  return {
    openapi: '3.1.0',
    info: { title: 'Payments and embedded-wallet API', version: API_VERSION, description: DESCRIPTION },
    servers: [{ url: baseUrl.replace(`/${API_VERSION}`, '') }],
    security: [{ basic: [] }],
    paths,
    webhooks,
    components: {
      securitySchemes: { basic: { type: 'http', scheme: 'basic', description: '<token id>:<client secret>' } },
      schemas: components.all(),
      parameters: PARAMETERS,
      headers: HEADERS,
    },
  };
}
