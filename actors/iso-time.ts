// Timestamps are numbers in records and ISO-8601 strings in views. Rendering one is the
// costliest part of a small view: `Date.prototype.toISOString` takes about a microsecond,
// and a payment's reply and webhooks render its created, updated and expiry times, which
// differ, so remembering the last string alone missed most of the time. The calendar part
// is remembered per day; the time of day is written from its numbers.
const DAY_MS = 86_400_000;
/** Years 0 to 9999 print as four digits; outside them toISOString's six-digit form is used. */
const FIRST_MS = Date.parse('0000-01-01T00:00:00.000Z');
const END_MS = Date.UTC(10_000, 0, 1);
const TWO_DIGITS = Array.from({ length: 60 }, (_, i) => String(i).padStart(2, '0'));
const THREE_DIGITS = Array.from({ length: 1000 }, (_, i) => String(i).padStart(3, '0'));

let lastMs = Number.NaN;
let lastIso = '';
let dayStart = Number.NaN;
/** `YYYY-MM-DDT` of the day that starts at `dayStart`. */
let dayPrefix = '';

/** `new Date(ms).toISOString()`, character for character. */
export function isoTime(ms: number): string {
  if (ms === lastMs) return lastIso;
  if (!(ms >= FIRST_MS && ms < END_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const start = Math.floor(ms / DAY_MS) * DAY_MS;
  if (start !== dayStart) {
    dayPrefix = new Date(start).toISOString().slice(0, 11);
    dayStart = start;
  }
  let rest = ms - start;
  const millis = rest % 1000;
  rest = (rest - millis) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  lastIso = `${dayPrefix}${TWO_DIGITS[hours]!}:${TWO_DIGITS[minutes]!}:${TWO_DIGITS[seconds]!}.${THREE_DIGITS[millis]!}Z`;
  lastMs = ms;
  return lastIso;
}
