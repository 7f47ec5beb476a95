import { esc } from '../pay-page/render';
import { formatAmount, type Lang } from '../pay-page/i18n';
import { counted, ct } from './text';

/** One day of the chart: UTC day start, payments created, amount of those that succeeded (minor units). */
export interface DayFigure {
  day_ms: number;
  count: number;
  paid: number;
}

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

// One bar chart with its own axis (0, half, top): SVG bars stretched to the box, HTML labels around it (inside the SVG they
// shrank to 6 px at 360 px). Day labels carry the steps they show at (k2: every second day from the latest, k3: every third).
function barChart(o: { id: string; title: string; days: DayFigure[]; value: (d: DayFigure) => number; top: number; label: (v: number) => string; fill: string; tip: (d: DayFigure) => string }): string {
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
  return `<div class="plot">
<div class="yaxis" aria-hidden="true">${ticks}</div>
<svg class="chart" viewBox="0 0 ${w} ${BAR_H}" preserveAspectRatio="none" overflow="visible" role="img" aria-labelledby="${o.id}" focusable="false">
<title id="${o.id}">${esc(o.title)}</title>
${grid}
${bars.join('\n')}
</svg>
<div class="xaxis" aria-hidden="true">${labels}</div>
</div>`;
}

// Payments per day as two server-drawn SVG charts, each with its own scale (a count and an amount never share an axis);
// presentation attributes only, so the strict CSP holds; a table of the figures follows for screen readers.
export function paymentsChart(lang: Lang, days: DayFigure[], currency = 'RUB'): string {
  const totalCount = days.reduce((s, d) => s + d.count, 0);
  const totalPaid = days.reduce((s, d) => s + d.paid, 0);
  const money = (minor: number) => formatAmount(lang, Math.round(minor), currency);
  const compact = (minor: number) => new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', { style: 'currency', currency, currencyDisplay: 'narrowSymbol', notation: 'compact', maximumFractionDigits: 1 }).format(minor / 100);
  const countChart = barChart({
    id: 'chart-count',
    title: `${ct(lang, 'chart_count_title')}: ${counted(lang, totalCount, 'payments')}`,
    days,
    value: (d) => d.count,
    top: niceTop(Math.max(...days.map((d) => d.count)), 2, COUNT_STEPS),
    label: (v) => String(Math.round(v)),
    fill: '#93c5fd',
    tip: (d) => counted(lang, d.count, 'payments'),
  });
  const paidChart = barChart({
    id: 'chart-paid',
    title: `${ct(lang, 'chart_paid_title')}: ${money(totalPaid)}`,
    days,
    value: (d) => d.paid,
    top: niceTop(Math.max(...days.map((d) => d.paid)), 100),
    label: compact,
    fill: '#1d4ed8',
    tip: (d) => money(d.paid),
  });
  const rows = days.map((d) => `<tr><td>${esc(dayLabel(d.day_ms))}</td><td>${d.count}</td><td>${esc(money(d.paid))}</td></tr>`).join('');
  return `<div class="charts">
<figure class="chart-box"><h3 aria-hidden="true">${esc(ct(lang, 'chart_count_title'))}</h3>${countChart}
<figcaption class="legend"><span><i class="c"></i>${esc(ct(lang, 'chart_count_legend'))}</span><span>${esc(ct(lang, 'chart_total'))}: ${esc(counted(lang, totalCount, 'payments'))}</span></figcaption></figure>
<figure class="chart-box"><h3 aria-hidden="true">${esc(ct(lang, 'chart_paid_title'))}</h3>${paidChart}
<figcaption class="legend"><span><i class="a"></i>${esc(ct(lang, 'chart_paid_legend'))}</span><span>${esc(ct(lang, 'chart_total'))}: ${esc(money(totalPaid))}</span></figcaption></figure>
</div>
<div class="sr"><table><caption>${esc(ct(lang, 'chart_title'))}</caption><thead><tr><th scope="col">${esc(ct(lang, 'chart_day'))}</th><th scope="col">${esc(ct(lang, 'chart_count_title'))}</th><th scope="col">${esc(ct(lang, 'chart_paid_title'))}</th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** A UTC day as YYYY-MM-DD (the chart's days are UTC days, as the registers' dates). */
function dayLabel(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
