import type { Ctx, Reply } from '../../platform/http/types';
import type { Lang } from '../pay-page/i18n';
import { esc, newNonce, pageHeaders, documentHead } from '../pay-page/render';
import { CSS } from '../pay-page/styles';
import { ct, type CabKey } from './text';

/** The cabinet's additions to the hosted page's stylesheet: a wider sheet, navigation, tables that fold at 640 px. */
const CAB_CSS = `
.cab .sheet{max-width:1100px;margin:16px auto}
.top{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:8px 16px;max-width:1100px;margin:0 auto;padding:12px 16px}
.top .brand{font-weight:700;font-size:18px;color:#111827;text-decoration:none}
.top form{display:inline}
.top .who{font-size:13px;color:#4b5563}
.tools{display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.chip{display:inline-flex;align-items:center;min-height:36px;padding:4px 12px;border:1px solid #c7d2fe;border-radius:999px;background:#fff;color:#1d4ed8;font:inherit;font-size:14px;cursor:pointer;text-decoration:none;white-space:nowrap}
.chip[aria-pressed=true],.chip[aria-current=page]{background:#1d4ed8;color:#fff;border-color:#1d4ed8}
nav.sections{max-width:1100px;margin:0 auto;padding:0 16px}
nav.sections ul{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:6px}
.skip{position:absolute;left:-9999px}
.skip:focus{left:8px;top:8px;background:#fff;padding:8px;z-index:9}
.cab h1{margin:0 0 16px;font-size:24px}
.cab h2{margin:24px 0 12px;font-size:18px}
.cab section+section{margin-top:8px}
.ok{border:1px solid #bbf7d0;background:#f0fdf4;color:#166534;border-radius:10px;padding:10px 12px;margin-bottom:14px}
.secret{display:block;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:14px;background:#f9fafb;border:1px solid #e5e7eb;border-radius:8px;padding:8px 10px;word-break:break-all;user-select:all}
table.list{width:100%;border-collapse:collapse;font-size:14px}
table.list th,table.list td{padding:8px 10px;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top}
table.list th{color:#4b5563;font-weight:600;background:#f9fafb;white-space:nowrap}
table.list td form{display:inline-block;margin:2px 0}
.tags{display:flex;flex-wrap:wrap;gap:4px;min-width:0}
.tag{display:inline-block;white-space:nowrap;padding:1px 6px;border-radius:6px;background:#f3f4f6;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.break{overflow-wrap:anywhere}
.nowrap{white-space:nowrap}
table.list td .url{display:inline-block;min-width:24ch}
table.list td.num,table.list th.num{text-align:right;white-space:nowrap}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(220px,1fr));gap:12px}
.card{border:1px solid #e5e7eb;border-radius:12px;padding:12px 14px}
.card b{display:block;font-size:20px}
.filters{display:flex;flex-wrap:wrap;gap:8px 12px;margin-bottom:12px}
.filters .field{margin:0;flex:1 1 100px;min-width:0}
.filters .field:has(select){flex:1.4 1 150px}
.filters .field:has(input[type=date]){flex:1.3 1 150px}
.filters .field:has(#f-order){flex:1 1 130px}
.filters .field label{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.filters .field input,.filters .field select{height:44px;min-height:44px;min-width:0}
.filters .actions{flex:1 1 100%;display:flex;flex-wrap:wrap;gap:8px;align-items:center}
.rotate{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:end;padding:10px 0;border-bottom:1px solid #e5e7eb}
.rotate .field{margin:0;flex:0 1 280px}
.rotate .url{flex:1 1 260px;align-self:center}
.field select,.field textarea{display:block;width:100%;min-height:44px;padding:8px 10px;border:1px solid #9ca3af;border-radius:10px;font:inherit;background:#fff;color:inherit}
.cab .field input{min-height:44px;font-size:16px}
.inline{display:flex;flex-wrap:wrap;gap:8px;align-items:end}
.inline .field{margin:0;flex:1 1 160px}
.cab .btn{width:auto;min-height:44px;display:inline-flex;align-items:center;white-space:nowrap}
.checks{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(270px,100%),1fr));gap:4px 12px;margin:0 0 12px;padding:0;border:0}
.checks label{display:flex;gap:8px;align-items:center;font-size:14px;font-weight:400}
.checks legend{font-weight:600;font-size:14px;margin-bottom:4px;padding:0}
.pager{display:flex;gap:8px;flex-wrap:wrap;margin-top:12px}
.badge{display:inline-block;white-space:nowrap;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:600;background:#e5e7eb;color:#374151}
.pstatus{display:inline-flex;flex-direction:column;align-items:flex-start;gap:2px}
.refund-note{font-size:12px;color:#4b5563}
.badge.succeeded{background:#dcfce7;color:#166534}.badge.failed,.badge.expired{background:#fee2e2;color:#991b1b}.badge.refunded,.badge.cancelled{background:#e0e7ff;color:#3730a3}.badge.pending,.badge.processing{background:#fef3c7;color:#92400e}
figure{margin:0}
.plot{display:grid;grid-template-columns:auto minmax(0,1fr);column-gap:8px;padding-right:12px;font-size:12px;line-height:16px;color:#4b5563;margin-bottom:8px}
.plot .yaxis{display:flex;flex-direction:column;justify-content:space-between;margin:-8px 0;text-align:right;white-space:nowrap}
svg.chart{display:block;width:100%;height:160px}
.plot .xaxis{grid-column:2;display:grid;grid-auto-flow:column;grid-auto-columns:minmax(0,1fr);margin-top:4px;white-space:nowrap}
.plot .xaxis span{justify-self:center;visibility:hidden}
.plot .xaxis .k2{visibility:visible}
@container (max-width:420px){.plot .xaxis .k2{visibility:hidden}.plot .xaxis .k3{visibility:visible}}
.legend{display:flex;gap:16px;font-size:13px;color:#4b5563;flex-wrap:wrap}
.legend i{display:inline-block;width:12px;height:12px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.legend .c{background:#93c5fd}.legend .a{background:#1d4ed8}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(300px,100%),1fr));gap:16px}
.charts figure{min-width:0;container-type:inline-size}
.charts h3{margin:0 0 4px;font-size:15px}
.totp svg{width:200px;height:200px}
.danger-zone{border:1px solid #fecaca;border-radius:12px;padding:12px 14px;margin-top:16px}
@media (max-width:640px){
 .top{flex-wrap:nowrap;gap:8px;padding:6px 12px}
 .top .brand{font-size:16px;white-space:nowrap}
 .top .brand .long,.top .who{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
 .top .tools{flex-wrap:nowrap;gap:6px}
 .top .chip,nav.sections .chip{min-height:32px;padding:2px 10px;font-size:13px}
 nav.sections{padding:0}
 nav.sections ul{flex-wrap:nowrap;overflow-x:auto;padding:2px 12px 8px;scrollbar-width:thin}
 nav.sections li{flex:none}
 .test{padding:4px 12px;font-size:13px}
 table.list thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
 table.list tr{display:block;border-bottom:2px solid #e5e7eb;padding:6px 0}
 table.list td{display:flex;justify-content:space-between;gap:12px;border:0;padding:4px 2px;text-align:right}
 table.list td::before{content:attr(data-label);color:#6b7280;font-weight:600;text-align:left}
 table.list td.num{white-space:normal}
 .pstatus{align-items:flex-end}
 .cab .sheet{margin:0}
}
`;

