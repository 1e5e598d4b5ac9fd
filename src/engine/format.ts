// The stored form of every log value and snapshot value, in one place:
//
//   [format version: 1 byte][CRC-32 of the payload: 4 bytes, little-endian][msgpack payload]
//
// Replay verifies both before trusting a byte, so a damaged value is refused with its
// place named instead of being served as truth.
//
// Versions (every one stays readable, so a store written by older code still replays):
//   1  plain msgpack maps: each value names every key of every object in it.
//   2  msgpack records (msgpackr's record extension, defined inline in each value): an
//      object shape is described once per value and later objects of that shape are
//      written as their values only. A log value holds a whole commit group, so entries
//      of one kind share their key names; decoding records is about twice as fast.
//   3  log groups only: version 2's msgpack records, with the group's hot events laid out
//      in rows after its entries (log-layout.ts). Snapshots stay version 2.
//   4  log groups only: version 3 whose rows may also hold ids, numbers and lists (a
//      payment's entry); a reader of version 3 would misread them, so it refuses them.
import { crc32 } from 'node:zlib';
import { Packr, Unpackr } from 'msgpackr';

export const FORMAT_VERSION = 2;
/** A log group with laid-out events (log-layout.ts): 3, or 4 when its rows hold kinds version 3 did not have. */
export type LaidOutVersion = 3 | 4;
type StoredVersion = 1 | 2 | LaidOutVersion;
const HEADER_BYTES = 5;

// Embedded binary values are copied out, since lmdb may reuse the buffer it read them
// from. No shared structures: every value decodes on its own, with a fresh decoder.
const packr = new Packr({ useRecords: true, copyBuffers: true });
// Version 1 must be read without records: with them, bytes 0x40-0x7f name a record, not
// the small integer they are in plain msgpack.
const plainUnpackr = new Unpackr({ useRecords: false, copyBuffers: true });
const recordUnpackr = new Unpackr({ useRecords: true, copyBuffers: true });

export class StoreCorruptError extends Error {
  /** Kept apart from the message so a tool that reads the store (src/engine/inspect.ts) can name them itself. */
  constructor(
    readonly where: string,
    readonly problem: string,
  ) {
    super(`${where}: ${problem}; the store is damaged, refusing to start`);
  }
}

/** One encode and one checksum per value, in the current format version (or the log's laid-out one). */
export function encodeStored(value: unknown, version: typeof FORMAT_VERSION | LaidOutVersion = FORMAT_VERSION): Buffer {
  const payload = packr.pack(value);
  const out = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  out[0] = version;
  out.writeUInt32LE(crc32(payload), 1);
  payload.copy(out, HEADER_BYTES);
  return out;
}

/**
 * Verifies a stored value's header and checksum without decoding it, and returns its version
 * and payload; `where` names it in the error (e.g. `log entry 42`).
 */
export function verifyStored(bytes: Uint8Array, where: string): { version: StoredVersion; payload: Buffer } {
  if (bytes.length < HEADER_BYTES) throw new StoreCorruptError(where, `${bytes.length} bytes, shorter than the header`);
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = buf[0];
  if (version !== 1 && version !== 2 && version !== 3 && version !== 4) throw new StoreCorruptError(where, `unknown format version ${version ?? 'none'}`);
  const payload = buf.subarray(HEADER_BYTES);
  const expected = buf.readUInt32LE(1);
  if (crc32(payload) !== expected) throw new StoreCorruptError(where, 'checksum mismatch');
  return { version, payload };
}

/**
 * Values decoded from bytes that never change, by those bytes: a store that hands out the
 * same buffer at every read of a value and never alters it (the simulation's disk, where one
 * process recovers the same snapshot chunks dozens of times) registers each value it keeps
 * (`immutableStored`), and a value is verified and decoded once, at its first read. Decoding
 * is a function of the bytes, so a later read gets what decoding them again would give, as
 * long as no reader changes a decoded value in place (records are immutable; a restore copies
 * what it amends). The value is frozen, so that such a change throws: unfrozen, it would
 * carry memory across a simulated crash (what a real restart loses) and could hide the very
 * bugs the simulation looks for. Frozen values cost a run about a tenth of what sharing them
 * saves (docs/bench.md, session 43). A damaged read is a buffer of its own (the disk serves
 * a flipped bit as a copy), verified and refused as any. Nothing registers a buffer in the
 * service: lmdb's buffers are reused.
 */
const decodedOnce = new WeakMap<Uint8Array, { version: StoredVersion; value: unknown } | null>();
let anyImmutable = false;
/** `bytes` will never change, and are read again as this same object: decode them once (see `decodedOnce`). */
export function immutableStored(bytes: Uint8Array): void {
  anyImmutable = true;
  if (!decodedOnce.has(bytes)) decodedOnce.set(bytes, null);
}

/** Freezes `value` and everything in it (a decoded value: arrays, plain objects, binary values). */
function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  // A typed array's elements cannot be frozen; binary values stay as they are.
  if (ArrayBuffer.isView(value)) return;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) deepFreeze(value[i]);
    return;
  }
  if (value instanceof Map) {
    for (const [k, v] of value) {
      deepFreeze(k);
      deepFreeze(v);
    }
    return;
  }
  for (const key in value) deepFreeze((value as Record<string, unknown>)[key]);
}

/** Verifies and decodes a stored value of any known version; `where` names it in the error (e.g. `log entry 42`). */
export function decodeStored(bytes: Uint8Array, where: string): unknown {
  return decodeVersioned(bytes, where).value;
}

/** `decodeStored` with the value's format version, for a reader that reads versions apart (the log's groups). */
export function decodeVersioned(bytes: Uint8Array, where: string): { version: StoredVersion; value: unknown } {
  if (anyImmutable) {
    const once = decodedOnce.get(bytes);
    if (once !== undefined) {
      if (once !== null) return once;
      const decoded = decodeFresh(bytes, where);
      deepFreeze(decoded.value);
      decodedOnce.set(bytes, decoded);
      return decoded;
    }
  }
  return decodeFresh(bytes, where);
}

function decodeFresh(bytes: Uint8Array, where: string): { version: StoredVersion; value: unknown } {
  const { version, payload } = verifyStored(bytes, where);
  try {
    return { version, value: version === 1 ? plainUnpackr.unpack(payload) : recordUnpackr.unpack(payload) };
  } catch (err) {
    throw new StoreCorruptError(where, `undecodable payload (${err instanceof Error ? err.message : String(err)})`);
  }
}
