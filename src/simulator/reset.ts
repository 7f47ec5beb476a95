import type { App } from '../app-types';

/** Cabinet tables: they have `shop_id` and `mode` but hold settings, which a reset keeps (test keys included). */
const KEPT_TABLES = new Set(['api_keys']);

/** Tables that hold a shop's data: those with both `shop_id` and `mode` columns, read from the schema. */
function shopTables(app: App): string[] {
  const tables = app.store.db
    .prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
    .all() as Array<{ name: string }>;
  const out: string[] = [];
  for (const { name } of tables) {
    const cols = app.store.db.prepare(`SELECT name FROM pragma_table_info(?)`).all(name) as Array<{ name: string }>;
    const names = new Set(cols.map((c) => c.name));
    if (names.has('shop_id') && names.has('mode') && !KEPT_TABLES.has(name)) out.push(name);
  }
  return out;
}

/** Delete every test-mode row of a shop and set its test clock back to real time; returns rows deleted per table. */
export function resetTestData(app: App, shopId: string): Record<string, number> {
  const tables = shopTables(app);
  const deleted: Record<string, number> = {};
  app.store.flush();
  app.store.tx(({ db }) => {
    db.pragma('defer_foreign_keys = ON');
    for (const t of tables) {
      deleted[t] = db.prepare(`DELETE FROM "${t}" WHERE shop_id = ? AND mode = 'test'`).run(shopId).changes;
    }
    db.prepare('UPDATE shops SET test_clock_offset_ms = 0 WHERE id = ?').run(shopId);
  });
  app.clocks.forget(shopId);
  return deleted;
}
