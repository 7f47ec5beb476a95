import type { Ctx, Reply } from '../../platform/http/types';
import type { Core } from '../../money/core/core';
import { esc } from '../pay-page/render';
import { formatAmount, type Lang } from '../pay-page/i18n';
import { merchantBalances } from '../../money/ledger/ledger';
import { DAY_MS } from '../../platform/util/time';
import { indexedBy } from '../../platform/storage/dialect';
import { cabinetPage, table } from './layout';
import { merchantShops } from './scope';
import { getMerchant } from '../../money/shops/store';
import { ct, when, paymentStatusCell, counted } from './text';
import type { PaymentRow } from '../../money/bank-port/payment';

/** Days the overview's chart covers, today included. */
const CHART_DAYS = 14;
const LATEST = 10;
/** Deliveries per shop looked at for failing endpoints: the recent ones say whether an endpoint fails now. */
const RECENT_DELIVERIES = 1000;

type LatestRow = Pick<PaymentRow, 'id' | 'seq' | 'order_id' | 'amount' | 'amount_refunded' | 'currency' | 'status' | 'created_at' | 'shop_id'>;

/** Payments read per query while the chart adds up its days; the server answers others between two reads. */
const CHART_SLICE_ROWS = 5000;

// Adds a shop's payments created since `firstDay` to the chart's days, one slice of the register index's range per read, so
// other requests run between two slices however many payments the days hold.
async function addDays(ctx: Ctx<Core>, shopId: string, firstDay: number, perDay: Map<number, DayFigure>): Promise<void> {
  let below: [number, number] = [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER];
  for (;;) {
    const rows = await ctx.app.store.all<{ created_at: number; seq: number; status: string; amount: number }>(
      `SELECT created_at, seq, status, amount FROM payments${indexedBy(ctx.app.store.engine, 'payments_register')}
     WHERE shop_id = ? AND mode = ? AND created_at >= ? AND (created_at, seq) < (?, ?) ORDER BY created_at DESC, seq DESC LIMIT ?`,
      shopId, ctx.cabinet!.mode, firstDay, below[0], below[1], CHART_SLICE_ROWS,
    );
    for (const r of rows) {
      const f = perDay.get(Math.floor(r.created_at / DAY_MS) * DAY_MS);
      if (!f) continue;
      f.count++;
      if (r.status === 'succeeded' || r.status === 'refunded') f.paid += r.amount;
    }
    if (rows.length < CHART_SLICE_ROWS) return;
    const last = rows[rows.length - 1];
    below = [last.created_at, last.seq];
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

/** GET /cabinet/overview: balances per shop, payments per day, the latest payments, failing webhook endpoints. */
export async function overview(ctx: Ctx<Core>): Promise<Reply> {
  const c = ctx.cabinet!;
  const { lang, mode } = c;
  const { store } = ctx.app;
  const shops = await merchantShops(ctx);
  const names = new Map(shops.map((s) => [s.id, s.name]));
  const balances = await merchantBalances(store, c.merchantId, mode);
  const cards = balances
    .map(
      (b) => `<div class="card"><span class="muted">${esc(b.shop_name)}</span>
<span class="sr">${esc(ct(lang, 'balance'))}</span><b>${esc(formatAmount(lang, b.balance, 'RUB'))}</b>
<span class="muted">${esc(ct(lang, 'available'))}: ${esc(formatAmount(lang, b.available, 'RUB'))}</span></div>`,
    )
    .join('');

  // Per shop, so each query walks that shop's register index; merged here.
  const latest: LatestRow[] = [];
  const perDay = new Map<number, DayFigure>();
  let today = 0;
  for (const s of shops) today = Math.max(today, await ctx.app.clocks.now(store, s.id, mode));
  const firstDay = Math.floor(today / DAY_MS) * DAY_MS - (CHART_DAYS - 1) * DAY_MS;
  for (let i = 0; i < CHART_DAYS; i++) perDay.set(firstDay + i * DAY_MS, { day_ms: firstDay + i * DAY_MS, count: 0, paid: 0 });
  for (const s of shops) {
    const sql = 'SELECT id, seq, order_id, amount, amount_refunded, currency, status, created_at, shop_id FROM payments WHERE shop_id = ? AND mode = ? ORDER BY created_at DESC, seq DESC LIMIT ?';
    latest.push(...(await store.all<LatestRow>(sql, s.id, mode, LATEST)));
    await addDays(ctx, s.id, firstDay, perDay);
  }
  latest.sort((a, b) => b.created_at - a.created_at || b.seq - a.seq);
  const latestTable = table(
    [{ label: ct(lang, 'created') }, { label: ct(lang, 'order') }, { label: ct(lang, 'amount'), num: true }, { label: ct(lang, 'status') }, { label: ct(lang, 'shop') }],
    latest.slice(0, LATEST).map((p) => [
      esc(when(p.created_at)),
      `<a href="/cabinet/payments/${esc(p.id)}">${esc(p.order_id)}</a>`,
      esc(formatAmount(lang, p.amount, p.currency)),
      paymentStatusCell(lang, p),
      esc(names.get(p.shop_id) ?? ''),
    ]),
    ct(lang, 'nothing'),
  );

  const failing = await failingEndpoints(ctx, shops.map((s) => s.id));
  const failingList = failing.length
    ? `<ul>${failing.map((f) => `<li><a href="/cabinet/webhooks?shop=${esc(f.shop_id)}">${esc(f.url)}</a> — ${esc(names.get(f.shop_id) ?? '')}: ${f.disabled ? esc(ct(lang, 'disabled')) : ''} ${f.failures ? `${f.failures} ✕` : ''}</li>`).join('')}</ul>`
    : `<p class="muted">${esc(ct(lang, 'none_failing'))}</p>`;

  const merchant = mode === 'live' ? await getMerchant(store, ctx.cabinet!.merchantId) : undefined;
  const body = `<h1>${esc(ct(lang, 'overview'))}</h1>
${mode === 'live' && !merchant?.live_enabled ? `<p class="muted">${esc(ct(lang, 'live_is_off'))}</p>` : ''}
<section aria-labelledby="h-bal"><h2 id="h-bal">${esc(ct(lang, 'balance'))}</h2><div class="grid">${cards || `<p class="muted">${esc(ct(lang, 'nothing'))}</p>`}</div></section>
<section aria-labelledby="h-chart"><h2 id="h-chart">${esc(ct(lang, 'chart_title'))}</h2>${paymentsChart(lang, [...perDay.values()])}</section>
<section aria-labelledby="h-last"><h2 id="h-last">${esc(ct(lang, 'last_payments'))}</h2>${latestTable}<p><a href="/cabinet/payments">${esc(ct(lang, 'payments'))} →</a></p></section>
<section aria-labelledby="h-fail"><h2 id="h-fail">${esc(ct(lang, 'failing_endpoints'))}</h2>${failingList}</section>`;
  return cabinetPage(ctx, { title: ct(lang, 'overview'), active: 'overview', body });
}

type Failing = { shop_id: string; url: string; disabled: boolean; failures: number };

/** Endpoints that are disabled, or whose recent deliveries failed or are being retried. */
async function failingEndpoints(ctx: Ctx<Core>, shopIds: string[]): Promise<Failing[]> {
  const { store } = ctx.app;
  const out: Failing[] = [];
  for (const shopId of shopIds) {
    const failed = await store.all<{ endpoint_id: string; n: number }>(
      `SELECT endpoint_id, COUNT(*) AS n FROM (SELECT endpoint_id, state, attempts FROM webhook_deliveries WHERE shop_id = ? AND mode = ? ORDER BY id DESC LIMIT ?) AS recent
         WHERE endpoint_id IS NOT NULL AND (state = 'failed' OR (state = 'pending' AND attempts > 0)) GROUP BY endpoint_id`,
      shopId, ctx.cabinet!.mode, RECENT_DELIVERIES,
    );
    const counts = new Map(failed.map((r) => [r.endpoint_id, r.n]));
    const endpoints = await store.all<{ id: string; url: string; disabled_at: number | null }>('SELECT id, url, disabled_at FROM webhook_endpoints WHERE shop_id = ? ORDER BY created_at, id', shopId);
    for (const e of endpoints) {
      const n = counts.get(e.id) ?? 0;
      if (e.disabled_at !== null || n > 0) out.push({ shop_id: shopId, url: e.url, disabled: e.disabled_at !== null, failures: n });
    }
  }
  return out;
}

/** One day of the chart: UTC day start, payments created, amount of those that succeeded (minor units). */
type DayFigure = { day_ms: number; count: number; paid: number };

/** The bars' own units: each day is DAY_W wide, a full bar is 100 high (the drawing stretches to its box). */
const DAY_W = 10;
const BAR_H = 100;

/** A "nice" top for an axis: `steps` (1, 2 or 5 by default) times a power of ten, at least `max` (and at least `floor`). */
function niceTop(max: number, floor: number, steps = [1, 2, 5, 10]): number {
  const m = Math.max(max, floor);
  const p = 10 ** Math.floor(Math.log10(m));
  return steps.map((k) => k * p).find((v) => v >= m)!;
}

/** Tops of a count axis whose half tick is a whole number too (a top of 5 labelled its half "3"). */
const COUNT_STEPS = [1, 2, 4, 10];

// One chart's figure, its own axis (0, half, top): SVG bars stretched to the box, HTML labels around it (inside the SVG they
// shrank to 6 px at 360 px). Day labels carry the steps they show at (k2: every second day from the latest, k3: every third).
function barChart(lang: Lang, o: { key: 'count' | 'paid'; total: string; days: DayFigure[]; value: (d: DayFigure) => number; top: number; label: (v: number) => string; fill: string; tip: (d: DayFigure) => string }): string {
  const [id, title] = [`chart-${o.key}`, ct(lang, `chart_${o.key}_title`)];
  const w = DAY_W * Math.max(1, o.days.length);
  const grid = [0, 0.5, 1]
    .map((f) => `<line x1="0" x2="${w}" y1="${BAR_H - f * BAR_H}" y2="${BAR_H - f * BAR_H}" stroke="#e5e7eb" vector-effect="non-scaling-stroke"/>`)
    .join('');
  const ticks = [1, 0.5, 0].map((f) => `<span>${esc(o.label(f * o.top))}</span>`).join('');
  const bars = o.days.map((d, i) => {
    const h = (o.value(d) / o.top) * BAR_H;
    return `<rect x="${i * DAY_W + DAY_W * 0.15}" y="${(BAR_H - h).toFixed(2)}" width="${DAY_W * 0.7}" height="${h.toFixed(2)}" fill="${o.fill}"><title>${esc(`${dayLabel(d.day_ms)}: ${o.tip(d)}`)}</title></rect>`;
  });
  const labels = o.days
    .map((d, i) => {
      const back = o.days.length - 1 - i;
      const steps = [back % 2 === 0 || o.days.length <= 7 ? 'k2' : '', back % 3 === 0 ? 'k3' : ''].filter(Boolean).join(' ');
      return `<span${steps ? ` class="${steps}"` : ''}>${esc(dayLabel(d.day_ms).slice(5))}</span>`;
    })
    .join('');
  return `<figure class="chart-box"><h3 aria-hidden="true">${esc(title)}</h3><div class="plot">
<div class="yaxis" aria-hidden="true">${ticks}</div>
<svg class="chart" viewBox="0 0 ${w} ${BAR_H}" preserveAspectRatio="none" overflow="visible" role="img" aria-labelledby="${id}" focusable="false">
<title id="${id}">${esc(`${title}: ${o.total}`)}</title>
${grid}
${bars.join('\n')}
</svg>
<div class="xaxis" aria-hidden="true">${labels}</div>
</div>
<figcaption class="legend"><span><i class="${o.key === 'count' ? 'c' : 'a'}"></i>${esc(ct(lang, `chart_${o.key}_legend`))}</span><span>${esc(ct(lang, 'chart_total'))}: ${esc(o.total)}</span></figcaption></figure>`;
}

// Payments per day as two server-drawn SVG charts, each with its own scale (a count and an amount never share an axis);
// presentation attributes only, so the strict CSP holds; a table of the figures follows for screen readers.
function paymentsChart(lang: Lang, days: DayFigure[]): string {
  const currency = 'RUB';
  const money = (minor: number) => formatAmount(lang, Math.round(minor), currency);
  const compact = (minor: number) => new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', { style: 'currency', currency, currencyDisplay: 'narrowSymbol', notation: 'compact', maximumFractionDigits: 1 }).format(minor / 100);
  const countChart = barChart(lang, {
    key: 'count',
    total: counted(lang, days.reduce((s, d) => s + d.count, 0), 'payments'),
    days,
    value: (d) => d.count,
    top: niceTop(Math.max(...days.map((d) => d.count)), 2, COUNT_STEPS),
    label: (v) => String(Math.round(v)),
    fill: '#93c5fd',
    tip: (d) => counted(lang, d.count, 'payments'),
  });
  const paidChart = barChart(lang, {
    key: 'paid',
    total: money(days.reduce((s, d) => s + d.paid, 0)),
    days,
    value: (d) => d.paid,
    top: niceTop(Math.max(...days.map((d) => d.paid)), 100),
    label: compact,
    fill: '#1d4ed8',
    tip: (d) => money(d.paid),
  });
  const rows = days.map((d) => `<tr><td>${esc(dayLabel(d.day_ms))}</td><td>${d.count}</td><td>${esc(money(d.paid))}</td></tr>`).join('');
  return `<div class="charts">
${countChart}
${paidChart}
</div>
<div class="sr"><table><caption>${esc(ct(lang, 'chart_title'))}</caption><thead><tr><th scope="col">${esc(ct(lang, 'chart_day'))}</th><th scope="col">${esc(ct(lang, 'chart_count_title'))}</th><th scope="col">${esc(ct(lang, 'chart_paid_title'))}</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** A UTC day as YYYY-MM-DD (the chart's days are UTC days, as the registers' dates). */
function dayLabel(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
