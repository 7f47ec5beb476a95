import type { Ctx, Reply } from '../http/types';
import { openApiDocument } from '../http/openapi';

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
  return { text: doc, contentType: 'application/json' };
}
