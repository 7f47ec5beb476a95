import type pg from 'pg';
import { bindNamed, pgValues, type PgStatement } from './sql';

// How a statement goes on the wire to PostgreSQL: prepared by name, and written with the others of its turn.

/** Sockets whose writes wait for the end of the current turn (see oneWrite). */
const corked = new WeakSet<object>();

/**
 * Hold a connection's writes until the end of the current turn: statements made one after another without
 * waiting (a BEGIN and the body's first read, the statements of together()) leave in one write to the socket
 * instead of one each. The connection is pg's (an internal it has kept for years); without it nothing is held.
 */
export function oneWrite(client: pg.PoolClient): void {
  const stream = (client as unknown as { connection?: { stream?: { cork?: () => void; uncork?: () => void } } }).connection?.stream;
  if (!stream?.cork || !stream.uncork || corked.has(stream)) return;
  corked.add(stream);
  stream.cork();
  queueMicrotask(() => {
    corked.delete(stream);
    stream.uncork!();
  });
}

function values(st: PgStatement, params: unknown[]): unknown[] {
  return pgValues(st.names === null ? params.slice() : bindNamed(st.names, params));
}

/**
 * A statement goes as a named prepared statement: each connection parses and plans it once (that was over a
 * third of the database's work per request). A text that may hold several statements goes as a simple query.
 */
export function prepared(st: PgStatement, params: unknown[]): pg.QueryConfig {
  const v = values(st, params);
  return st.name === null ? { text: st.text, values: v } : { name: st.name, text: st.text, values: v };
}
