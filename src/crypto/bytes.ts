// Small byte helpers shared by the wallet cryptography modules. Everything here is
// strict: a helper that parses text rejects anything that is not exactly the encoding
// it names, instead of silently skipping characters the way Buffer.from(…, 'hex') does.

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/;
// Either alphabet (standard or URL-safe), optional padding; never both alphabets at once.
const BASE64_STD_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const BASE64_URL_RE = /^[A-Za-z0-9_-]*={0,2}$/;

export const utf8 = new TextEncoder();
const utf8Strict = new TextDecoder('utf-8', { fatal: true });

export function isHex(value: string): boolean {
  return HEX_RE.test(value);
}

/** Lowercase hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Decodes an even-length hex string (either case); throws on anything else. */
export function fromHex(hex: string, what = 'value'): Uint8Array {
  if (!isHex(hex)) throw new TypeError(`${what} must be an even-length hex string`);
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

/**
 * Decodes base64url or standard base64 (padding optional). Returns undefined for any
 * other input: characters outside one alphabet, a mixture of the two alphabets, a
 * length no encoder produces, or non-zero trailing bits (a non-canonical encoding).
 */
export function decodeBase64Loose(text: string): Uint8Array | undefined {
  if (!BASE64_STD_RE.test(text) && !BASE64_URL_RE.test(text)) return undefined;
  const bare = text.replace(/=+$/, '');
  if (bare.length % 4 === 1) return undefined;
  if (text.length !== bare.length && text.length % 4 !== 0) return undefined;
  const bytes = Buffer.from(bare.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  // Canonical check: re-encoding must give back the same characters (rejects stray bits).
  const again = bytes.toString('base64').replace(/=+$/, '');
  if (again !== bare.replace(/-/g, '+').replace(/_/g, '/')) return undefined;
  return new Uint8Array(bytes);
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

export function toBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

/** UTF-8 decode that throws on invalid sequences instead of inserting U+FFFD. */
export function decodeUtf8Strict(bytes: Uint8Array): string {
  return utf8Strict.decode(bytes);
}

export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

/** Big-endian unsigned integer of `length` bytes (RFC 9180 I2OSP). */
export function i2osp(value: number, length: number): Uint8Array {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError('i2osp: value must be a non-negative safe integer');
  const out = new Uint8Array(length);
  let v = value;
  for (let i = length - 1; i >= 0; i--) {
    out[i] = v % 256;
    v = Math.floor(v / 256);
  }
  if (v !== 0) throw new RangeError(`i2osp: ${value} does not fit in ${length} bytes`);
  return out;
}

export function bytesToBigInt(bytes: Uint8Array): bigint {
  return bytes.length === 0 ? 0n : BigInt('0x' + toHex(bytes));
}

export function bigIntToBytes(value: bigint, length: number): Uint8Array {
  const hex = value.toString(16);
  if (value < 0n || hex.length > length * 2) throw new RangeError(`integer does not fit in ${length} bytes`);
  return fromHex(hex.padStart(length * 2, '0'));
}

export function asBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? utf8.encode(data) : data;
}
