// How the PostgreSQL engine reads the driver's errors: what ends a transaction, what may run again, and what
// means the database cannot be reached (a 503 to clients, never a crash).

/**
 * True when `err` ends the whole transaction, whatever savepoint it was caught in: a serialization failure or a
 * deadlock (the store runs the transaction again), or a lost connection. PgTx marks such errors for
 * endsTransaction (../tx.ts), which code that records a body's failure in a savepoint asks.
 */
export function endsPgTransaction(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return isRetryable(err) || isStalePlan(err) || isConnectionLoss(err) || code === 'DB_UNAVAILABLE' || code === 'DB_COMMIT_UNKNOWN';
}

/**
 * True when a statement prepared on this connection no longer fits the schema (another node's migration changed
 * a table it reads): the connection is dropped, with every statement prepared on it, and the work runs again on
 * another. Nothing ran: PostgreSQL refuses the statement before executing it.
 */
export function isStalePlan(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  return e?.code === '0A000' && /cached plan must not change result type/.test(e.message ?? '');
}

/** SQLSTATEs after which the whole transaction may run again: serialization failure, deadlock. */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === '40001' || code === '40P01';
}

/** SQLSTATE classes and socket errors that mean the database cannot be reached or is going away. */
const UNAVAILABLE_STATES = /^(08|57P0|53|58)/;
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** True when `err` says the connection is gone (or never came): nothing more can be sent on it. */
export function isConnectionLoss(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  const code = e?.code ?? '';
  if (SOCKET_ERRORS.has(code) || UNAVAILABLE_STATES.test(code)) return true;
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(e?.message ?? '');
}

/** A driver error as kopek's: an unreachable database is DB_UNAVAILABLE (a 503 to clients); others pass as they are. */
export function storageError(err: unknown): Error {
  const code = (err as { code?: string } | null)?.code;
  if (code === 'DB_COMMIT_UNKNOWN' || code === 'DB_UNAVAILABLE') return err as Error;
  if (!isConnectionLoss(err)) return err instanceof Error ? err : new Error(String(err));
  return Object.assign(new Error(`the database is unavailable: ${(err as Error).message ?? err}`), { code: 'DB_UNAVAILABLE' });
}

export function commitUnknown(err: unknown): Error {
  return Object.assign(new Error(`the connection was lost during COMMIT: the outcome is unknown (${(err as Error).message ?? err})`), { code: 'DB_COMMIT_UNKNOWN' });
}
