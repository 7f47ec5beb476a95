// Amounts between kopek's integer kopecks and the provider's decimal strings ("1234.56"), in string arithmetic
// only: no floating point touches money.

/** Largest kopecks value written or read: 10^15 (a safe integer, far beyond any payout). */
const MAX_KOPECKS = 1_000_000_000_000_000;

/** Kopecks as the provider's "rubles.kk" string: 1 → "0.01", 100 → "1.00", 123456789 → "1234567.89". */
export function rublesOf(kopecks: number): string {
  if (!Number.isSafeInteger(kopecks) || kopecks < 0 || kopecks > MAX_KOPECKS) throw new Error(`cannot convert ${kopecks} kopecks: not a whole amount`);
  const digits = String(kopecks).padStart(3, '0');
  return `${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

/** The provider's decimal string as kopecks ("1.5" → 150, "10" → 1000); undefined for anything else. */
export function kopecksOf(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = /^(0|[1-9][0-9]{0,13})(?:\.([0-9]{1,2}))?$/.exec(value);
  if (!m) return undefined;
  const n = Number(`${m[1]}${(m[2] ?? '').padEnd(2, '0')}`);
  return Number.isSafeInteger(n) && n <= MAX_KOPECKS ? n : undefined;
}
