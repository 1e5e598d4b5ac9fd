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

function randomChunk(n: number): Buffer {
  if (poolOffset + n > POOL_BYTES) {
    poolSource!.fill(pool);
    poolOffset = 0;
  }
  const chunk = pool.subarray(poolOffset, poolOffset + n);
  poolOffset += n;
  return chunk;
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** A UUIDv7 whose timestamp is `ms`; never smaller than the previous one from this process (on one Entropy). */
export function uuidv7(ms: number): string {
  followSource();
  if (ms > lastMs) {
    lastMs = ms;
    counter = randomChunk(1)[0]! & 0x7f;
  } else {
    counter++;
    if (counter > 0xfff) {
      // Counter exhausted: borrow the next millisecond rather than break ordering.
      lastMs++;
      counter = 0;
    }
  }
  const t = lastMs;
  const rand = randomChunk(8);
  const b = new Uint8Array(16);
  b[0] = Math.floor(t / 2 ** 40) & 0xff;
  b[1] = Math.floor(t / 2 ** 32) & 0xff;
  b[2] = (t >>> 24) & 0xff;
  b[3] = (t >>> 16) & 0xff;
  b[4] = (t >>> 8) & 0xff;
  b[5] = t & 0xff;
  b[6] = 0x70 | (counter >>> 8);
  b[7] = counter & 0xff;
  b[8] = 0x80 | (rand[0]! & 0x3f);
  for (let i = 1; i < 8; i++) b[8 + i] = rand[i]!;
  let s = '';
  for (let i = 0; i < 16; i++) {
    s += HEX[b[i]!];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
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
  | 'Timer'
  | 'Effect';

export function newId(kind: IdKind, ms: number): string {
  return `${kind}:${uuidv7(ms)}`;
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

const CANONICAL_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `id` in its logged form; only an id that `idOf(…, kind)` gives back exactly is made bytes. */
export function loggedId(id: string, kind: IdKind): LoggedId {
  const uuid = id.slice(kind.length + 1);
  if (id.length !== kind.length + 37 || id.charCodeAt(kind.length) !== 0x3a || !id.startsWith(kind) || !CANONICAL_UUID.test(uuid)) return id;
  return Buffer.from(uuid.replaceAll('-', ''), 'hex');
}

/** The id a logged one stands for, in a field whose kind is `kind`. */
export function idOf(logged: LoggedId, kind: IdKind): string {
  if (typeof logged === 'string') return logged;
  let s = `${kind}:`;
  for (let i = 0; i < 16; i++) {
    s += HEX[logged[i]!];
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
}
