// A state's digest, which depends on nothing but the state (the log tool's replay, and tests
// comparing two rebuilt states), and the one JSON encoding of the tool's output and of the
// digests.
import { createHash } from 'node:crypto';
import type { Effect, IdempotencyRecord, Timer } from './state-machine.js';

/** A value that JSON can carry without loss. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * `value` as JSON can carry it, the one encoding of the tool's output and of state digests:
 * bytes (Buffer, Uint8Array) as {"$binary": base64}, bigints as {"$bigint": decimal},
 * non-finite numbers as {"$number": "NaN" | "Infinity" | "-Infinity"}, dates as ISO strings;
 * properties whose value is undefined are left out (as JSON.stringify does), undefined in an
 * array is null. With `sortKeys` every object's keys are in sorted order, so equal values
 * encode to equal text whatever order their properties were set in. Anything else (a Map, a
 * class instance) is refused rather than encoded lossily. With `uuids` (the tool's output, never
 * a digest), 16 bytes are {"$uuid": "8-4-4-4-12 hex"}: hot events carry ids as their UUID's
 * bytes (ids.ts, loggedId), and a reader looks for an id by its UUID.
 */
export function toJsonValue(value: unknown, sortKeys: boolean, uuids = false): JsonValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'boolean':
    case 'string':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : { $number: String(value) };
    case 'bigint':
      return { $bigint: value.toString() };
    case 'object':
      break;
    default:
      throw new TypeError(`cannot encode a ${typeof value} as JSON`);
  }
  if (value instanceof Uint8Array) {
    const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    return uuids && bytes.length === 16 ? { $uuid: uuidText(bytes) } : { $binary: bytes.toString('base64') };
  }
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item: unknown) => toJsonValue(item, sortKeys, uuids));
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw new TypeError(`cannot encode a ${value.constructor.name} as JSON`);
  const out: { [key: string]: JsonValue } = {};
  const keys = Object.keys(value);
  if (sortKeys) keys.sort();
  for (const key of keys) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) out[key] = toJsonValue(item, sortKeys, uuids);
  }
  return out;
}

function uuidText(bytes: Buffer): string {
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The state a replay rebuilt: the domain's records and the engine's pending items. */
export interface RebuiltState<T> {
  records: ReadonlyArray<readonly [string, unknown]>;
  timers: ReadonlyArray<Timer<T>>;
  effects: readonly Effect[];
  /** In insertion order. */
  idempotency: readonly IdempotencyRecord[];
}

export interface StateDigests {
  /** sha256 of the lines `records <hex>`, `timers <hex>`, `effects <hex>`, `idempotency <hex>`, each ending in a newline. */
  state: string;
  /** Per section, sha256 of its items' canonical JSON (toJsonValue with sorted keys), one line each. */
  records: string;
  timers: string;
  effects: string;
  idempotency: string;
}

function digestOfLines(items: Iterable<unknown>): string {
  const hash = createHash('sha256');
  for (const item of items) hash.update(JSON.stringify(toJsonValue(item, true)) + '\n');
  return hash.digest('hex');
}

function byId<V extends { id: string }>(items: readonly V[]): V[] {
  return [...items].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * A digest of a state that depends on nothing but the state: records as [id, record] sorted
 * by id, timers and effects sorted by id, idempotency records in insertion order (which
 * decides which go first), each item canonically encoded (toJsonValue with sorted keys).
 */
export function stateDigests<T>(state: RebuiltState<T>): StateDigests {
  const records = digestOfLines([...state.records].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
  const timers = digestOfLines(byId(state.timers));
  const effects = digestOfLines(byId(state.effects));
  const idempotency = digestOfLines(state.idempotency);
  const whole = createHash('sha256').update(`records ${records}\ntimers ${timers}\neffects ${effects}\nidempotency ${idempotency}\n`).digest('hex');
  return { state: whole, records, timers, effects, idempotency };
}
