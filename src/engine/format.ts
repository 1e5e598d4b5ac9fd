// The stored form of every log entry and snapshot value, in one place:
//
//   [format version: 1 byte][CRC-32 of the payload: 4 bytes, little-endian][msgpack payload]
//
// Replay verifies both before trusting a byte, so a damaged value is refused with its
// place named instead of being served as truth. A later format (a compact message form)
// gets the next version number and its own branch in `decodeStored`.
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';

export const FORMAT_VERSION = 1;
const HEADER_BYTES = 5;

// Plain msgpack maps: entries vary in shape, and shared record structures cost more to
// keep up than they save here (measured: 12.5 µs against 8 µs per entry). Embedded
// binary values are copied out, since lmdb may reuse the buffer it read them from.
const packr = new Packr({ useRecords: false, copyBuffers: true });

export class StoreCorruptError extends Error {
  constructor(where: string, problem: string) {
    super(`${where}: ${problem}; the store is damaged, refusing to start`);
  }
}

/** One encode and one checksum per value. */
export function encodeStored(value: unknown): Buffer {
  const payload = packr.pack(value);
  const out = Buffer.allocUnsafe(HEADER_BYTES + payload.length);
  out[0] = FORMAT_VERSION;
  out.writeUInt32LE(crc32(payload), 1);
  payload.copy(out, HEADER_BYTES);
  return out;
}

/** Verifies and decodes a stored value; `where` names it in the error (e.g. `log entry 42`). */
export function decodeStored(bytes: Uint8Array, where: string): unknown {
  if (bytes.length < HEADER_BYTES) throw new StoreCorruptError(where, `${bytes.length} bytes, shorter than the header`);
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = buf[0];
  if (version !== FORMAT_VERSION) throw new StoreCorruptError(where, `unknown format version ${version ?? 'none'}`);
  const payload = buf.subarray(HEADER_BYTES);
  const expected = buf.readUInt32LE(1);
  if (crc32(payload) !== expected) throw new StoreCorruptError(where, 'checksum mismatch');
  try {
    return packr.unpack(payload);
  } catch (err) {
    throw new StoreCorruptError(where, `undecodable payload (${err instanceof Error ? err.message : String(err)})`);
  }
}
