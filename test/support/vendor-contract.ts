// The vendor's published contract for the second wave of operations
// (`../shared/spec/vendor/vendor-subset.json`, OpenAPI 3.1): what the vendor's clients parse.
// Tests hold each answer of those operations, and each webhook body, to the schema the
// document gives it, checked by Ajv (JSON Schema 2020-12, the dialect of OpenAPI 3.1).
//
// `discriminator` is left to `oneOf` itself (Ajv's own support refuses the `mapping` the
// document uses), and annotations Ajv does not know (`example`, `discriminator`) are ignored.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

const DOCUMENT_PATH = fileURLToPath(new URL('../../../../shared/spec/vendor/vendor-subset.json', import.meta.url));
const DOCUMENT_ID = 'vendor-subset.json';

interface Operation {
  operationId?: string;
  responses?: Record<string, { content?: Record<string, { schema?: object }> }>;
  requestBody?: { content?: Record<string, { schema?: object }> };
}
interface VendorDocument {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, Record<string, Operation>>;
}

/** The document as published, read once. */
export const vendorDocument: VendorDocument = JSON.parse(readFileSync(DOCUMENT_PATH, 'utf8')) as VendorDocument;

// ajv-formats is CommonJS: its default export arrives as the module object under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv2020) => void;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats(ajv);
ajv.addSchema({ ...vendorDocument, $id: DOCUMENT_ID });

const compiled = new Map<string, ValidateFunction>();

/** The validator of the JSON Pointer `pointer` into the document (`/components/schemas/ApiToken`). */
function validatorAt(pointer: string): ValidateFunction {
  let validate = compiled.get(pointer);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
    compiled.set(pointer, validate);
  }
  return validate;
}

const escape = (segment: string): string => segment.replace(/~/g, '~0').replace(/\//g, '~1');

/** Where the document gives `operationId`: its path and method. */
export function vendorOperation(operationId: string): { path: string; method: string; operation: Operation } {
  for (const [path, methods] of Object.entries(vendorDocument.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (operation.operationId === operationId) return { path, method, operation };
    }
  }
  throw new Error(`vendor-subset.json has no operation ${operationId}`);
}

/** Every way `value` fails the schema at `pointer`, as `path: message` lines; empty when it conforms. */
function problems(pointer: string, value: unknown): string[] {
  const validate = validatorAt(pointer);
  if (validate(value)) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath === '' ? '$' : e.instancePath}: ${e.message ?? e.keyword} ${JSON.stringify(e.params)}`);
}

/**
 * Asserts that `body`, answered by `operationId` with `status`, has the shape the vendor's
 * document gives that response (its `application/json` schema).
 */
export function assertVendorResponse(operationId: string, status: number, body: unknown): void {
  const { path, method, operation } = vendorOperation(operationId);
  const schema = operation.responses?.[String(status)]?.content?.['application/json']?.schema;
  if (schema === undefined) throw new Error(`vendor-subset.json gives ${operationId} no JSON body for ${status}`);
  const pointer = `/paths/${escape(path)}/${method}/responses/${status}/content/application~1json/schema`;
  const found = problems(pointer, body);
  assert.deepEqual(found, [], `${operationId} ${status} does not fit the vendor's schema:\n  ${found.join('\n  ')}\nbody: ${JSON.stringify(body)}`);
}

/** Asserts that `body` has the shape of the vendor's webhook `name` (`test-webhook`, `bulk-upload`, ...). */
export function assertVendorWebhook(name: string, body: unknown): void {
  const schema = vendorDocument.webhooks[name]?.['post']?.requestBody?.content?.['application/json']?.schema;
  if (schema === undefined) throw new Error(`vendor-subset.json has no webhook ${name}`);
  const found = problems(`/webhooks/${escape(name)}/post/requestBody/content/application~1json/schema`, body);
  assert.deepEqual(found, [], `webhook ${name} does not fit the vendor's schema:\n  ${found.join('\n  ')}\nbody: ${JSON.stringify(body)}`);
}

/** Asserts that `value` fits the named component schema (`ApiToken`, `Document`, ...). */
export function assertVendorSchema(name: string, value: unknown): void {
  const found = problems(`/components/schemas/${escape(name)}`, value);
  assert.deepEqual(found, [], `${name} does not fit the vendor's schema:\n  ${found.join('\n  ')}\nvalue: ${JSON.stringify(value)}`);
}