/** Confirms data-confirm forms before sending; on a narrow screen scrolls the section strip (never the page) to the current one. */
const SCRIPT = `document.addEventListener('submit',function(e){var f=e.target;var q=f&&f.getAttribute('data-confirm');if(q&&!window.confirm(q))e.preventDefault();});
var c=document.querySelector('nav.sections [aria-current=page]'),u=c&&c.closest('ul');if(u&&u.scrollWidth>u.clientWidth)u.scrollLeft+=c.getBoundingClientRect().left-u.getBoundingClientRect().left-(u.clientWidth-c.offsetWidth)/2;`;

/** A POST form with its CSRF field; `confirm` asks first. */
export function postForm(ctx: Ctx, action: string, inner: string, o: { confirm?: string; cls?: string; id?: string } = {}): string {
  const confirm = o.confirm ? ` data-confirm="${esc(o.confirm)}"` : '';
  const csrf = `<input type="hidden" name="_csrf" value="${esc(ctx.cabinet?.csrf ?? '')}">`;
  return `<form method="post" action="${esc(action)}"${confirm}${o.cls ? ` class="${o.cls}"` : ''}${o.id ? ` id="${esc(o.id)}"` : ''}>${csrf}${inner}</form>`;
}

export function field(id: string, label: string, input: string, hint?: string): string {
  return `<div class="field"><label for="${id}">${esc(label)}</label>${input}${hint ? `<small class="hint" id="${id}-hint">${esc(hint)}</small>` : ''}</div>`;
}

