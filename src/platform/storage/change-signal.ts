
/** A change that makes a cache's entries stale: writes of `on` to `table`, on this connection. */
export interface WatchSpec {
  table: string;
  on: 'INSERT' | 'UPDATE' | 'DELETE';
  /** UPDATE only: the columns whose writes count (default every column). */
  columns?: readonly string[];
  /** UPDATE only: count writes to every column but these (resolved from the table's columns). */
  exceptColumns?: readonly string[];
  /**
   * SQL expressions over the trigger's NEW or OLD row (e.g. `OLD.id`), each passed to the listener; none: the
   * listener is called with undefined (everything may have changed).
   */
  keys?: readonly string[];
}

/**
 * The database's own change signal, for caches kept in memory between requests. Writes on this connection
 * reach `watch` listeners through temporary triggers, inside the writing statement (a rolled-back change
 * signals too: a needless reload, never a stale answer). Commits of other connections (an admin command in
 * another process) reach `onCommitElsewhere` listeners through `PRAGMA data_version`, read at the first
 * `check()` of each turn of the event loop: a change made elsewhere is seen by every request read from the
 * sockets after the turn in which it committed.
 */
export interface ChangeSignal {
  /**
   * Call `fn(key)` on every write through this store that `specs` describe. `name` is unique per cache. False
   * when this signal cannot see such writes (nothing is watched then): the cache must hold nothing.
   */
  watch(name: string, specs: readonly WatchSpec[], fn: (key: unknown) => void): boolean;
  /** Call `fn` whenever a check finds a commit made elsewhere. */
  onCommitElsewhere(fn: () => void): void;
  /** Before using a cache: look for commits made elsewhere. */
  check(): void;
}
