import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/layout';
import { listAudit } from './audit';
import { cabinetPage, table } from './layout';
import { ct, when } from './text';

/** Lines per page of the audit log. */
const AUDIT_PAGE = 100;

/** GET /cabinet/audit?before=: the merchant's audit log, newest first, every sign-in and change. */
export async function auditPage(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const before = Number(ctx.query.get('before'));
  const rows = await listAudit(ctx.app.store, ctx.cabinet!.merchantId, { beforeId: Number.isSafeInteger(before) && before > 0 ? before : undefined, limit: AUDIT_PAGE + 1 });
  const page = rows.slice(0, AUDIT_PAGE);
  const list = table(
    [{ label: ct(lang, 'time') }, { label: ct(lang, 'who') }, { label: ct(lang, 'action') }, { label: ct(lang, 'target') }, { label: ct(lang, 'details') }, { label: 'IP' }],
    page.map((r) => [esc(when(r.at)), esc(r.email), `<span class="mono">${esc(r.action)}</span>`, `<small class="mono">${esc(r.target)}</small>`, esc(r.detail), `<small class="mono">${esc(r.ip)}</small>`]),
    ct(lang, 'nothing'),
  );
  const more = rows.length > AUDIT_PAGE ? `<div class="pager"><a class="btn secondary" rel="next" href="/cabinet/audit?before=${page[page.length - 1].id}">${esc(ct(lang, 'older'))}</a></div>` : '';
  return cabinetPage(ctx, { title: ct(lang, 'audit'), active: 'audit', body: `<h1>${esc(ct(lang, 'audit'))}</h1>${list}${more}` });
}
