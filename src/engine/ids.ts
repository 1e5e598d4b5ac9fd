// Record ids are `<Kind>:<UUIDv7>` (CONTRACT.md) so that they sort by creation time.
// Within one millisecond a 12-bit counter in rand_a keeps them strictly increasing
// (RFC 9562, section 6.2, method 1); random bytes come from a refilled pool because
// one randomBytes call per id would dominate id generation. The pool is filled from the
// process's Entropy (entropy.ts): the system's CSPRNG, or a simulation's seeded source.
import { currentEntropy, type Entropy } from './entropy.js';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;
/** The source the pool and the sequence come from; another one (`useEntropy`) restarts both. */
let poolSource: Entropy | undefined;
let lastMs = -1;
let counter = 0;

/**
 * The sequence starts afresh on a new source (no pooled bytes, no last millisecond): after
 * `useEntropy(seededEntropy(n))` the ids made at the same times are the same on every run.
 */
function followSource(): void {
  const source = currentEntropy();
  if (source === poolSource) return;
  poolSource = source;
  poolOffset = POOL_BYTES;
  lastMs = -1;
  counter = 0;
}

/**
 * Where the next `n` random bytes start in `pool` (refilled when fewer are left): an offset,
 * not a subarray, since a Buffer view costs Node 20 about 0.2 µs to make and ids take two.
 */
function randomAt(n: number): number {
  if (poolOffset + n > POOL_BYTES) {
    poolSource!.fill(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += n;
  return at;
}

/** Each byte's two lowercase hex digits as char codes. */
const HEX_CODES = new Uint8Array(512);
for (let i = 0; i < 256; i++) {
  const digits = i.toString(16).padStart(2, '0');
  HEX_CODES[2 * i] = digits.charCodeAt(0);
  HEX_CODES[2 * i + 1] = digits.charCodeAt(1);
}
/** Where an id's text is written before it is read as one string (a kind's name, ':' and 36 characters fit). */
const ID_TEXT = Buffer.alloc(64);

/**
 * `<prefix>:` (or nothing for '') and the UUID of `bytes` (8-4-4-4-12 lowercase hex) as one
 * flat string, written into a buffer and read once: built by concatenation it was a rope
 * of twenty pieces, which V8 copies flat at the id's first hash and leaves to the collector.
 */
function uuidText(prefix: string, bytes: ArrayLike<number>): string {
  let at = prefix === '' ? 0 : ID_TEXT.write(prefix, 0, 'latin1');
  if (prefix !== '') ID_TEXT[at++] = 0x3a;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) ID_TEXT[at++] = 0x2d;
    const byte = bytes[i]!;
    ID_TEXT[at++] = HEX_CODES[2 * byte]!;
    ID_TEXT[at++] = HEX_CODES[2 * byte + 1]!;
  }
  return ID_TEXT.toString('latin1', 0, at);
}

const UUID = new Uint8Array(16);

