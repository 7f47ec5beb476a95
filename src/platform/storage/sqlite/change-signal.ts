import type Database from 'better-sqlite3';
import { DataVersionWatch } from './data-version';
import type { WatchSpec, ChangeSignal } from '../change-signal';

/** SQLite's signal: temporary triggers on this connection, and `PRAGMA data_version` for other connections. */
export class SqliteChangeSignal implements ChangeSignal {
  private readonly elsewhere: DataVersionWatch;

  constructor(private readonly db: Database.Database) {
    this.elsewhere = DataVersionWatch.of(db);
  }

  /** Call `fn(key)` on every write on this connection that `specs` describe. `name` is unique per cache. */
  watch(name: string, specs: readonly WatchSpec[], fn: (key: unknown) => void): boolean {
    if (!/^[a-z_]+$/.test(name)) throw new Error(`cannot watch "${name}": a watch name is lower-case letters and _`);
    const func = `kopek_${name}_changed`;
    this.db.function(func, { varargs: true, deterministic: false }, (...keys: unknown[]) => {
      if (keys.length === 0) fn(undefined);
      else for (const k of keys) fn(k);
      return null;
    });
    specs.forEach((s, i) => {
      let on: string = s.on;
      if (s.on === 'UPDATE' && (s.columns || s.exceptColumns)) {
        const all = (this.db.prepare(`SELECT name FROM pragma_table_info(?, 'main')`).all(s.table) as Array<{ name: string }>).map((c) => c.name);
        const cols = s.columns ?? all.filter((c) => !s.exceptColumns!.includes(c));
        on = `UPDATE OF ${cols.map((c) => `"${c}"`).join(', ')}`;
      }
      const call = `${func}(${(s.keys ?? []).join(', ')})`;
      this.db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS kopek_${name}_${i}_${s.table}_${s.on.toLowerCase()} AFTER ${on} ON main.${s.table} BEGIN SELECT ${call}; END`);
    });
    return true;
  }

  /** Call `fn` whenever a check finds another connection's commit. */
  onCommitElsewhere(fn: () => void): void {
    this.elsewhere.onChange(fn);
  }

  /** Before using a cache: at the first call of a turn, look for another connection's commit. */
  check(): void {
    this.elsewhere.check();
  }
}
