import type { App } from '../app-types';
import { DataVersionWatch } from '../db/data-version';
import type { Mode } from '../scheduler/clock';

/** Most answers held; past it the cache starts over. */
const MAX_ENTRIES = 10_000;

/** A payment's GET answer as JSON text, with what the access check needs. */
export interface CachedView {
  shop_id: string;
  mode: Mode;
  json: string;
}

/**
 * The GET answers of recently read payments, so that a read of an unchanged payment skips the query, the
 * view and its serialisation. An answer depends on the payment row, its refunds and its shop's name; every
 * change to those through this connection fires a temporary trigger that drops the payment's entry (or, for a
 * shop, every entry) before the change commits. A change rolled back drops it too: a needless reload, never a
 * stale answer. Commits of other connections empty the cache (DataVersionWatch). Entries are filled only
 * between transactions, so they never hold uncommitted data.
 */
export class PaymentViewCache {
  private readonly entries = new Map<string, CachedView>();
  private readonly elsewhere: DataVersionWatch;

  constructor(private readonly app: App) {
    const db = app.store.db;
    this.elsewhere = DataVersionWatch.of(db);
    this.elsewhere.onChange(() => this.entries.clear());
    db.function('kopek_view_changed', (id: unknown) => {
      this.entries.delete(String(id));
      return null;
    });
    db.function('kopek_views_changed', () => {
      this.entries.clear();
      return null;
    });
    const triggers: Array<[string, string, string]> = [
      ['payments_update', 'UPDATE ON main.payments', 'kopek_view_changed(OLD.id)'],
      ['payments_delete', 'DELETE ON main.payments', 'kopek_view_changed(OLD.id)'],
      ['refunds_insert', 'INSERT ON main.refunds', 'kopek_view_changed(NEW.payment_id)'],
      ['refunds_update', 'UPDATE ON main.refunds', 'kopek_view_changed(OLD.payment_id), kopek_view_changed(NEW.payment_id)'],
      ['refunds_delete', 'DELETE ON main.refunds', 'kopek_view_changed(OLD.payment_id)'],
      ['shops_update', 'UPDATE OF name ON main.shops', 'kopek_views_changed()'],
      ['shops_delete', 'DELETE ON main.shops', 'kopek_views_changed()'],
    ];
    for (const [name, on, call] of triggers) db.exec(`CREATE TEMP TRIGGER IF NOT EXISTS kopek_view_${name} AFTER ${on} BEGIN SELECT ${call}; END`);
  }

  /** The held answer for payment `id`, if any and current. */
  get(id: string): CachedView | undefined {
    this.elsewhere.check();
    return this.entries.get(id);
  }

  /** Hold an answer just read; ignored inside a transaction, whose data may yet roll back. */
  set(id: string, view: CachedView): void {
    if (this.app.store.db.inTransaction) return;
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(id, view);
  }
}
