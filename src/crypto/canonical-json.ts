// The hash of a JSON body that does not depend on how it was written (key order, spacing):
// what an Idempotency-Key remembers of a request, and what a signed wallet request binds
// its stamp to (`bodySha256`).
import { createHash } from 'node:crypto';

/** SHA-256 of the body with object keys sorted, so formatting does not matter. */
export function requestHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

/**
 * JSON with object keys sorted, without recursion: the body has passed checkJsonShape, but
 * the hash must not depend on that to stay off the stack. Work items are values to render
 * or literal text; the stack holds at most the body's values.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const work: Array<{ value: unknown } | string> = [{ value }];
  for (let item = work.pop(); item !== undefined; item = work.pop()) {
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    const v = item.value;
    if (v === null || typeof v !== 'object') {
      out.push(JSON.stringify(v) ?? 'null');
      continue;
    }
    // Pushed in reverse, so they pop in order.
    const parts: Array<{ value: unknown } | string> = [];
    if (Array.isArray(v)) {
      parts.push('[');
      v.forEach((element, i) => {
        if (i > 0) parts.push(',');
        parts.push({ value: element });
      });
      parts.push(']');
    } else {
      const entries = Object.entries(v as Record<string, unknown>)
        .filter(([, e]) => e !== undefined)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      parts.push('{');
      entries.forEach(([k, e], i) => {
        parts.push(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`);
        parts.push({ value: e });
      });
      parts.push('}');
    }
    for (let i = parts.length - 1; i >= 0; i--) work.push(parts[i]!);
  }
  return out.join('');
}
