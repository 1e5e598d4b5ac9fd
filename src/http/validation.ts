// Schema-first validation: a route's typebox schema is compiled once, checks the input,
// types the handler's argument and is published in the OpenAPI document. Failures name
// every offending field as a dotted path.
import { Kind, Type, type Static, type TSchema, type StringOptions, type ArrayOptions, type ObjectOptions, type TProperties } from '@sinclair/typebox';
import { TypeCompiler, ValueErrorType, type TypeCheck, type ValueError } from '@sinclair/typebox/compiler';
import { Value } from '@sinclair/typebox/value';
import { invalidField, invalidInput, type FieldProblem } from '../../actors/errors.js';
import { CURRENCIES } from '../../actors/reference.js';

/** Limits of CONTRACT.md: strings up to 1,024 characters, arrays up to 100 items. */
export const MAX_STRING = 1024;
export const MAX_ITEMS = 100;

export const Str = (options: StringOptions = {}) => Type.String({ maxLength: MAX_STRING, ...options });

/**
 * One character of text the API takes: anything but the C0 and C1 controls and DEL (NUL,
 * tab and the line breaks among them), the line and paragraph separators, and the Unicode
 * bidirectional controls (marks, embeddings, overrides, isolates). Names, address lines and
 * descriptions are shown in dashboards, bank files, e-mails and logs, where such a
 * character truncates the value (NUL), forges a line (a line break) or shows the text in
 * an order other than the one stored (U+202E); none of them is single-line text. A
 * bracket expression of escapes, so a JSON Schema reader of the document (with or without
 * the `u` flag) reads the same rule.
 */
export const TEXT_CHARACTER = '[^\\u0000-\\u001F\\u007F-\\u009F\\u061C\\u200E\\u200F\\u2028\\u2029\\u202A-\\u202E\\u2066-\\u2069]';
export const TEXT_PATTERN = `^${TEXT_CHARACTER}*$`;
/** What a string failing TEXT_PATTERN is told. */
export const TEXT_RULE = 'must not contain control characters (such as NUL, tab or a line break) or bidirectional-override characters';
/**
 * Every string a request carries that no stricter pattern (an id, a code) shapes: free text
 * (names, address lines, descriptions) and the opaque strings (tokens, cursors, URLs).
 * test/http-input-hygiene.test.ts holds every string of the published requests to it.
 */
export const Text = (options: Omit<StringOptions, 'pattern'> = {}) => Str({ ...options, pattern: TEXT_PATTERN });

/** What a record refusing a property name tells, by the pattern of its names. */
const NAME_RULES = new Map<string, string>();

/**
 * A map under names the client chooses: each name 1 to `maxNameLength` characters of text.
 * The names' pattern is the whole rule (a record keeps no lengths of its key schema), and a
 * name outside it is refused, not let through unchecked; the 400 names the map.
 */
export function TextRecord<V extends TSchema>(value: V, maxNameLength: number, options: ObjectOptions = {}) {
  const names = `^${TEXT_CHARACTER}{1,${maxNameLength}}$`;
  NAME_RULES.set(names, `property names must be 1 to ${maxNameLength} characters and ${TEXT_RULE.replace(/^must /, '')}`);
  return Type.Record(Type.String({ pattern: names }), value, { ...options, additionalProperties: false });
}

export const List = <T extends TSchema>(item: T, options: ArrayOptions = {}) => Type.Array(item, { maxItems: MAX_ITEMS, ...options });
/**
 * The options of a published schema: a `description`, and an `$id` that names it, making it
 * a component of the OpenAPI document that every use refers to (see openapi.ts).
 */
export interface SchemaNaming {
  description?: string;
  $id?: string;
}

/** An object that ignores unknown properties (they are not kept either). */
export const Obj = <T extends TProperties>(properties: T, options: SchemaNaming = {}) => Type.Object(properties, options);
export const DateString = (options: StringOptions = {}) =>
  Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', maxLength: 10, description: 'YYYY-MM-DD', ...options });
/** A query's time bound: an ISO 8601 date-time with its zone, or a bare date meaning midnight UTC; read with `instant`. */
export const DateTime = Text({ maxLength: 64, description: 'ISO 8601 date-time (or YYYY-MM-DD, midnight UTC), inclusive' });
const DATE_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** A DateTime as epoch ms; anything else is a 400 naming `field`. */
export function instant(field: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = Date.parse(text);
  if (!DATE_TIME.test(text) || Number.isNaN(ms)) throw invalidField(field, 'must be an ISO 8601 date-time such as 2025-10-13T00:00:00Z');
  return ms;
}

/** A currency code the service knows (the schema checks only its shape); else a 400 naming `field`. */
export function checkKnownCurrency(code: string, field = 'currency'): void {
  if (!CURRENCIES.has(code)) throw invalidField(field, `unknown currency code ${code}`);
}

