import type { Ctx, CabinetAuth, Reply } from '../../platform/http/types';
import { ApiError } from '../../platform/http/errors';
import type { Core } from '../../money/core/core';
import { esc, headerOf, langOf } from '../pay-page/render';
import { csrfMatches, loadSession } from './sessions';
import { cabinetPage, publicPage } from './layout';
import { ct } from './text';

/** The session of the cookie (401: sign-in page); for a POST also its origin and the CSRF token in `_csrf` or X-CSRF-Token (403). */
export async function authenticateCabinet(ctx: Ctx<Pick<Core, 'store' | 'clocks' | 'baseUrl'>>): Promise<CabinetAuth> {
  const isPost = ctx.method === 'POST';
  const baseUrl = ctx.app.baseUrl;
  const auth = await loadSession(ctx.app.store, ctx.app.clocks, headerOf(ctx, 'cookie'), !isPost, baseUrl);
  if (!auth) throw new ApiError(401, 'unauthorized', 'Cannot open the cabinet: sign in first');
  if (isPost) {
    // The refusal page is shown in the session's language and layout.
    ctx.cabinet = auth;
    const foreign = sameOriginRefusal(ctx, baseUrl);
    if (foreign) throw foreign;
    const given = headerOf(ctx, 'x-csrf-token') ?? form(ctx).get('_csrf') ?? undefined;
    if (!csrfMatches(auth, given)) {
      throw new ApiError(403, 'csrf_failed', 'Cannot accept the form: its CSRF token is missing or wrong; reload the page and try again');
    }
  }
  return auth;
}

// A 403 for a form from another origin, or null: `Sec-Fetch-Site` when sent (anything but same-origin is refused: same-site
// covers another port), else `Origin`, which must be baseUrl's or the request's host under the same scheme ("null" is
// refused: the cabinet's pages send their origin). A request with neither (curl) is left to the CSRF token.
export function sameOriginRefusal(ctx: Ctx, baseUrl: string): ApiError | null {
  const site = headerOf(ctx, 'sec-fetch-site');
  const origin = headerOf(ctx, 'origin');
  const refuse = (what: string) => new ApiError(403, 'csrf_failed', `Cannot accept the form: it was sent from another site (${what}); open the cabinet at ${new URL(baseUrl).origin} and try again`);
  if (site !== undefined) return site === 'same-origin' ? null : refuse(`Sec-Fetch-Site "${site.slice(0, 32)}"`);
  if (origin === undefined) return null;
  const scheme = new URL(baseUrl).protocol;
  const host = headerOf(ctx, 'host');
  if (origin === new URL(baseUrl).origin || (host !== undefined && origin === `${scheme}//${host}`)) return null;
  return refuse(`Origin "${origin.slice(0, 100)}"`);
}

/** The request's urlencoded form, read from the raw bytes (some fields repeat). */
export function form(ctx: Ctx): URLSearchParams {
  const type = String(ctx.req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  return new URLSearchParams(ctx.rawBody.toString('utf8'));
}

/** A refused cabinet request: a page view without a session goes to sign in (a POST gets a 401 page); else a page with the message. */
export function cabinetErrorReply(ctx: Ctx, err: ApiError): Reply {
  // The route table has no trailing-slash patterns: /cabinet/ and /cabinet/payments/ mean the pages without it.
  if (err.status === 404 && ctx.route === '' && ctx.method === 'GET' && /^\/cabinet(\/[A-Za-z0-9._-]+)*\/$/.test(ctx.path)) {
    return { status: 303, location: ctx.path.slice(0, -1) };
  }
  if (err.status === 401 && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
    const next = ctx.path.startsWith('/cabinet/') && ctx.path !== '/cabinet/login' ? `?next=${encodeURIComponent(ctx.path)}` : '';
    return { status: 303, location: `/cabinet/login${next}` };
  }
  const lang = ctx.cabinet?.lang ?? langOf(ctx);
  const title = err.status === 404 ? ct(lang, 'not_found') : err.status === 403 && err.code === 'csrf_failed' ? ct(lang, 'forbidden') : ct(lang, 'error');
  const body = `<h1>${esc(title)}</h1><p class="alert" role="alert">${esc(err.message)}</p><p><a href="/cabinet/overview">${esc(ct(lang, 'overview'))}</a></p>`;
  const headers = err.headers ?? {};
  if (ctx.cabinet && err.status !== 401) return cabinetPage(ctx, { title, active: null, body, status: err.status, headers });
  return publicPage(lang, { title, body, status: err.status, headers });
}
