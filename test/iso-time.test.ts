// The times every view shows (createdAt, updatedAt, expiresAt, webhook timestamps) are
// written by isoTime, which remembers the day and writes the time of day itself: it must
// give exactly what Date.prototype.toISOString gives, whatever order times come in.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isoTime } from '../actors/iso-time.js';

const DATE_RANGE_MS = 8.64e15;

describe('isoTime', () => {
  it('writes any time as toISOString does, in any order of calls (days, years, before 1970, six-digit years)', () => {
    const near = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) });
    const any = fc.integer({ min: -DATE_RANGE_MS, max: DATE_RANGE_MS });
    fc.assert(
      fc.property(fc.array(fc.oneof(near, any, fc.constantFrom(0, -1, Date.parse('0000-01-01T00:00:00.000Z'), Date.UTC(9999, 11, 31, 23, 59, 59, 999), Date.UTC(10_000, 0, 1))), { minLength: 1, maxLength: 20 }), (times) => {
        for (const ms of times) assert.equal(isoTime(ms), new Date(ms).toISOString());
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses what toISOString refuses', () => {
    assert.throws(() => isoTime(Number.NaN), RangeError);
    assert.throws(() => isoTime(DATE_RANGE_MS + 1), RangeError);
  });
});
