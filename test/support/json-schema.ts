// A JSON Schema checker for the keywords the OpenAPI document uses, so tests can hold
// responses to the document as published (plain JSON, not typebox values). A keyword it
// does not know fails the check rather than passing silently.
export type JsonSchema = { [keyword: string]: unknown };

const ANNOTATIONS = new Set(['description', 'title', 'examples', 'default']);
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Resolves `#/...` references against `root`. */
function resolve(root: unknown, ref: string): JsonSchema {
  if (!ref.startsWith('#/')) throw new Error(`unsupported $ref ${ref}`);
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) node = (node as Record<string, unknown> | undefined)?.[part];
  if (node === undefined || node === null || typeof node !== 'object') throw new Error(`$ref ${ref} does not resolve`);
  return node as JsonSchema;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Every way `value` fails `schema`, as `path: problem` lines; empty when it conforms. */
export function schemaErrors(schema: JsonSchema, value: unknown, root: unknown, path = '$'): string[] {
  const errors: string[] = [];
  for (const [keyword, expected] of Object.entries(schema)) {
    if (ANNOTATIONS.has(keyword)) continue;
    switch (keyword) {
      case '$ref':
        errors.push(...schemaErrors(resolve(root, expected as string), value, root, path));
        break;
      case 'type': {
        const actual = typeOf(value);
        if (actual !== expected && !(expected === 'number' && actual === 'integer')) errors.push(`${path}: expected ${String(expected)}, got ${actual}`);
        break;
      }
      case 'const':
        if (value !== expected) errors.push(`${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(value)}`);
        break;
      case 'enum':
        if (!(expected as unknown[]).includes(value)) errors.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(expected)}`);
        break;
      case 'anyOf': {
        const branches = (expected as JsonSchema[]).map((branch) => schemaErrors(branch, value, root, path));
        if (!branches.some((e) => e.length === 0)) errors.push(`${path}: matches no anyOf branch (${branches.map((e) => e[0]).join('; ')})`);
        break;
      }
      case 'required':
        if (typeOf(value) === 'object') {
          for (const name of expected as string[]) if (!(name in (value as object))) errors.push(`${path}: lacks required ${name}`);
        }
        break;
      case 'properties':
        if (typeOf(value) === 'object') {
          for (const [name, sub] of Object.entries(expected as Record<string, JsonSchema>)) {
            const item = (value as Record<string, unknown>)[name];
            if (item !== undefined) errors.push(...schemaErrors(sub, item, root, `${path}.${name}`));
          }
        }
        break;
      case 'additionalProperties':
        if (expected === false && typeOf(value) === 'object') {
          const known = new Set(Object.keys((schema.properties ?? {}) as object));
          for (const name of Object.keys(value as object)) if (!known.has(name)) errors.push(`${path}: unpublished property ${name}`);
        } else if (typeof expected === 'object' && expected !== null && typeOf(value) === 'object') {
          // A map: every property not named in `properties` must match the given schema.
          const known = new Set(Object.keys((schema.properties ?? {}) as object));
          for (const [name, item] of Object.entries(value as Record<string, unknown>)) {
            if (!known.has(name)) errors.push(...schemaErrors(expected as JsonSchema, item, root, `${path}.${name}`));
          }
        } else if (expected !== false && typeof expected !== 'object') {
          throw new Error(`unsupported additionalProperties ${JSON.stringify(expected)}`);
        }
        break;
      case 'items':
        if (Array.isArray(value)) value.forEach((item, i) => errors.push(...schemaErrors(expected as JsonSchema, item, root, `${path}[${i}]`)));
        break;
      case 'maxItems':
        if (Array.isArray(value) && value.length > (expected as number)) errors.push(`${path}: more than ${String(expected)} items`);
        break;
      case 'minItems':
        if (Array.isArray(value) && value.length < (expected as number)) errors.push(`${path}: fewer than ${String(expected)} items`);
        break;
      case 'maxLength':
        if (typeof value === 'string' && [...value].length > (expected as number)) errors.push(`${path}: longer than ${String(expected)}`);
        break;
      case 'minLength':
        if (typeof value === 'string' && [...value].length < (expected as number)) errors.push(`${path}: shorter than ${String(expected)}`);
        break;
      case 'pattern':
        if (typeof value === 'string' && !new RegExp(expected as string).test(value)) errors.push(`${path}: ${JSON.stringify(value)} does not match ${String(expected)}`);
        break;
      case 'format':
        if (expected !== 'date-time') throw new Error(`unsupported format ${String(expected)}`);
        if (typeof value === 'string' && !DATE_TIME.test(value)) errors.push(`${path}: ${JSON.stringify(value)} is not a date-time`);
        break;
      case 'minimum':
        if (typeof value === 'number' && value < (expected as number)) errors.push(`${path}: below ${String(expected)}`);
        break;
      case 'maximum':
        if (typeof value === 'number' && value > (expected as number)) errors.push(`${path}: above ${String(expected)}`);
        break;
      default:
        throw new Error(`${path}: the schema uses ${keyword}, which this checker does not know`);
    }
  }
  return errors;
}
