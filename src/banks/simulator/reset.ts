import type { Reader, Store } from '../../platform/storage/store';
import { deferForeignKeys, listTables, tableColumns } from '../../platform/storage/dialect';

/** Cabinet tables: they have `shop_id` and `mode` but hold settings, which a reset keeps (test keys included). */
const KEPT_TABLES = new Set(['api_keys']);

/** Tables that hold a shop's data: those with both `shop_id` and `mode` columns, read from the schema. */
async function shopTables(q: Reader): Promise<string[]> {
  const out: string[] = [];
  for (const name of await listTables(q)) {
    const names = new Set(await tableColumns(q, name));
    if (names.has('shop_id') && names.has('mode') && !KEPT_TABLES.has(name)) out.push(name);
  }
  return out;
}

/** Delete every test-mode row of a shop and set its test clock back to real time; returns rows deleted per table. */
export async function resetTestData(store: Store, shopId: string): Promise<Record<string, number>> {
  const tables = await shopTables(store);
  const deleted: Record<string, number> = {};
  await store.flush();
  await store.tx(async (tx) => {
    await deferForeignKeys(tx);
    for (const t of tables) {
      deleted[t] = (await tx.run(`DELETE FROM "${t}" WHERE shop_id = ? AND mode = 'test'`, shopId)).changes;
    }
    await tx.run('UPDATE shops SET test_clock_offset_ms = 0 WHERE id = ?', shopId);
  });
  return deleted;
}
