import { DAY_MS } from '../../platform/util/time';

export const PERIODS = ['day', 'week', 'month', 'year'] as const;
export type Period = (typeof PERIODS)[number];

/** `at_ms` moved by whole months in UTC, the day clamped to the target month's end (Jan 31 + 1 → Feb 28/29). */
export function addMonths(at_ms: number, months: number): number {
  const d = new Date(at_ms);
  const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months;
  const year = Math.floor(total / 12);
  const month = total - year * 12;
  // Day 0 of the next month is the target month's last.
  const day = Math.min(d.getUTCDate(), new Date(Date.UTC(year, month + 1, 0)).getUTCDate());
  return Date.UTC(year, month, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/** Anchor plus n × interval periods: from the anchor, so a clamped month returns to its day (Jan 31 → Feb 28 → Mar 31). */
export function chargeTime(anchor_ms: number, period: Period, interval: number, n: number): number {
  const steps = interval * n;
  switch (period) {
    case 'day':
      return anchor_ms + steps * DAY_MS;
    case 'week':
      return anchor_ms + steps * 7 * DAY_MS;
    case 'month':
      return addMonths(anchor_ms, steps);
    case 'year':
      return addMonths(anchor_ms, steps * 12);
  }
}

/** The smallest n ≥ `from` whose charge time is strictly after `after_ms` (periods missed meanwhile are skipped). */
export function firstIndexAfter(anchor_ms: number, period: Period, interval: number, from: number, after_ms: number): number {
  let n = from;
  // Bounded: a retry window is days long, so at most a handful of daily periods are ever skipped.
  while (chargeTime(anchor_ms, period, interval, n) <= after_ms && n < from + 10_000) n++;
  return n;
}