export const Country = (options: StringOptions = {}) =>
  Type.String({ pattern: '^[A-Z]{2}$', minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2', ...options });

export interface Validator<T> {
  readonly schema: TSchema;
  /** Returns the value typed, or throws a 400 naming the fields. */
  parse(value: unknown): T;
}

/** The type a validator's `parse` gives. */
export type Parsed<V> = V extends Validator<infer T> ? T : never;

/** A schema's compiled checks: the schema itself, and the form of it that refuses unknown properties (undefined: see `refusingUnknown`). */
interface CompiledChecks<S extends TSchema> {
  readonly check: TypeCheck<S>;
  readonly clean: TypeCheck<TSchema> | undefined;
}

function compiledChecks<S extends TSchema>(schema: S): CompiledChecks<S> {
  const strict = refusingUnknown(schema);
  return { check: TypeCompiler.Compile(schema), clean: strict === undefined ? undefined : TypeCompiler.Compile(strict) };
}

export function validator<S extends TSchema>(schema: S, options: { coerce?: boolean } = {}): Validator<Static<S>> {
  // Compiled at the first value parsed, not when the routes' modules load: the service
  // declares over a hundred validators, and compiling them all took about a tenth of a
  // second of every start, before a single request (most routes are never called in a run).
  let compiled: CompiledChecks<S> | undefined;
  return {
    schema,
    parse(value: unknown): Static<S> {
      const { check, clean } = (compiled ??= compiledChecks(schema));
      const input = options.coerce === true ? coerceQuery(schema, value) : value;
      if (!check.Check(input)) throw invalidInput(fieldErrors(check, input));
      // Most requests carry no unknown property: a compiled check says so, where
      // Value.Clean walks the value with the interpreted checker (about 8 µs a payment's
      // body). The input is freshly parsed and owned by this request: unknown properties
      // are dropped in place rather than on a copy.
      if (clean !== undefined && clean.Check(input)) return input;
      return Value.Clean(schema, input) as Static<S>;
    },
  };
}

/** Kinds Value.Clean gives back as they are. */
const CLEAN_AS_THEY_ARE: ReadonlySet<string> = new Set(['String', 'Number', 'Integer', 'Boolean', 'Literal', 'Null', 'Unknown']);

/**
 * `schema` refusing exactly what Value.Clean would drop from a value it accepts: every
 * object refuses properties it does not name. Undefined when some part is one whose
 * cleaning is more than that (an object with a schema for other properties, a union with
 * an object or array among its forms, which Clean cleans by the first form that fits, an
 * intersection, a reference): such a schema is always cleaned.
 */
export function refusingUnknown(schema: TSchema): TSchema | undefined {
  const kind = schema[Kind] as string;
  if (CLEAN_AS_THEY_ARE.has(kind)) return schema;
  switch (kind) {
    case 'Object': {
      if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return undefined;
      const properties: Record<string, TSchema> = {};
      for (const [name, property] of Object.entries(schema.properties as Record<string, TSchema>)) {
        const refusing = refusingUnknown(property);
        if (refusing === undefined) return undefined;
        properties[name] = refusing;
      }
      return { ...schema, properties, additionalProperties: false };
    }
    case 'Array': {
      const items = refusingUnknown(schema.items as TSchema);
      return items === undefined ? undefined : { ...schema, items };
    }
    case 'Record': {
      if (schema.additionalProperties !== false) return undefined;
      const patternProperties: Record<string, TSchema> = {};
      for (const [pattern, value] of Object.entries(schema.patternProperties as Record<string, TSchema>)) {
        const refusing = refusingUnknown(value);
        if (refusing === undefined) return undefined;
        patternProperties[pattern] = refusing;
      }
      return { ...schema, patternProperties };
    }
    case 'Union':
      return (schema.anyOf as TSchema[]).every((form) => CLEAN_AS_THEY_ARE.has(form[Kind] as string)) ? schema : undefined;
    default:
      return undefined;
  }
}

/**
 * Query strings carry text: integers and booleans are converted only when the text is
 * exactly one (`12`, `true`), so `1.5` or `1e1` stay strings and fail validation instead
 * of being truncated.
 */
function coerceQuery(schema: TSchema, value: unknown): unknown {
  if (value === null || typeof value !== 'object') return value;
  const properties = (schema.properties ?? {}) as Record<string, TSchema>;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const [name, raw] of Object.entries(out)) {
    const type = properties[name]?.type;
    if (typeof raw !== 'string') continue;
    if (type === 'integer' && /^-?(0|[1-9]\d{0,15})$/.test(raw)) out[name] = Number(raw);
    else if (type === 'boolean' && (raw === 'true' || raw === 'false')) out[name] = raw === 'true';
  }
  return out;
}

function fieldErrors<S extends TSchema>(check: TypeCheck<S>, value: unknown): FieldProblem[] {
  const byField = new Map<string, string>();
  for (const error of check.Errors(value)) {
    // A record's refused name is reported on the record: the name may be anything.
    const path = error.type === ValueErrorType.ObjectAdditionalProperties ? error.path.slice(0, error.path.lastIndexOf('/')) : error.path;
    const field = path === '' ? 'body' : path.slice(1).replaceAll('/', '.');
    if (!byField.has(field)) byField.set(field, describe(error));
    if (byField.size >= 20) break;
  }
  return [...byField].map(([field, message]) => ({ field, message }));
}

function describe(error: ValueError): string {
  const { schema } = error;
  if (error.type === ValueErrorType.StringPattern && schema.pattern === TEXT_PATTERN) return TEXT_RULE;
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const names = Object.keys((schema.patternProperties ?? {}) as object)[0];
    const rule = names === undefined ? undefined : NAME_RULES.get(names);
    if (rule !== undefined) return rule;
  }
  const allowed = (schema as { enum?: unknown[] }).enum;
  if (Array.isArray(allowed)) return `must be one of ${allowed.join(', ')}`;
  if (typeof schema.anyOf === 'object' && Array.isArray(schema.anyOf)) {
    const consts = (schema.anyOf as Array<{ const?: unknown }>).map((s) => s.const).filter((c) => c !== undefined);
    if (consts.length > 0) return `must be one of ${consts.join(', ')}`;
    const within = errorOfItsForm(error);
    if (within !== undefined) return describe(within);
  }
  return error.message;
}