/** The `<option>`s of a select, [value, label] each, the one whose value is `selected` chosen. */
export function options(items: Array<[value: string, label: string]>, selected: string | null | undefined): string {
  return items.map(([v, label]) => `<option value="${esc(v)}"${v === selected ? ' selected' : ''}>${esc(label)}</option>`).join('');
}

/** A fieldset of checkboxes `name`, one per code (scopes, events), those `checked` ticked. */
export function checkboxes(legend: string, name: string, codes: readonly string[], checked: (code: string) => boolean = () => false): string {
  const boxes = codes.map((c) => `<label><input type="checkbox" name="${name}" value="${c}"${checked(c) ? ' checked' : ''}> <code>${c}</code></label>`);
  return `<fieldset class="checks"><legend>${esc(legend)}</legend>${boxes.join('')}</fieldset>`;
}

/** Short codes (scopes, event names) as tags that wrap between, never inside, one another. */
export function tags(items: string[], empty = '—'): string {
  return items.length ? `<span class="tags">${items.map((i) => `<code class="tag">${esc(i)}</code>`).join(' ')}</span>` : esc(empty);
}

/** A table that folds into labelled rows on a narrow screen. */
export function table(heads: Array<{ label: string; num?: boolean }>, rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p class="muted">${esc(empty)}</p>`;
  const th = heads.map((h) => `<th scope="col"${h.num ? ' class="num"' : ''}>${esc(h.label)}</th>`).join('');
  const body = rows
    .map((r) => `<tr>${r.map((cell, i) => `<td data-label="${esc(heads[i].label)}"${heads[i].num ? ' class="num"' : ''}>${cell}</td>`).join('')}</tr>`)
    .join('\n');
  return `<table class="list"><thead><tr>${th}</tr></thead><tbody>\n${body}\n</tbody></table>`;
}

/** The navigation's sections, each at /cabinet/ and its key (test mode at /cabinet/test). */
const SECTIONS: CabKey[] = ['overview', 'payments', 'refunds', 'payouts', 'shops', 'keys', 'webhooks', 'test_mode', 'audit', 'account'];

type PageOptions = { title: string; body: string; status?: number; headers?: Record<string, string> };

function reply(lang: Lang, o: PageOptions, top: string): Reply {
  const nonce = newNonce();
  const head = documentHead(lang, nonce, `${o.title} · kopek`, CSS + CAB_CSS).replace('<meta name="referrer" content="no-referrer">', '<meta name="referrer" content="same-origin">');
  const html = `${head}
<body class="cab">
<a class="skip" href="#main">${esc(ct(lang, 'skip'))}</a>
${top}
<main class="sheet" id="main" tabindex="-1"><div class="body">
${o.body}
</div></main>
<script nonce="${nonce}">${SCRIPT}</script>
</body>
</html>`;
  // Under `no-referrer` a browser sends `Origin: null` with a form, which sameOriginRefusal (sessions.ts) refuses.
  return { status: o.status ?? 200, html, headers: { ...pageHeaders(nonce, null), 'Referrer-Policy': 'same-origin', ...o.headers } };
}

/** A signed-in page: header with mode and language switches, the section navigation, the flash message, the body. */
export function cabinetPage(ctx: Ctx, o: PageOptions & { active: CabKey | null }): Reply {
  const c = ctx.cabinet!;
  const lang = c.lang;
  const back = `<input type="hidden" name="back" value="${esc(ctx.path)}">`;
  const modeButtons = (['test', 'live'] as const)
    .map((m) => `<button class="chip" name="mode" value="${m}" aria-pressed="${c.mode === m}">${esc(ct(lang, m === 'test' ? 'mode_test' : 'mode_live'))}</button>`)
    .join('');
  const other = lang === 'ru' ? 'en' : 'ru';
  const top = `<header class="top">
<a class="brand" href="/cabinet/overview">kopek<span class="long"> · ${esc(ct(lang, 'cabinet'))}</span></a>
<div class="tools">
${postForm(ctx, '/cabinet/prefs', `${back}<span class="sr">${esc(ct(lang, 'mode_label'))}</span>${modeButtons}`)}
${postForm(ctx, '/cabinet/prefs', `${back}<button class="chip" name="lang" value="${other}" lang="${other}">${esc(ct(lang, 'switch_lang'))}</button>`)}
<span class="who">${esc(c.email)}</span>
${postForm(ctx, '/cabinet/logout', `<button class="chip">${esc(ct(lang, 'sign_out'))}</button>`)}
</div>
</header>
<nav class="sections" aria-label="${esc(ct(lang, 'nav'))}"><ul>
${SECTIONS.map((k) => `<li><a class="chip" href="/cabinet/${k === 'test_mode' ? 'test' : k}"${o.active === k ? ' aria-current="page"' : ''}>${esc(ct(lang, k))}</a></li>`).join('\n')}
</ul></nav>
${c.mode === 'test' ? `<div class="test" role="note">${esc(ct(lang, 'test_banner'))}</div>` : ''}`;
  const ok = c.flash?.kind === 'ok';
  const flash = c.flash ? `<div class="${ok ? 'ok' : 'alert'}" role="${ok ? 'status' : 'alert'}">${esc(c.flash.text)}</div>` : '';
  return reply(lang, { ...o, body: `${flash}${o.body}` }, top);
}

/** A page outside a session (sign-in, errors before sign-in). */
export function publicPage(lang: Lang, o: PageOptions): Reply {
  return reply(lang, o, `<header class="top"><span class="brand">kopek · ${esc(ct(lang, 'cabinet'))}</span></header>`);
}

/** The answer of a form that made a secret: `shown` (a secret, codes) shown once, under a note, and the way on. */
export function shownOnce(ctx: Ctx, o: { title: string; active: CabKey; h1: string; note: string; shown: string; next: string; nextLabel?: string }): Reply {
  const body = `<h1>${esc(o.h1)}</h1>
<p class="ok" role="status">${esc(o.note)}</p>
${o.shown}
<p><a class="btn" href="${esc(o.next)}">${esc(o.nextLabel ?? ct(ctx.cabinet!.lang, 'back'))}</a></p>`;
  return cabinetPage(ctx, { title: o.title, active: o.active, body });
}

/** What `made` resolves to, or its rejection as `{ refused }`: a form's refusal is shown on a page, not thrown. */
export function orRefused<T>(made: Promise<T>): Promise<T | { refused: unknown }> {
  return made.catch((err: unknown) => ({ refused: err }));
}

/** A create form refused (bad input): its reason, with the way back to the form (400). */
export function createRefused(ctx: Ctx, active: CabKey, heading: CabKey, err: unknown, back: string): Reply {
  const lang = ctx.cabinet!.lang;
  const body = `<h1>${esc(ct(lang, heading))}</h1><p class="alert" role="alert">${esc((err as Error).message)}</p><p><a href="${esc(back)}">${esc(ct(lang, 'back'))}</a></p>`;
  return cabinetPage(ctx, { title: ct(lang, active), active, status: 400, body });
}
