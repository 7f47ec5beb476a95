/** The one error type of the API: an HTTP status, a stable snake_case code, a safe message, and the field at fault. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param?: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  /** The documented error body: `{"error": {code, message, param?}}`. */
  toBody(): { error: { code: string; message: string; param?: string } } {
    const error: { code: string; message: string; param?: string } = { code: this.code, message: this.message };
    if (this.param !== undefined) error.param = this.param;
    return { error };
  }
}

export function badRequest(message: string, param?: string): ApiError {
  return new ApiError(400, 'bad_request', message, param);
}

/** 404 not_found; also used for ids of another shop, so existence is never revealed. */
export function notFound(message: string): ApiError {
  return new ApiError(404, 'not_found', message);
}

export function invalidState(message: string): ApiError {
  return new ApiError(409, 'invalid_state', message);
}

/**
 * Storage errors that mean it cannot serve now, not a bug: SQLite locked too long, its disk full or failing;
 * PostgreSQL unreachable, a COMMIT whose outcome the lost connection hid (a retry with its Idempotency-Key learns
 * it), a statement timeout (57014), serialization races lost after retries (40001, 40P01), a read-only database (25006).
 */
const UNAVAILABLE_SQLITE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN)/;
const UNAVAILABLE_CODES = /^(DB_UNAVAILABLE|DB_COMMIT_UNKNOWN|57014|40001|40P01|25006)$/;

/** Any thrown value as an ApiError; storage trouble is a 503 unavailable, anything else a 500 that leaks nothing. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLITE.test(code) || UNAVAILABLE_CODES.test(code))) {
    return new ApiError(503, 'unavailable', 'Cannot serve the request: storage is unavailable; retry shortly', undefined, { 'Retry-After': '1' });
  }
  return new ApiError(500, 'internal_error', 'Internal error; the request id identifies it in the server log');
}
