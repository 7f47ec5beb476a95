
/** A row as the database returns it. */
export type Row = Record<string, unknown>;

/** What a write statement did. */
export interface RunResult {
  changes: number;
  lastInsertRowid: number;
}

/** The storage engines. */
export type Engine = 'sqlite' | 'postgres';

/** Reads. A transaction and the store are both readers: inside a body read through its Tx, outside through the store. */
export interface Reader {
  /** Which engine answers: the few engine-specific statements (dialect.ts) choose by it. */
  readonly engine: Engine;
  /** The first row of `sql`, or undefined. */
  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined>;
  /** Every row of `sql`. */
  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]>;
}

/**
 * What a transaction body receives. A body awaits nothing but these methods (and functions that only await
 * them): the engine fails a body that waits on anything else, since it would hold the write lock meanwhile.
 */
export interface Tx extends Reader {
  run(sql: string, ...params: unknown[]): Promise<RunResult>;
  /** Run `fn` in a savepoint: a throw rolls back only what `fn` wrote, and is rethrown. */
  savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T>;
  /** Run `fn` after this transaction commits and is durable; never if it rolls back. */
  afterCommit(fn: () => void): void;
  /** An identity of the database this transaction belongs to, for memos kept per database (WeakMap keys). */
  readonly connection: object;
}

/** A transaction body: it awaits nothing but its Tx. */
export type Body<T> = (tx: Tx) => Promise<T> | T;

/** The error of a call on a transaction whose body has already ended (a call that was not awaited in it). */
export const TX_ENDED = 'this transaction has ended: a call on it was not awaited inside its body';

/**
 * True when `err` ends the whole transaction, whatever savepoint it was caught in (on PostgreSQL a serialization
 * failure or a deadlock, which the store runs again, or a lost connection; the engine marks such errors). Code
 * that catches a body's error to record it (a failed job) must rethrow these instead.
 */
export function endsTransaction(err: unknown): boolean {
  return (err as { endsTransaction?: boolean } | null)?.endsTransaction === true;
}


/**
 * Write the columns `patch` names, and only those, of the row `id` of `table`, in the caller's transaction.
 * Values are bound by position. The SQL is made of the table's name and the patch's keys, which are the
 * callers' own column names, never data.
 */
export async function updateById(tx: Tx, table: string, id: string, patch: object): Promise<void> {
  const values: unknown[] = [];
  let sql = `UPDATE ${table} SET `;
  for (const col in patch) {
    sql += values.length === 0 ? `${col} = ?` : `, ${col} = ?`;
    values.push((patch as Record<string, unknown>)[col]);
  }
  if (values.length === 0) return;
  values.push(id);
  await tx.run(`${sql} WHERE id = ?`, ...values);
}
