import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/render';
import { addEndpoint, deleteEndpoint, deliveryLog, getEndpoint, listEndpoints, rotateSecret, WEBHOOK_EVENTS, type Endpoint } from '../../money/webhooks/store';
import { cabinetPage, checkboxes, createRefused, field, orRefused, postForm, shownOnce, table, tags, options } from './layout';
import { audit, change, chosenShop, ownShop, refused, shopOfOwn, shopPicker } from './scope';
import { form } from './sessions';
import { ct, when, deliveryText } from './text';

/** Lines of the delivery log a page shows (the newest). */
const LOG_LINES = 100;

/** GET /cabinet/webhooks?shop=&event=&status=: endpoints (add, rotate, delete) and the delivery log with resend. */
export async function webhooksPage(ctx: Ctx<Core>): Promise<Reply> {
  const c = ctx.cabinet!;
  const lang = c.lang;
  const shop = await chosenShop(ctx);
  const endpoints = await listEndpoints(ctx.app.store, shop.id);
  const back = `/cabinet/webhooks?shop=${shop.id}`;
  const list = table(
    [{ label: 'URL' }, { label: ct(lang, 'events') }, { label: ct(lang, 'signature') }, { label: ct(lang, 'status') }, { label: ct(lang, 'action') }],
    endpoints.map((e) => [
      `<span class="mono break url">${esc(e.url)}</span>`,
      e.events ? tags(e.events.split(',')) : esc(ct(lang, 'all_events')),
      esc(e.signature),
      e.disabled_at !== null ? `${esc(ct(lang, 'disabled'))} ${esc(when(e.disabled_at))}: ${esc(e.disabled_reason ?? '')}` : esc(ct(lang, 'active')),
      `<a class="chip" href="#rotate-${esc(e.id)}">${esc(ct(lang, 'rotate'))}</a> ${postForm(ctx, `/cabinet/webhooks/${e.id}/delete`, `<button class="chip" type="submit" aria-label="${esc(`${ct(lang, 'delete')} ${e.url}`)}">${esc(ct(lang, 'delete'))}</button>`, { confirm: ct(lang, 'confirm') })}`,
    ]),
    ct(lang, 'nothing'),
  );
  const eventFilter = (ctx.query.get('event') ?? '').trim();
  const statusFilter = ctx.query.get('status') ?? '';
  const items = (await deliveryLog(ctx.app.store, { shopId: shop.id, mode: c.mode, eventId: eventFilter || undefined, limit: 1000 }))
    .filter((i) => !statusFilter || i.status === statusFilter)
    .reverse()
    .slice(0, LOG_LINES);
  const log = table(
    [{ label: ct(lang, 'time') }, { label: ct(lang, 'event') }, { label: ct(lang, 'attempt'), num: true }, { label: ct(lang, 'status') }, { label: ct(lang, 'answer') }, { label: 'URL' }, { label: ct(lang, 'action') }],
    items.map((i) => [
      esc(i.attempted_at ? when(i.attempted_at) : `→ ${when(i.next_attempt_at)}`),
      `<span class="mono">${esc(i.event)}</span><br><a class="mono" href="/cabinet/webhooks?shop=${esc(shop.id)}&amp;event=${esc(i.event_id)}">${esc(i.event_id)}</a>`,
      String(i.attempt),
      `<span class="badge ${esc(i.status)}">${esc(deliveryText(lang, i.status))}</span>`,
      esc(i.response_code ?? '') + (i.error ? ` <small>${esc(i.error)}</small>` : '') + (i.latency_ms !== null ? ` <small>${i.latency_ms} ms</small>` : ''),
      `<span class="mono">${esc(i.url)}</span>`,
      postForm(ctx, `/cabinet/events/${i.event_id}/resend`, `<input type="hidden" name="back" value="${esc(back)}"><button class="chip" type="submit" aria-label="${esc(`${ct(lang, 'resend')} ${i.event_id}`)}">${esc(ct(lang, 'resend'))}</button>`),
    ]),
    ct(lang, 'nothing'),
  );
  const events = `${checkboxes(ct(lang, 'events'), 'event', WEBHOOK_EVENTS)}<p class="muted">${esc(ct(lang, 'events_hint'))}</p>`;
  const body = `<h1>${esc(ct(lang, 'webhooks'))} · ${esc(shop.name)}</h1>
${await shopPicker(ctx, '/cabinet/webhooks', shop.id)}
${list}
${rotateForms(ctx, endpoints)}
<h2>${esc(ct(lang, 'add_endpoint'))}</h2>
${postForm(
  ctx,
  '/cabinet/webhooks',
  `<input type="hidden" name="shop" value="${esc(shop.id)}">
${field('w-url', 'URL', '<input id="w-url" name="url" type="url" required maxlength="2000" placeholder="https://shop.example/hooks/psp">')}
${events}
${field('w-sig', ct(lang, 'signature'), '<select id="w-sig" name="signature"><option value="v2">v2</option><option value="v1">v1</option></select>')}
<button class="btn" type="submit">${esc(ct(lang, 'add_endpoint'))}</button>`,
)}
<h2 id="log">${esc(ct(lang, 'delivery_log'))}</h2>
<form method="get" action="/cabinet/webhooks" class="filters" role="search"><input type="hidden" name="shop" value="${esc(shop.id)}">
${field('l-event', ct(lang, 'event_id'), `<input id="l-event" name="event" value="${esc(eventFilter)}" spellcheck="false">`)}
${field('l-status', ct(lang, 'status'), `<select id="l-status" name="status">${options([['', ct(lang, 'any_status')], ...['failed', 'pending', 'succeeded'].map((v): [string, string] => [v, deliveryText(lang, v)])], statusFilter)}</select>`)}
<div class="actions"><button class="btn" type="submit">${esc(ct(lang, 'filter'))}</button></div></form>
${log}`;
  return cabinetPage(ctx, { title: ct(lang, 'webhooks'), active: 'webhooks', body });
}

