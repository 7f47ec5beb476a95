import type { Ctx, Reply } from '../../platform/http/types';
import { ApiError } from '../../platform/http/errors';
import type { Core } from '../../money/core/core';
import { redactUrl } from '../../platform/redact-url';

/** How long after the storage refused a write /healthz reports it whatever a probe says (a small probe fits where a payment did not). */
const STORAGE_TROUBLE_RECENT_MS = 10_000;

/** GET /healthz: answers only when the database does; while storage refuses writes, a 503 naming it for 10 s after each refusal, then until a write succeeds. */
export async function health(ctx: Ctx<Pick<Core, 'store' | 'version'>>): Promise<Reply> {
  const store = ctx.app.store;
  await store.get('SELECT 1');
  const t = store.trouble();
  if (t && (Date.now() - t.at < STORAGE_TROUBLE_RECENT_MS || (await store.probeWrite().then(() => false, () => true)))) {
    const now = store.trouble() ?? t;
    throw new ApiError(503, 'unavailable', `Cannot take writes: the storage refused the last one (${now.code}: ${redactUrl(now.message)})`, undefined, { 'Retry-After': '5' });
  }
  return { body: { status: 'ok', version: ctx.app.version } };
}

/** The serialized document per server address (tests run several servers in one process). */
const docCache = new Map<string, string>();

/** GET /v1/openapi.json, serving the document `document` makes (the route table hands it the server's own). */
export function openapiHandler(document: (version: string, serverUrl: string) => Record<string, unknown>): (ctx: Ctx<Pick<Core, 'baseUrl' | 'version'>>) => Reply {
  return (ctx) => {
    const url = ctx.app.baseUrl;
    if (!docCache.has(url)) docCache.set(url, JSON.stringify(document(ctx.app.version, url)));
    return { json: docCache.get(url)! };
  };
}

/** GET /: a browser (Accept text/html) goes to the cabinet's sign-in; an API client learns where the API and its document are. */
export function root(ctx: Ctx<Pick<Core, 'baseUrl' | 'version'>>): Reply {
  const accept = ctx.req.headers.accept ?? '';
  if (/\btext\/html\b/i.test(accept)) return { status: 303, location: '/cabinet/login', headers: { Vary: 'Accept' } };
  const base = ctx.app.baseUrl;
  const body = { service: 'kopek', version: ctx.app.version, api: `${base}/v1/public`, openapi: `${base}/v1/openapi.json`, cabinet: `${base}/cabinet/login` };
  return { body, headers: { Vary: 'Accept' } };
}
