import { gzip } from 'node:zlib';

/** JSON bodies from this size up are gzipped for a client that accepts it; below it gzip saves less than it costs. */
export const GZIP_MIN_BYTES = 4096;

/** Whether an Accept-Encoding header allows gzip: named (or `*`) without `q=0`. */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) return false;
  let star: boolean | null = null;
  for (const part of value.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const allowed = q === undefined || Number(q.slice(2)) > 0;
    if (name.trim() === 'gzip' || name.trim() === 'x-gzip') return allowed;
    if (name.trim() === '*') star = allowed;
  }
  return star === true;
}

/**
 * gzip `text` off the event loop (zlib runs on the thread pool); calls back with the compressed bytes, or with
 * null when compression failed and the body should go out as it is.
 */
export function gzipText(text: string, done: (gz: Buffer | null) => void): void {
  gzip(text, (err, out) => done(err ? null : out));
}
