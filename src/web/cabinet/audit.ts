import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import type { Store, Tx } from '../../platform/storage/store';
import { esc } from '../pay-page/render';
import { cabinetPage, table } from './layout';
import { ct, when } from './text';

/** A line of the log as the page shows it. */
interface AuditRow {
  id: number;
  email: string;
  action: string;
  target: string;
  detail: string;
  ip: string;
  at: number;
}

export interface Actor {
  merchantId: string | null;
  userId: string | null;
  email: string;
  ip: string;
}

/** Longest detail kept per line: enough for a reason or a list of scopes, never a whole request. */
const DETAIL_MAX = 500;

/** Append a line to the audit log in its own transaction. A secret never goes into `detail`. */
export async function recordAudit(store: Store, actor: Actor, action: string, target: string, detail: string, now: number): Promise<void> {
  await store.tx((tx) => insertAudit(tx, actor, action, target, detail, now));
}

/** Append a line to the audit log inside the caller's transaction (the change and its line commit together). */
export async function insertAudit(tx: Tx, actor: Actor, action: string, target: string, detail: string, now: number): Promise<void> {
  await tx.run(
    'INSERT INTO cabinet_audit (merchant_id, user_id, email, action, target, detail, ip, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    actor.merchantId, actor.userId, actor.email.slice(0, 254), action, target, detail.slice(0, DETAIL_MAX), actor.ip, now,
  );
}

const AUDIT_PAGE = 100;

/** GET /cabinet/audit?before=: the merchant's audit log, newest first, every sign-in and change. */
export async function auditPage(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const before = Number(ctx.query.get('before'));
  const below = Number.isSafeInteger(before) && before > 0 ? before : Number.MAX_SAFE_INTEGER;
  const rows = await ctx.app.store.all<AuditRow>('SELECT * FROM cabinet_audit WHERE merchant_id = ? AND id < ? ORDER BY id DESC LIMIT ?', ctx.cabinet!.merchantId, below, AUDIT_PAGE + 1);
  const page = rows.slice(0, AUDIT_PAGE);
  const list = table(
    [{ label: ct(lang, 'time') }, { label: ct(lang, 'who') }, { label: ct(lang, 'action') }, { label: ct(lang, 'target') }, { label: ct(lang, 'details') }, { label: 'IP' }],
    page.map((r) => [esc(when(r.at)), esc(r.email), `<span class="mono">${esc(r.action)}</span>`, `<small class="mono">${esc(r.target)}</small>`, esc(r.detail), `<small class="mono">${esc(r.ip)}</small>`]),
    ct(lang, 'nothing'),
  );
  const more = rows.length > AUDIT_PAGE ? `<div class="pager"><a class="btn secondary" rel="next" href="/cabinet/audit?before=${page[page.length - 1].id}">${esc(ct(lang, 'older'))}</a></div>` : '';
  return cabinetPage(ctx, { title: ct(lang, 'audit'), active: 'audit', body: `<h1>${esc(ct(lang, 'audit'))}</h1>${list}${more}` });
}
