import { mentionsDatabaseUrl, redactUrl } from './redact-url';

/** `silent` writes nothing. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

/** A JSON-lines logger. Callers pass only safe fields: never a secret, a key or a card number. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Held before a write is forced within the same tick. */
const FLUSH_BYTES = 64 * 1024;

/**
 * Joins one turn's lines into one stdout write (a write per access-log line cost more than the line). Written at
 * the turn's end, at 64 KiB and at exit; a SIGKILL can lose one turn's lines (logs, never data).
 */
export function bufferedStdout(out: { write(text: string): unknown } = process.stdout): { write: (line: string) => void; flush: () => void } {
  let held: string[] = [];
  let bytes = 0;
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (held.length === 0) return;
    const text = held.length === 1 ? held[0] : held.join('');
    held = [];
    bytes = 0;
    out.write(text);
  };
  process.once('exit', flush);
  return {
    write(line: string): void {
      held.push(line);
      bytes += line.length;
      if (bytes >= FLUSH_BYTES) flush();
      else if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}

let lastMs = -1;
let lastIso = '';

/**
 * Time (RFC 3339; lines of the same millisecond share one conversion), level and msg first, then the fields; the
 * head is text so a line is not built by copying every field. A field named like the head takes the slow path,
 * where it wins as it always did.
 */
function logLine(level: LogLevel, msg: string, fields: Record<string, unknown> | undefined): string {
  const ms = Date.now();
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  const time = lastIso;
  if (fields !== undefined && ('time' in fields || 'level' in fields || 'msg' in fields)) {
    return JSON.stringify({ time, level, msg, ...fields }) + '\n';
  }
  const head = `{"time":"${time}","level":"${level}","msg":${JSON.stringify(msg)}`;
  const rest = fields === undefined ? '{}' : JSON.stringify(fields);
  return rest.length === 2 ? head + '}\n' : head + ',' + rest.slice(1) + '\n';
}

let stdoutWriter: ReturnType<typeof bufferedStdout> | null = null;

/** Through the process's one buffered stdout writer (made on first use). */
function stdoutLine(line: string): void {
  (stdoutWriter ??= bufferedStdout()).write(line);
}

/** Buffered stdout by default. */
export function createLogger(level: LogLevel, write: (line: string) => void = stdoutLine): Logger {
  const min = ORDER[level];
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    const line = logLine(lvl, msg, fields);
    // A database URL in a message or field (a driver's error, at any depth) keeps its password out; only such lines pay twice.
    if (!mentionsDatabaseUrl(line)) return write(line);
    const redacted = fields && (JSON.parse(JSON.stringify(fields, (_k, v: unknown) => (typeof v === 'string' ? redactUrl(v) : v))) as Record<string, unknown>);
    write(logLine(lvl, redactUrl(msg), redacted));
  };
  // A level below the minimum is a method that does nothing, decided here once.
  const method = (lvl: Exclude<LogLevel, 'silent'>): Logger[typeof lvl] =>
    ORDER[lvl] < min ? () => {} : (m, f) => emit(lvl, m, f);
  return { debug: method('debug'), info: method('info'), warn: method('warn'), error: method('error') };
}
