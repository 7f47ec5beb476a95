import type { Ctx, CabinetAuth, Reply } from '../http/types';
import { ApiError } from '../http/errors';
import type { Core } from '../core/core';
import { esc } from '../pay-page/layout';
import { pickLang } from '../pay-page/i18n';
import { csrfMatches, loadSession } from './sessions';
import { cabinetPage, publicPage } from './layout';
import { ct } from './text';

/**
 * The cabinet's step of the request chain (called by src/http/server.ts for auth 'cabinet'): the session of
 * the cookie (401, which the error page turns into the sign-in page), and for a POST the session's CSRF
 * token in the form field `_csrf` or the X-CSRF-Token header (403, before the handler runs: nothing changes).
 */
export async function authenticateCabinet(ctx: Ctx<Pick<Core, 'store' | 'clocks'>>): Promise<CabinetAuth> {
  const isPost = ctx.method === 'POST';
  const auth = await loadSession(ctx.app.store, ctx.app.clocks, headerOf(ctx, 'cookie'), !isPost);
  if (!auth) throw new ApiError(401, 'unauthorized', 'Cannot open the cabinet: sign in first');
  if (isPost) {
    const given = headerOf(ctx, 'x-csrf-token') ?? formValue(ctx, '_csrf');
    if (!csrfMatches(auth, given)) {
      ctx.cabinet = auth;
      throw new ApiError(403, 'csrf_failed', 'Cannot accept the form: its CSRF token is missing or wrong; reload the page and try again');
    }
  }
  return auth;
}

function headerOf(ctx: Ctx, name: string): string | undefined {
  const v = ctx.req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** One field of an urlencoded form body (the cabinet reads forms from the raw bytes: some fields repeat). */
export function formValue(ctx: Ctx, name: string): string | undefined {
  return form(ctx).get(name) ?? undefined;
}

/** The request's urlencoded form. */
export function form(ctx: Ctx): URLSearchParams {
  const type = String(ctx.req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return new URLSearchParams();
  return new URLSearchParams(ctx.rawBody.toString('utf8'));
}

/**
 * How a refused cabinet request is answered: no session sends a page view to the sign-in page (a POST gets a
 * 401 page, so nothing it asked for is done after signing in); anything else is an HTML page with the message.
 */
export function cabinetErrorReply(ctx: Ctx, err: ApiError): Reply {
  // The route table has no trailing-slash patterns: /cabinet/ and /cabinet/payments/ mean the pages without it.
  if (err.status === 404 && ctx.route === '' && ctx.method === 'GET' && /^\/cabinet(\/[A-Za-z0-9._-]+)*\/$/.test(ctx.path)) {
    return { status: 303, location: ctx.path.slice(0, -1) };
  }
  if (err.status === 401) {
    if (ctx.method === 'GET' || ctx.method === 'HEAD') {
      const next = ctx.path.startsWith('/cabinet/') && ctx.path !== '/cabinet/login' ? `?next=${encodeURIComponent(ctx.path)}` : '';
      return { status: 303, location: `/cabinet/login${next}` };
    }
  }
  const lang = ctx.cabinet?.lang ?? pickLang(ctx.query, headerOf(ctx, 'accept-language'));
  const title = err.status === 404 ? ct(lang, 'not_found') : err.status === 403 && err.code === 'csrf_failed' ? ct(lang, 'forbidden') : ct(lang, 'error');
  const body = `<h1>${esc(title)}</h1><p class="alert" role="alert">${esc(err.message)}</p><p><a href="/cabinet/overview">${esc(ct(lang, 'overview'))}</a></p>`;
  const headers = err.headers ?? {};
  if (ctx.cabinet && err.status !== 401) return cabinetPage(ctx, { title, active: null, body, status: err.status, headers });
  return publicPage(lang, { title, body, status: err.status, headers });
}
