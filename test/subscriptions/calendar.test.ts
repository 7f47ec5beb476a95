import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addMonths, chargeTime, firstIndexAfter } from '../../src/money/subscriptions/calendar';

const at = (s: string): number => Date.parse(s);
const iso = (ms: number): string => new Date(ms).toISOString();

test('months clamp to the month end and return to the anchor day (Jan 31 → Feb 28/29 → Mar 31)', () => {
  const anchor = at('2027-01-31T10:15:00.123Z');
  const got = [1, 2, 3, 4, 13].map((n) => iso(chargeTime(anchor, 'month', 1, n)));
  assert.deepEqual(got, ['2027-02-28T10:15:00.123Z', '2027-03-31T10:15:00.123Z', '2027-04-30T10:15:00.123Z', '2027-05-31T10:15:00.123Z', '2028-02-29T10:15:00.123Z']);
});

test('years keep Feb 29 anchors on Feb 28 in common years and on Feb 29 in leap years', () => {
  const anchor = at('2028-02-29T00:00:00.000Z');
  assert.deepEqual([1, 4].map((n) => iso(chargeTime(anchor, 'year', 1, n))), ['2029-02-28T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
});

test('days and weeks are whole UTC days; interval_count multiplies the period', () => {
  const anchor = at('2027-03-27T23:30:00.000Z');
  assert.equal(iso(chargeTime(anchor, 'day', 1, 2)), '2027-03-29T23:30:00.000Z');
  assert.equal(iso(chargeTime(anchor, 'week', 2, 1)), '2027-04-10T23:30:00.000Z');
  assert.equal(iso(chargeTime(anchor, 'month', 3, 1)), '2027-06-27T23:30:00.000Z');
  assert.equal(iso(addMonths(at('2027-12-31T00:00:00.000Z'), 2)), '2028-02-29T00:00:00.000Z');
});

test('firstIndexAfter skips the periods a late success already passed', () => {
  const anchor = at('2027-01-01T00:00:00.000Z');
  assert.equal(firstIndexAfter(anchor, 'day', 1, 3, at('2027-01-04T00:00:00.000Z')), 4);
  assert.equal(firstIndexAfter(anchor, 'day', 1, 3, at('2027-01-03T12:00:00.000Z')), 3);
  assert.equal(firstIndexAfter(anchor, 'month', 1, 1, at('2027-01-05T00:00:00.000Z')), 1);
});
