
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

/** The error of a call on a transaction whose body has already ended (a call that was not awaited in it). */
export const TX_ENDED = 'this transaction has ended: a call on it was not awaited inside its body';


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

/** PostgreSQL's answer to every statement after one that failed in the same transaction (in_failed_sql_transaction). */
const AFTER_A_FAILURE = '25P02';

/**
 * Await statements a body made without waiting for each other, as one. On PostgreSQL the connection pipelines
 * them: they travel together instead of a round trip each. On SQLite each ran when it was made. Every one has
 * settled before this returns or throws, so none outlives the body. On failure the error thrown is the cause:
 * the first in argument order that is not PostgreSQL's refusal of the statements after a failed one (a
 * serialization failure must reach the store as itself, to run the transaction again).
 */
export async function together<T extends readonly unknown[]>(...work: { [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const settled = await Promise.allSettled(work);
  const failed = settled.filter((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed.length > 0) {
    throw (failed.find((f) => (f.reason as { code?: string } | null)?.code !== AFTER_A_FAILURE) ?? failed[0]).reason;
  }
  return settled.map((s) => (s as PromiseFulfilledResult<unknown>).value) as unknown as T;
}
