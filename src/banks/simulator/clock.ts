import type { Core } from '../../money/core/core';
import type { Ctx, Reply } from '../../platform/http/types';
import { bodyObject, intField } from '../../platform/http/body';
import type { Store, Tx } from '../../platform/storage/store';
import { deferForeignKeys, listTables, tableColumns } from '../../platform/storage/dialect';
import { iso } from '../../platform/util/time';

// The test helpers of a shop's test mode as a whole: its clock, and the reset of its test data.

async function clockBody(ctx: Ctx<Pick<Core, 'clocks' | 'store'>>, jobsRun?: number): Promise<Record<string, unknown>> {
  // One read of the shop's offset as committed: the clock every process reads.
  const offset_ms = await ctx.app.clocks.offset(ctx.app.store, ctx.auth!.shopId);
  const body = { now: iso(ctx.app.clocks.real() + offset_ms), offset_seconds: offset_ms / 1000 };
  return jobsRun === undefined ? body : { ...body, jobs_run: jobsRun };
}

export async function getClock(ctx: Ctx<Pick<Core, 'clocks' | 'store'>>): Promise<Reply> {
  return { body: await clockBody(ctx) };
}

/** POST /v1/test/clock/advance {"seconds": N}: moves the clock, then runs every job that became due. */
export async function advanceClock(ctx: Ctx<Pick<Core, 'clocks' | 'store' | 'scheduler'>>): Promise<Reply> {
  const body = bodyObject(ctx.body, ['seconds']);
  const seconds = intField(body, 'seconds', { required: true, min: 0, max: 315_360_000 })!;
  return { body: await clockBody(ctx, await advanceShopClock(ctx.app, ctx.auth!.shopId, seconds)) };
}

// Moves the clock and runs every job that became due, each in its own transaction with the shop's clock pinned to its due
// time: a job scheduling "a month from now" lands a month after its predecessor, so a year of charges fits in one advance.
export async function advanceShopClock(core: Pick<Core, 'store' | 'scheduler' | 'clocks'>, shopId: string, seconds: number): Promise<number> {
  const delta_ms = seconds * 1000;
  if (!(delta_ms >= 0 && Number.isSafeInteger(delta_ms))) throw new Error(`cannot move a test clock by ${delta_ms} ms: only forward, in whole ms`);
  await core.store.flush();
  // Pending test jobs wait in real time (run_at = due_at - offset): they move with the committed offset in the same write.
  const moveClock = async (tx: Tx): Promise<number> => {
    const row = await tx.get<{ o: number }>('SELECT test_clock_offset_ms AS o FROM shops WHERE id = ?', shopId);
    const next = (row?.o ?? 0) + delta_ms;
    if (delta_ms > 0) {
      await tx.run('UPDATE shops SET test_clock_offset_ms = ? WHERE id = ?', next, shopId);
      await tx.run(`UPDATE jobs SET run_at = due_at - ? WHERE shop_id = ? AND mode = 'test' AND state = 'pending'`, next, shopId);
    }
    return core.clocks.real() + next;
  };
  return core.scheduler.runDueUpTo(shopId, 'test', moveClock, (tx, at, body) => core.clocks.readAs(tx, shopId, at, body));
}

/** POST /v1/test/reset: takes no body; a field there (say `{"mode": "live"}`) is refused before anything is deleted. */
export async function reset(ctx: Ctx<Pick<Core, 'clocks' | 'store'>>): Promise<Reply> {
  bodyObject(ctx.body, []);
  const deleted = await resetTestData(ctx.app.store, ctx.auth!.shopId);
  return { body: { deleted, clock: await clockBody(ctx) } };
}

/** Cabinet tables: they have `shop_id` and `mode` but hold settings, which a reset keeps (test keys included). */
const KEPT_TABLES = new Set(['api_keys']);

/** Delete every test-mode row of a shop and set its test clock back to real time; returns rows deleted per table. */
export async function resetTestData(store: Store, shopId: string): Promise<Record<string, number>> {
  const tables: string[] = [];
  for (const name of await listTables(store)) {
    const names = new Set(await tableColumns(store, name));
    if (names.has('shop_id') && names.has('mode') && !KEPT_TABLES.has(name)) tables.push(name);
  }
  const deleted: Record<string, number> = {};
  await store.flush();
  await store.tx(async (tx) => {
    await deferForeignKeys(tx);
    for (const t of tables) deleted[t] = (await tx.run(`DELETE FROM "${t}" WHERE shop_id = ? AND mode = 'test'`, shopId)).changes;
    await tx.run('UPDATE shops SET test_clock_offset_ms = 0 WHERE id = ?', shopId);
  });
  return deleted;
}