const KIND_MISMATCHES: ReadonlySet<ValueErrorType> = new Set([ValueErrorType.String, ValueErrorType.Integer, ValueErrorType.Number, ValueErrorType.Boolean, ValueErrorType.Object, ValueErrorType.Array]);

/**
 * A union of forms (a range token or a count) refused: the error of the form the value has
 * (too large a count, a token with a control character) says more than "no form fits".
 */
function errorOfItsForm(error: ValueError): ValueError | undefined {
  for (const form of error.errors) {
    const first = form.First();
    if (first !== undefined && !KIND_MISMATCHES.has(first.type)) return first;
  }
  return undefined;
}

/** A string enum: a union of literals, whose errors list the allowed values. */
export function StringEnum<T extends string>(values: readonly T[], options: SchemaNaming = {}) {
  return Type.Union(values.map((v) => Type.Literal(v)), options);
}

/** Request bodies nest at most this deep (the body object itself is level 1). */
export const MAX_DEPTH = 32;

const isWellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * One pass over a parsed body: refuses nesting past MAX_DEPTH and strings or keys with lone
 * surrogates, which UTF-8 storage would turn into U+FFFD, so recovery would not rebuild
 * what was acknowledged. A lone surrogate can only come from a `\uD800`-`\uDFFF` escape
 * (the body was strict UTF-8), so `text` without one skips those checks. Recursion is
 * bounded: it goes no deeper than MAX_DEPTH levels. The field path of a problem is built
 * only once one is found.
 */
export function checkJsonShape(body: unknown, text: string): void {
  const problem = shapeProblem(body, 0, SURROGATE_ESCAPE.test(text));
  if (problem === undefined) return;
  if (problem.kind === 'depth') throw invalidInput([{ field: 'body', message: `must not nest deeper than ${MAX_DEPTH} levels` }]);
  const field = problem.path.length === 0 ? 'body' : problem.path.join('.');
  if (problem.kind === 'key') throw invalidInput([{ field, message: 'property names must be well-formed Unicode (no lone surrogates)' }]);
  throw invalidInput([{ field, message: 'must be well-formed Unicode (no lone surrogates)' }]);
}

const SURROGATE_ESCAPE = /\\u[dD][89abcdefABCDEF]/;

/** A string or key that is not well-formed (`path` leads to it, or to the key's object), or nesting too deep. */
type ShapeProblem = { kind: 'depth' } | { kind: 'string' | 'key'; path: string[] };

function shapeProblem(value: unknown, depth: number, surrogates: boolean): ShapeProblem | undefined {
  if (typeof value === 'string') return surrogates && !isWellFormed(value) ? { kind: 'string', path: [] } : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  if (depth >= MAX_DEPTH) return { kind: 'depth' };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = shapeProblem(value[i], depth + 1, surrogates);
      if (problem !== undefined) return within(problem, String(i));
    }
    return undefined;
  }
  const object = value as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    if (surrogates && !isWellFormed(key)) return { kind: 'key', path: [] };
    const problem = shapeProblem(object[key], depth + 1, surrogates);
    if (problem !== undefined) return within(problem, key);
  }
  return undefined;
}

function within(problem: ShapeProblem, step: string): ShapeProblem {
  if (problem.kind !== 'depth') problem.path.unshift(step);
  return problem;
}
