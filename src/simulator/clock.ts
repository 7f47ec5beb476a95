import type { App } from '../app-types';
import type { Ctx, Reply } from '../http/types';
import { bodyObject, intField } from '../http/validate';
import { iso } from '../util/time';
import { resetTestData } from './reset';

// The test helpers of a shop's test mode as a whole: its clock, and the reset of its test data.

function clockBody(ctx: Ctx, jobsRun?: number): Record<string, unknown> {
  const shopId = ctx.auth!.shopId;
  const body: Record<string, unknown> = {
    now: iso(ctx.app.clocks.now(shopId, 'test')),
    offset_seconds: ctx.app.clocks.offset(shopId) / 1000,
  };
  if (jobsRun !== undefined) body.jobs_run = jobsRun;
  return body;
}

/** GET /v1/test/clock */
export function getClock(ctx: Ctx): Reply {
  return { body: clockBody(ctx) };
}

/** POST /v1/test/clock/advance {"seconds": N}: moves the clock, then runs every job that became due. */
export async function advanceClock(ctx: Ctx): Promise<Reply> {
  const body = bodyObject(ctx.body, ['seconds']);
  const seconds = intField(body, 'seconds', { required: true, min: 0, max: 315_360_000 })!;
  const ran = await advanceShopClock(ctx.app, ctx.auth!.shopId, seconds);
  return { body: clockBody(ctx, ran) };
}

/** Move a shop's test clock forward and run every job that became due (the API's helper and the cabinet alike). */
export async function advanceShopClock(app: App, shopId: string, seconds: number): Promise<number> {
  await app.store.flush();
  await app.clocks.advance(shopId, seconds * 1000);
  return app.scheduler.runDueForShop(shopId, 'test');
}

/** POST /v1/test/reset: takes no body; a field there (say `{"mode": "live"}`) is refused before anything is deleted. */
export async function reset(ctx: Ctx): Promise<Reply> {
  bodyObject(ctx.body, []);
  const deleted = await resetTestData(ctx.app, ctx.auth!.shopId);
  return { body: { deleted, clock: clockBody(ctx) } };
}
