import type { Logger } from '../log';
import type { Store } from '../storage/store';
import type { Clocks } from '../clock';

/** A key's last use is written at most this often: a request must not cost a write. */
const FLUSH_EVERY_MS = 60_000;
/** A key's last use, kept when a later one is already written (SQLite's two-argument max is GREATEST there). */
const UPSERT_USE = {
  sqlite: 'INSERT INTO api_key_usage (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = MAX(api_key_usage.last_used_at, excluded.last_used_at)',
  postgres: 'INSERT INTO api_key_usage (key_id, last_used_at) VALUES (?, ?) ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(api_key_usage.last_used_at, excluded.last_used_at)',
};

/**
 * The last use of each API key (the cabinet shows it). Kept in memory and written in one group commit at
 * most once a minute, so the figure may lag by that much. What is still held at shutdown is written by
 * `flush()`, which whoever closes the server calls before the database closes.
 */
export class KeyUsage {
  /** Key id → real time of its last request, not yet written. */
  private readonly pending = new Map<string, number>();
  private lastFlush: number;

  /** Built from the store it writes to, the real-time clock and the log (the core has all three). */
  constructor(private readonly deps: { readonly store: Pick<Store, 'write'>; readonly clocks: Pick<Clocks, 'real'>; readonly log: Logger }) {
    this.lastFlush = deps.clocks.real();
  }

  /** Note that a key was just used; writes the batch when the last write is a minute old. Bound: the server calls it as a guard. */
  readonly note = (keyId: string): void => {
    const now = this.deps.clocks.real();
    this.pending.set(keyId, now);
    if (now - this.lastFlush >= FLUSH_EVERY_MS) {
      this.lastFlush = now;
      void this.write().catch((err) => this.deps.log.warn('cannot record API key use', { error: (err as Error).message }));
    }
  };

  /** Write every held last use now (before the cabinet lists keys, and at shutdown). */
  async flush(): Promise<void> {
    this.lastFlush = this.deps.clocks.real();
    await this.write();
  }

  private write(): Promise<void> {
    const batch = [...this.pending];
    this.pending.clear();
    if (batch.length === 0) return Promise.resolve();
    return this.deps.store.write(async (tx) => {
      for (const [id, at] of batch) {
        await tx.run(UPSERT_USE[tx.engine], id, at);
      }
    });
  }
}
