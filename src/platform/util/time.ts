/** RFC 3339 UTC with milliseconds, e.g. `2026-11-21T08:49:23.123Z`. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** RFC 3339 of a nullable time, or null. */
export function isoOrNull(ms: number | null | undefined): string | null {
  return ms == null ? null : iso(ms);
}

/** Parse a `YYYY-MM-DD` UTC day; returns the day's first millisecond or null when malformed. */
export function parseDay(text: string): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return null;
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if (Number.isNaN(ms) || iso(ms).slice(0, 10) !== text) return null;
  return ms;
}

export const DAY_MS = 86_400_000;