/** The bytes of a UUIDv7 whose timestamp is `ms` (in a buffer reused by the next call). */
function uuidv7Bytes(ms: number): Uint8Array {
  followSource();
  if (ms > lastMs) {
    lastMs = ms;
    counter = pool[randomAt(1)]! & 0x7f;
  } else {
    counter++;
    if (counter > 0xfff) {
      // Counter exhausted: borrow the next millisecond rather than break ordering.
      lastMs++;
      counter = 0;
    }
  }
  const t = lastMs;
  const rand = randomAt(8);
  const b = UUID;
  b[0] = Math.floor(t / 2 ** 40) & 0xff;
  b[1] = Math.floor(t / 2 ** 32) & 0xff;
  b[2] = (t >>> 24) & 0xff;
  b[3] = (t >>> 16) & 0xff;
  b[4] = (t >>> 8) & 0xff;
  b[5] = t & 0xff;
  b[6] = 0x70 | (counter >>> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (pool[rand]! & 0x3f);
  for (let i = 1; i < 8; i++) b[8 + i] = pool[rand + i]!;
  return b;
}

/** A UUIDv7 whose timestamp is `ms`; never smaller than the previous one from this process (on one Entropy). */
export function uuidv7(ms: number): string {
  return uuidText('', uuidv7Bytes(ms));
}

export type IdKind =
  | 'Customer'
  | 'InternalAccount'
  | 'ExternalAccount'
  | 'Quote'
  | 'Transaction'
  | 'AuthMethod'
  | 'Session'
  | 'Request'
  | 'Wallet'
  | 'PlatformConfig'
  | 'Lookup'
  | 'Platform'
  | 'Webhook'
  | 'Verification'
  | 'BeneficialOwner'
  | 'Document'
  | 'Job'
  | 'Token'
  | 'Timer'
  | 'Effect';

export function newId(kind: IdKind, ms: number): string {
  return uuidText(kind, uuidv7Bytes(ms));
}

/**
 * A new id whose UUID ends in the byte 00: the ids derived from it differ in that byte
 * only (actors/derived-ids.ts). Still unique: the timestamp and counter bytes are.
 */
export function newBaseId(kind: IdKind, ms: number): string {
  const bytes = uuidv7Bytes(ms);
  bytes[15] = 0;
  return uuidText(kind, bytes);
}

/**
 * The millisecond a `<Kind>:<UUIDv7>` id's timestamp says (its first 48 bits); undefined for an
 * id of any other shape. Not always the time the id was drawn at: a clock that stepped back, or
 * a millisecond whose counter ran out, gives the last millisecond used (uuidv7Bytes).
 */
export function idTimeOf(id: string): number | undefined {
  const at = id.indexOf(':') + 1;
  if (at === 0 || id.length !== at + 36 || id.charCodeAt(at + 8) !== 0x2d) return undefined;
  let ms = 0;
  for (let i = 0; i < 13; i++) {
    if (i === 8) continue;
    const digit = hexValue(id.charCodeAt(at + i));
    if (digit < 0) return undefined;
    ms = ms * 16 + digit;
  }
  return ms;
}

/** First index in `sorted` (ascending) whose id is not smaller than `id`. */
export function lowerBound(sorted: readonly string[], id: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * An id as a hot log event carries it: a `<Kind>:<UUID>` id as the UUID's 16 bytes, the
 * kind implied by the field that holds it (about 50 bytes become 18 in msgpack), and any
 * other id (a legacy or derived shape, or another kind than the field's) as its string.
 */
export type LoggedId = Uint8Array | string;

/** Each ASCII char code's value as a lowercase hex digit, -1 for any other. */
const HEX_VALUES = new Int8Array(128).fill(-1);
for (let digit = 0; digit < 16; digit++) HEX_VALUES['0123456789abcdef'.charCodeAt(digit)] = digit;

/**
 * The value of a lowercase hex digit's char code, -1 for any other (NaN, past a string's
 * end, included). A table: two range tests per digit made `loggedId`'s 32 digits about
 * 170 ns an id against 100.
 */
export function hexValue(code: number): number {
  return code < 128 ? HEX_VALUES[code]! : -1;
}

/**
 * The ids most recently made bytes, with their bytes and kind: a decision logs an id it has
 * just made bytes of again (a quote executed as it is made names it twice), and the apply
 * that follows reads each back (idOf). A hit gives the same bytes, or the very string the id
 * was made from, instead of parsing the text or writing it out again; replay's bytes are
 * new objects and miss. Bytes are never changed once made (log events are immutable).
 */
const RECENT_IDS = 8;
const recentText: Array<string | undefined> = new Array<string | undefined>(RECENT_IDS).fill(undefined);
const recentKind: Array<IdKind | undefined> = new Array<IdKind | undefined>(RECENT_IDS).fill(undefined);
const recentBytes: Array<Uint8Array | undefined> = new Array<Uint8Array | undefined>(RECENT_IDS).fill(undefined);
let recentNext = 0;

/**
 * `id` in its logged form; only an id that `idOf(…, kind)` gives back exactly (a canonical
 * lowercase UUID after `<kind>:`) is made bytes. Read in one pass over the char codes: a
 * regular expression, a slice and Buffer.from(hex) made it a few microseconds per id on the
 * payment path, which logs several.
 */
export function loggedId(id: string, kind: IdKind): LoggedId {
  // The kind first: kinds are a few constant strings, while ids of one kind compare their text.
  for (let i = 0; i < RECENT_IDS; i++) if (recentKind[i] === kind && recentText[i] === id) return recentBytes[i]!;
  const start = kind.length + 1;
  if (id.length !== start + 36 || id.charCodeAt(kind.length) !== 0x3a || !id.startsWith(kind)) return id;
  const bytes = new Uint8Array(16);
  let at = start;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) {
      if (id.charCodeAt(at) !== 0x2d) return id;
      at++;
    }
    const high = hexValue(id.charCodeAt(at));
    const low = hexValue(id.charCodeAt(at + 1));
    if (high < 0 || low < 0) return id;
    bytes[i] = (high << 4) | low;
    at += 2;
  }
  recentText[recentNext] = id;
  recentKind[recentNext] = kind;
  recentBytes[recentNext] = bytes;
  recentNext = (recentNext + 1) % RECENT_IDS;
  return bytes;
}

/** The id a logged one stands for, in a field whose kind is `kind`. */
export function idOf(logged: LoggedId, kind: IdKind): string {
  if (typeof logged === 'string') return logged;
  for (let i = 0; i < RECENT_IDS; i++) if (recentBytes[i] === logged && recentKind[i] === kind) return recentText[i]!;
  return uuidText(kind, logged);
}
