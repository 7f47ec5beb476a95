import { badRequest } from './errors';

// Text the API takes in is well-formed Unicode without NUL, whatever the field: PostgreSQL cannot store U+0000
// in text (it answers an error where SQLite stores it), and a lone UTF-16 surrogate has no UTF-8 form (one driver
// writes U+FFFD for it, another keeps it). So both are refused at the parsers, for every field at once, before a
// handler sees the value and on either engine alike: JSON bodies (keys and values, at any depth), form bodies and
// query strings. A JSON body also names each key once per object: `{"amount":1,"amount":2}` means one amount to
// JSON.parse (the last) and another to a reader that keeps the first.

/** Any character that needs a closer look: NUL or a UTF-16 surrogate (most strings have neither). */
const SUSPECT_RE = /[\0\uD800-\uDFFF]/;
/** NUL, or a surrogate that is not half of a pair. */
const ILL_FORMED_RE = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const ILL_FORMED_ALL_RE = new RegExp(ILL_FORMED_RE.source, 'g');

/** What is wrong with `s` (a NUL or a lone surrogate), or null when nothing is. */
export function illFormed(s: string): string | null {
  if (!SUSPECT_RE.test(s)) return null;
  const m = ILL_FORMED_RE.exec(s);
  if (!m) return null;
  return m[0] === '\0' ? 'a NUL character (U+0000)' : `a lone UTF-16 surrogate (${codePoint(m[0])})`;
}

function codePoint(ch: string): string {
  return 'U+' + ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0');
}

/** `s` for an error message: NUL and lone surrogates written as \uXXXX escapes, so the message itself is well-formed. */
function shown(s: string): string {
  return s.replace(ILL_FORMED_ALL_RE, (ch) => '\\u' + ch.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** A path in a JSON value as the API names fields: `order_id`, `metadata.k`, `items[2].name`. */
function pathName(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const seg of path) out += typeof seg === 'number' ? `[${seg}]` : out === '' ? shown(seg) : '.' + shown(seg);
  return out;
}

/**
 * Check a parsed JSON body: every string, object keys included, is well-formed and holds no NUL (400 naming the
 * field). `pairs` is the number of key-value pairs the text held (its colons outside strings): when the parsed
 * objects hold fewer keys, one was repeated, and `text` is read again to name it. `unicodeEscapes` says whether
 * the text has a `\u` escape: without one no string of it can hold a NUL or a lone surrogate (JSON refuses a
 * raw control character in a string, and the text was decoded as strict UTF-8, which has no lone surrogate),
 * so only the keys are counted, the cheaper walk.
 */
export function checkJsonValue(value: unknown, text: string, pairs: number, unicodeEscapes: boolean): void {
  const keys = unicodeEscapes ? walk(value, []) : countKeys(value);
  if (keys === pairs) return;
  const repeated = repeatedKey(text);
  const name = repeated === null ? '(unknown)' : pathName(repeated);
  throw badRequest(`Field "${name}" is given more than once; send each key once per object`, name);
}

/** The keys of the objects in `v`, counted, after checking every string of it; `path` leads to `v`. */
function walk(v: unknown, path: Array<string | number>): number {
  if (typeof v === 'string') {
    const why = illFormed(v);
    if (why) refuse(path, why, false);
    return 0;
  }
  if (v === null || typeof v !== 'object') return 0;
  let keys = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      keys += walk(v[i], path);
      path.pop();
    }
    return keys;
  }
  const names = Object.keys(v);
  for (const k of names) {
    path.push(k);
    const why = illFormed(k);
    if (why) refuse(path, why, true);
    keys += walk((v as Record<string, unknown>)[k], path);
    path.pop();
  }
  return keys + names.length;
}

/** The keys of the objects in `v`, counted (Object.values: own keys only, and no array of names to build). */
function countKeys(v: unknown): number {
  if (v === null || typeof v !== 'object') return 0;
  let keys = 0;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) keys += countKeys(v[i]);
    return keys;
  }
  const values = Object.values(v);
  keys = values.length;
  for (let i = 0; i < values.length; i++) if (typeof values[i] === 'object') keys += countKeys(values[i]);
  return keys;
}

