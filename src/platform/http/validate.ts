import { badRequest } from './errors';

/** Largest amount accepted, in minor units. */
export const MAX_AMOUNT = 1_000_000_000_000;

/** The body as a plain object with only the allowed fields; a missing body reads as `{}`. */
export function bodyObject(body: unknown, allowed: readonly string[]): Record<string, unknown> {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw badRequest('Request body must be a JSON object');
  }
  const obj = body as Record<string, unknown>;
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) {
      throw badRequest(`Unknown field "${k}"; ${allowed.length ? `allowed: ${allowed.join(', ')}` : 'this request takes no body fields'}`, k);
    }
  }
  return obj;
}

/** An amount: a JSON integer in 1..10^12 (`allowZero` admits 0). */
export function amountField(obj: Record<string, unknown>, name: string, required: boolean, allowZero = false): number | undefined {
  const v = obj[name];
  if (v === undefined || v === null) {
    if (required) throw badRequest(`Field "${name}" is required`, name);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) {
    throw badRequest(`Field "${name}" must be an integer of minor units, got ${describe(v)}`, name);
  }
  if (v === 0 && allowZero) return 0;
  if (v < 1 || v > MAX_AMOUNT) throw badRequest(`Field "${name}" must be between 1 and ${MAX_AMOUNT}, got ${v}`, name);
  return v;
}

/** An integer field within bounds. */
export function intField(obj: Record<string, unknown>, name: string, opts: { required?: boolean; min: number; max: number }): number | undefined {
  const v = obj[name];
  if (v === undefined || v === null) {
    if (opts.required) throw badRequest(`Field "${name}" is required`, name);
    return undefined;
  }
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw badRequest(`Field "${name}" must be an integer, got ${describe(v)}`, name);
  if (v < opts.min || v > opts.max) throw badRequest(`Field "${name}" must be between ${opts.min} and ${opts.max}, got ${v}`, name);
  return v;
}

/** A string field, optionally bounded and matched. */
export function strField(
  obj: Record<string, unknown>,
  name: string,
  opts: { required?: boolean; max?: number; pattern?: RegExp; patternHint?: string; allowEmpty?: boolean } = {},
): string | undefined {
  const v = obj[name];
  if (v === undefined || v === null) {
    if (opts.required) throw badRequest(`Field "${name}" is required`, name);
    return undefined;
  }
  if (typeof v !== 'string') throw badRequest(`Field "${name}" must be a string, got ${describe(v)}`, name);
  if (!opts.allowEmpty && v.length === 0) {
    if (opts.required) throw badRequest(`Field "${name}" must not be empty`, name);
    return undefined;
  }
  const max = opts.max ?? 1000;
  if (v.length > max) throw badRequest(`Field "${name}" must be at most ${max} characters, got ${v.length}`, name);
  if (opts.pattern && !opts.pattern.test(v)) {
    throw badRequest(`Field "${name}" must be ${opts.patternHint ?? `of the form ${opts.pattern}`}, got "${v.slice(0, 64)}"`, name);
  }
  return v;
}

/** A control character (U+0000–U+001F, U+007F) written raw; percent-encoded (`%0d%0a`) it is data of the URL. */
const URL_CONTROL_RE = /[\u0000-\u001F\u007F]/;

/**
 * The first control character written raw in a URL, as `U+000D`, or null when there is none. The URL parser
 * drops CR, LF and tab without a word, so `https://a.test/\r\nSet-Cookie: x=1` parses; stored as sent, it would
 * reach a Location header or a log line. Every URL field of the API is checked with it.
 */
export function urlControlChar(v: string): string | null {
  const m = URL_CONTROL_RE.exec(v);
  return m ? 'U+' + m[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0') : null;
}

/** An enum field. */
export function enumField<T extends string>(obj: Record<string, unknown>, name: string, values: readonly T[], def?: T): T | undefined {
  const v = obj[name];
  if (v === undefined || v === null) return def;
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    throw badRequest(`Field "${name}" must be one of ${values.join(', ')}, got ${describe(v)}`, name);
  }
  return v as T;
}

/** A currency: RUB only for now. */
export function currencyField(obj: Record<string, unknown>, name = 'currency'): 'RUB' {
  const v = obj[name];
  if (v === undefined || v === null) return 'RUB';
  if (v !== 'RUB') throw badRequest(`Field "${name}" must be "RUB", got ${describe(v)}`, name);
  return 'RUB';
}

/** A short, safe description of a value for an error message. */
export function describe(v: unknown): string {
  if (typeof v === 'string') return `"${v.slice(0, 64)}"`;
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return String(v);
}
