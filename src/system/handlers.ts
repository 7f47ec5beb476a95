import type { Ctx, Reply } from '../http/types';
import { openApiDocument } from '../http/openapi';
import { bodyObject, intField } from '../http/validate';
import { iso } from '../util/time';
import { resetTestData } from '../testmode/reset';

/** GET /healthz: answers only when the database answers (a failing one makes it 503 unavailable). */
export function health(ctx: Ctx): Reply {
  ctx.app.store.stmt('SELECT 1').get();
  return { body: { status: 'ok', version: ctx.app.version } };
}

/** The serialized document per server address (tests run several servers in one process). */
const docCache = new Map<string, string>();

/** GET /v1/openapi.json */
export function openapi(ctx: Ctx): Reply {
  const url = ctx.app.baseUrl();
  let doc = docCache.get(url);
  if (doc === undefined) {
    doc = JSON.stringify(openApiDocument(ctx.app.version, url));
    docCache.set(url, doc);
  }
  return { json: doc };
}

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
  const shopId = ctx.auth!.shopId;
  ctx.app.store.flush();
  ctx.app.clocks.advance(shopId, seconds * 1000);
  const ran = await ctx.app.scheduler.runDueForShop(shopId, 'test');
  return { body: clockBody(ctx, ran) };
}

/** POST /v1/test/reset: takes no body; a field there (say `{"mode": "live"}`) is refused before anything is deleted. */
export function reset(ctx: Ctx): Reply {
  bodyObject(ctx.body, []);
  const deleted = resetTestData(ctx.app, ctx.auth!.shopId);
  return { body: { deleted, clock: clockBody(ctx) } };
}
