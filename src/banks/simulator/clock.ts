import type { Core } from '../../money/core/core';
import type { Ctx, Reply } from '../../platform/http/types';
import { bodyObject, intField } from '../../platform/http/validate';
import { iso } from '../../platform/util/time';
import { resetTestData } from './reset';

// The test helpers of a shop's test mode as a whole: its clock, and the reset of its test data.

/** What the test clock's routes use: the shop's clock, the store, and the scheduler that runs the jobs an advance makes due. */
export type TestClockCore = Pick<Core, 'clocks' | 'store' | 'scheduler'>;

async function clockBody(ctx: Ctx<Pick<Core, 'clocks' | 'store'>>, jobsRun?: number): Promise<Record<string, unknown>> {
  const shopId = ctx.auth!.shopId;
  // One read of the shop's offset as committed: the clock every process reads.
  const offset_ms = await ctx.app.clocks.offset(ctx.app.store, shopId);
  const body: Record<string, unknown> = {
    now: iso(ctx.app.clocks.real() + offset_ms),
    offset_seconds: offset_ms / 1000,
  };
  if (jobsRun !== undefined) body.jobs_run = jobsRun;
  return body;
}

/** GET /v1/test/clock */
export async function getClock(ctx: Ctx<Pick<Core, 'clocks' | 'store'>>): Promise<Reply> {
  return { body: await clockBody(ctx) };
}

/** POST /v1/test/clock/advance {"seconds": N}: moves the clock, then runs every job that became due. */
export async function advanceClock(ctx: Ctx<TestClockCore>): Promise<Reply> {
  const body = bodyObject(ctx.body, ['seconds']);
  const seconds = intField(body, 'seconds', { required: true, min: 0, max: 315_360_000 })!;
  const ran = await advanceShopClock(ctx.app, ctx.auth!.shopId, seconds);
  return { body: await clockBody(ctx, ran) };
}

/** Move a shop's test clock forward and run every job that became due (the API's helper and the cabinet alike). */
export async function advanceShopClock(core: Pick<Core, 'store' | 'scheduler'>, shopId: string, seconds: number): Promise<number> {
  await core.store.flush();
  // The new offset is written, and the jobs it makes due claimed, in one transaction; then they run.
  return core.scheduler.runDueForShop(shopId, 'test', seconds * 1000);
}

/** POST /v1/test/reset: takes no body; a field there (say `{"mode": "live"}`) is refused before anything is deleted. */
export async function reset(ctx: Ctx<Pick<Core, 'clocks' | 'store'>>): Promise<Reply> {
  bodyObject(ctx.body, []);
  const deleted = await resetTestData(ctx.app.store, ctx.auth!.shopId);
  return { body: { deleted, clock: await clockBody(ctx) } };
}
