import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/render';
import type { Lang } from '../pay-page/i18n';
import { cabinetPage, field, postForm } from './layout';
import { chosenShop, ownShop, change, shopPicker } from './scope';
import { advanceShopClock, resetTestData } from '../../banks/simulator/clock';
import { form } from './sessions';
import { ct, when } from './text';

/** Longest single advance, as the API allows (POST /v1/test/clock/advance: up to ten years). */
const ADVANCE_MAX_S = 315_360_000;
const UNITS: Record<string, number> = { minutes: 60, hours: 3600, days: 86_400 };

/** GET /cabinet/test?shop=: the shop's test clock (now, advance) and reset of its test data. */
export async function testPage(ctx: Ctx<Core>): Promise<Reply> {
  const lang = ctx.cabinet!.lang;
  const shop = await chosenShop(ctx);
  const offset_ms = await ctx.app.clocks.offset(ctx.app.store, shop.id);
  const base = `/cabinet/test/${shop.id}`;
  const body = `<h1>${esc(ct(lang, 'test_mode'))} · ${esc(shop.name)}</h1>
${await shopPicker(ctx, '/cabinet/test', shop.id)}
<h2>${esc(ct(lang, 'test_clock'))}</h2>
<dl class="kv"><div><dt>${esc(ct(lang, 'clock_now'))}</dt><dd id="clock-now">${esc(when(ctx.app.clocks.real() + offset_ms))}</dd></div>
<div><dt>${esc(ct(lang, 'clock_offset'))}</dt><dd id="clock-offset">${esc(duration(lang, offset_ms))}</dd></div></dl>
${postForm(
  ctx,
  `${base}/advance`,
  `<div class="inline">${field('adv-n', ct(lang, 'advance_by'), '<input id="adv-n" name="amount" inputmode="numeric" required value="1">')}
${field('adv-unit', ' ', `<select id="adv-unit" name="unit" aria-label="${esc(ct(lang, 'advance_by'))}"><option value="minutes">${esc(ct(lang, 'minutes'))}</option><option value="hours" selected>${esc(ct(lang, 'hours'))}</option><option value="days">${esc(ct(lang, 'days'))}</option></select>`)}
<button class="btn" type="submit">${esc(ct(lang, 'advance'))}</button></div>`,
)}
<div class="danger-zone"><h2>${esc(ct(lang, 'reset_test'))}</h2><p class="muted">${esc(ct(lang, 'reset_hint'))}</p>
${postForm(ctx, `${base}/reset`, `<fieldset class="checks"><legend class="sr">${esc(ct(lang, 'reset_test'))}</legend><label><input type="checkbox" name="confirm" value="1" required> ${esc(ct(lang, 'reset_confirm'))}</label></fieldset><button class="btn danger" type="submit">${esc(ct(lang, 'reset_test'))}</button>`)}</div>`;
  return cabinetPage(ctx, { title: ct(lang, 'test_mode'), active: 'test_mode', body });
}

function duration(lang: Lang, ms: number): string {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const [dd, hh, mm] = lang === 'ru' ? ['д', 'ч', 'мин'] : ['d', 'h', 'min'];
  return `${d} ${dd} ${h} ${hh} ${m} ${mm}`;
}

/** POST /cabinet/test/:shop/advance {amount, unit}: moves the test clock and runs what became due, as the API does. */
export async function postAdvance(ctx: Ctx<Core>): Promise<Reply> {
  const shop = await ownShop(ctx, ctx.params.shop);
  const f = form(ctx);
  const lang = ctx.cabinet!.lang;
  return change(ctx, { action: 'test.clock.advance', target: shop.id, back: `/cabinet/test?shop=${shop.id}` }, async () => {
    const n = (f.get('amount') ?? '').trim();
    const unit = UNITS[f.get('unit') ?? ''];
    if (!/^\d{1,9}$/.test(n) || !unit) throw new Error(`Cannot advance the test clock: give a whole number of minutes, hours or days, got "${n.slice(0, 32)}"`);
    const seconds = Number(n) * unit;
    if (seconds > ADVANCE_MAX_S) throw new Error(`Cannot advance the test clock by ${seconds} s: at most ${ADVANCE_MAX_S} s at once`);
    const ran = await advanceShopClock(ctx.app, shop.id, seconds);
    ctx.logExtra = { jobs_run: ran };
    return `+${seconds} s, ${ct(lang, 'jobs_run')} ${ran}`;
  });
}

/** POST /cabinet/test/:shop/reset {confirm=1}: deletes the shop's test data, as POST /v1/test/reset does. */
export async function postReset(ctx: Ctx<Core>): Promise<Reply> {
  const shop = await ownShop(ctx, ctx.params.shop);
  const lang = ctx.cabinet!.lang;
  const confirmed = form(ctx).get('confirm') === '1';
  return change(ctx, { action: 'test.reset', target: shop.id, back: `/cabinet/test?shop=${shop.id}` }, async () => {
    if (!confirmed) throw new Error('Cannot reset test data: tick the confirmation first');
    const deleted = await resetTestData(ctx.app.store, shop.id);
    const total = Object.values(deleted).reduce((a, b) => a + b, 0);
    return `${ct(lang, 'deleted_rows')} ${total}`;
  });
}
