import { badRequest } from '../../platform/http/errors';

/** A keyset position: the last row's created_at and its tie-breaking sequence number. */
export interface Cursor {
  createdAt: number;
  seq: number;
  /**
   * The highest seq when the first page was read: later pages skip rows inserted since, even when their
   * created_at sorts them behind the position (rows of two clocks, a live key's include_test=1).
   */
  high?: number;
}

/** An opaque cursor: base64url of `[created_at, seq]` or `[created_at, seq, high]`. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c.high === undefined ? [c.createdAt, c.seq] : [c.createdAt, c.seq, c.high])).toString('base64url');
}

/** Decode a cursor from a query; anything not made by encodeCursor is 400 naming `cursor`. */
export function decodeCursor(text: string): Cursor {
  const bad = () => badRequest(`Cannot read cursor "${text.slice(0, 64)}": pass next_cursor of a previous page unchanged`, 'cursor');
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) throw bad();
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  if (!Array.isArray(v) || (v.length !== 2 && v.length !== 3) || !v.every((n) => Number.isSafeInteger(n))) throw bad();
  return { createdAt: v[0] as number, seq: v[1] as number, high: v[2] as number | undefined };
}
