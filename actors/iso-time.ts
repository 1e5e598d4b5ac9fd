// Timestamps are numbers in records and ISO-8601 strings in views. Rendering one is the
// costliest part of a small view, and a busy service renders the same millisecond many
// times over (every record a request creates shares its clock reading), so the last one
// is kept.
let lastMs = Number.NaN;
let lastIso = '';

/** `new Date(ms).toISOString()`, remembered for the last `ms`. */
export function isoTime(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