/** Per endpoint, a full-width rotate form under the table (the overlap field needs more room than a cell); *Rotate* links here. */
function rotateForms(ctx: Ctx<Core>, endpoints: Endpoint[]): string {
  if (endpoints.length === 0) return '';
  const lang = ctx.cabinet!.lang;
  return `<h2>${esc(ct(lang, 'rotate_secret'))}</h2>
${endpoints
  .map((e) =>
    postForm(
      ctx,
      `/cabinet/webhooks/${e.id}/rotate`,
      `<span class="url mono break">${esc(e.url)}</span>
${field(`ov-${e.id}`, ct(lang, 'overlap_hours'), `<input id="ov-${e.id}" name="overlap" inputmode="numeric" value="0" size="4">`)}
<button class="btn secondary" type="submit" aria-label="${esc(`${ct(lang, 'rotate')} ${e.url}`)}">${esc(ct(lang, 'rotate'))}</button>`,
      { cls: 'rotate', id: `rotate-${e.id}` },
    ),
  )
  .join('\n')}`;
}

/** POST /cabinet/webhooks {shop, url, event…, signature}: as `kopek webhook add`; the secret is shown once, on this answer. */
export async function postEndpoint(ctx: Ctx<Core>): Promise<Reply> {
  const f = form(ctx);
  const shop = await ownShop(ctx, f.get('shop'));
  const endpoint = { shopId: shop.id, url: (f.get('url') ?? '').trim(), events: f.getAll('event').join(','), signature: f.get('signature') ?? 'v2', allow: ctx.app.config.webhookAllow };
  const made = await orRefused(addEndpoint(ctx.app.store, endpoint, ctx.app.clocks.real()));
  if ('refused' in made) return createRefused(ctx, 'webhooks', 'add_endpoint', made.refused, `/cabinet/webhooks?shop=${shop.id}`);
  await audit(ctx, 'webhook.add', made.endpoint.id, made.endpoint.url);
  return secretPage(ctx, shop.id, made.endpoint.url, made.secret);
}

function secretPage(ctx: Ctx<Core>, shopId: string, url: string, secret: string, note = ''): Reply {
  const lang = ctx.cabinet!.lang;
  const shown = `<p class="mono">${esc(url)}</p>
${field('new-secret', 'Webhook secret', `<output id="new-secret" class="secret">${esc(secret)}</output>`)}`;
  const title = ct(lang, 'webhooks');
  const next = `/cabinet/webhooks?shop=${shopId}`;
  return shownOnce(ctx, { title, active: 'webhooks', h1: title, note: `${ct(lang, 'shown_once')}${note ? ` ${note}` : ''}`, shown, next });
}

async function ownEndpoint(ctx: Ctx<Core>) {
  const e = await getEndpoint(ctx.app.store, ctx.params.id);
  await shopOfOwn(ctx, e?.shop_id, `Cannot find webhook endpoint "${ctx.params.id.slice(0, 64)}"`);
  return e!;
}

/** POST /cabinet/webhooks/:id/rotate {overlap}: as `kopek webhook rotate --overlap HOURS`; the new secret is shown once. */
export async function postRotate(ctx: Ctx<Core>): Promise<Reply> {
  const e = await ownEndpoint(ctx);
  const raw = (form(ctx).get('overlap') ?? '0').trim() || '0';
  const back = `/cabinet/webhooks?shop=${e.shop_id}`;
  if (!/^\d+(\.\d+)?$/.test(raw)) return refused(ctx, back, new Error(`Cannot rotate webhook secret: the overlap must be a number of hours, got "${raw.slice(0, 32)}"`));
  const secret = await orRefused(rotateSecret(ctx.app.store, e.id, Number(raw), ctx.app.clocks.real()));
  if (typeof secret !== 'string') return refused(ctx, back, secret.refused);
  await audit(ctx, 'webhook.rotate', e.id, `overlap ${raw} h`);
  return secretPage(ctx, e.shop_id, e.url, secret, Number(raw) > 0 ? `(${raw} h)` : '');
}

/** POST /cabinet/webhooks/:id/delete: as `kopek webhook delete`. */
export async function postDeleteEndpoint(ctx: Ctx<Core>): Promise<Reply> {
  const e = await ownEndpoint(ctx);
  return change(ctx, { action: 'webhook.delete', target: e.id, back: `/cabinet/webhooks?shop=${e.shop_id}` }, async () => {
    await deleteEndpoint(ctx.app.store, e.id);
    return e.url;
  });
}