function refuse(path: ReadonlyArray<string | number>, why: string, isKey: boolean): never {
  const name = pathName(path);
  if (path.length === 0) throw badRequest(`Request body must not be a string holding ${why}`);
  throw badRequest(`${isKey ? 'Field name' : 'Field'} "${name}" must not contain ${why}; send well-formed text`, name);
}

/**
 * The path of the first key repeated within one object of `text`, or null when none is (keys compare as JSON
 * reads them: "a" and "\u0061" are one key). `text` is valid JSON nested at most MAX_DEPTH levels (it parsed),
 * so this reads it without checks. Only a refused body is read this way.
 */
export function repeatedKey(text: string): Array<string | number> | null {
  let i = 0;
  const path: Array<string | number> = [];
  const space = (): void => {
    for (let c = text.charCodeAt(i); c === 32 || c === 9 || c === 10 || c === 13; c = text.charCodeAt(++i));
  };
  const string = (): string => {
    const start = i++;
    let escaped = false;
    for (let c = text.charCodeAt(i); c !== 34; c = text.charCodeAt(++i)) {
      if (c === 92) {
        escaped = true;
        i++;
      }
    }
    i++;
    return escaped ? (JSON.parse(text.slice(start, i)) as string) : text.slice(start + 1, i - 1);
  };
  const value = (): boolean => {
    space();
    const c = text.charCodeAt(i);
    if (c === 34) string();
    else if (c === 123 || c === 91) return members(c === 123);
    else while (i < text.length && !/[\s,\]}]/.test(text[i])) i++;
    return false;
  };
  // An object's or array's members, from its opening bracket; true when a key repeats (path then names it).
  const members = (object: boolean): boolean => {
    i++;
    const seen = object ? new Set<string>() : null;
    for (let index = 0; ; index++) {
      space();
      if (text.charCodeAt(i) === 125 || text.charCodeAt(i) === 93) break;
      if (seen) {
        const key = string();
        path.push(key);
        if (seen.has(key)) return true;
        seen.add(key);
        space();
        i++;
      } else path.push(index);
      if (value()) return true;
      path.pop();
      space();
      if (text.charCodeAt(i) !== 44) break;
      i++;
    }
    i++;
    return false;
  };
  return value() ? path : null;
}

/**
 * Check an `application/x-www-form-urlencoded` text, a query string or a form body: once percent-decoded, every
 * name and value is valid UTF-8 without NUL (400 naming the parameter). `what` is how the message names one
 * ("Query parameter", "Field"). URLSearchParams would put U+FFFD for invalid UTF-8 without a word.
 */
export function checkUrlEncoded(text: string, what: string): void {
  if (text.indexOf('%') === -1 && text.indexOf('\0') === -1) return;
  for (const pair of text.split('&')) {
    if (pair.indexOf('%') === -1 && pair.indexOf('\0') === -1) continue;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const name = decodeComponent(rawName);
    const shownName = name === null ? rawName.slice(0, 64) : shown(name.slice(0, 64));
    if (name === null) throw badRequest(`${what} name "${shownName}" is not valid UTF-8 once percent-decoded`, shownName);
    if (name.includes('\0')) throw badRequest(`${what} name "${shownName}" must not contain a NUL character (U+0000)`, shownName);
    if (eq === -1) continue;
    const val = decodeComponent(pair.slice(eq + 1));
    if (val === null) throw badRequest(`${what} "${shownName}" is not valid UTF-8 once percent-decoded`, shownName);
    if (val.includes('\0')) throw badRequest(`${what} "${shownName}" must not contain a NUL character (U+0000)`, shownName);
  }
}

/** One percent-encoded component as URLSearchParams reads it ('+' a space, a '%' without two hex digits kept), or null when its bytes are not UTF-8. */
function decodeComponent(s: string): string | null {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' ').replace(/%(?![0-9A-Fa-f]{2})/g, '%25'));
  } catch {
    return null;
  }
}
