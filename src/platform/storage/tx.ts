export type Row = Record<string, unknown>;

export interface RunResult {
  changes: number;
  lastInsertRowid: number;
}

export type Engine = 'sqlite' | 'postgres';

/** Inside a body read through its Tx, outside through the store. */
export interface Reader {
  /** The few engine-specific statements (dialect.ts) choose by it. */
  readonly engine: Engine;
  get<T = Row>(sql: string, ...params: unknown[]): Promise<T | undefined>;
  all<T = Row>(sql: string, ...params: unknown[]): Promise<T[]>;
}

/** A body awaits nothing but these (the engine fails one that waits on anything else: it would hold the write lock). */
export interface Tx extends Reader {
  run(sql: string, ...params: unknown[]): Promise<RunResult>;
  /** A throw rolls back only what `fn` wrote, and is rethrown. */
  savepoint<T>(fn: (tx: Tx) => Promise<T> | T): Promise<T>;
  /** After commit, once durable; never if it rolls back. */
  afterCommit(fn: () => void): void;
}

export type Body<T> = (tx: Tx) => Promise<T> | T;

/** A call that was not awaited inside its body. */
export const TX_ENDED = 'this transaction has ended: a call on it was not awaited inside its body';

/**
 * True when `err` ends the whole transaction whatever savepoint caught it (PostgreSQL: a serialization failure or
 * deadlock, retried by the store, or a lost connection). Code recording a body's error (a failed job) rethrows these.
 */
export function endsTransaction(err: unknown): boolean {
  return (err as { endsTransaction?: boolean } | null)?.endsTransaction === true;
}

/** Only the columns `patch` names; the SQL is made of the table's name and the callers' own keys, never data. */
export async function updateById(tx: Tx, table: string, id: string, patch: object): Promise<void> {
  const columns = Object.keys(patch);
  if (columns.length === 0) return;
  await tx.run(`UPDATE ${table} SET ${columns.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`, ...Object.values(patch), id);
}
