import { esc } from '../pay-page/layout';
import { formatAmount, type Lang } from '../pay-page/i18n';
import { ct } from './text';

/** One day of the chart: UTC day start, payments created, amount of those that succeeded (minor units). */
export interface DayFigure {
  day_ms: number;
  count: number;
  paid: number;
}

const W = 640;
const H = 220;
const PAD = { l: 36, r: 12, t: 12, b: 28 };

/**
 * Payments per day as an inline SVG drawn on the server: bars for the count (left axis), a line for the amount
 * paid (scaled to the chart's height, its peak labelled). Presentation attributes only, so the strict CSP
 * (no inline styles) holds; a table with the same figures follows for screen readers.
 */
export function paymentsChart(lang: Lang, days: DayFigure[], currency = 'RUB'): string {
  const maxCount = Math.max(1, ...days.map((d) => d.count));
  const maxPaid = Math.max(1, ...days.map((d) => d.paid));
  const iw = W - PAD.l - PAD.r;
  const ih = H - PAD.t - PAD.b;
  const slot = iw / Math.max(1, days.length);
  const bars: string[] = [];
  const points: string[] = [];
  const labels: string[] = [];
  days.forEach((d, i) => {
    const x = PAD.l + i * slot;
    const h = (d.count / maxCount) * ih;
    bars.push(`<rect x="${(x + slot * 0.15).toFixed(1)}" y="${(PAD.t + ih - h).toFixed(1)}" width="${(slot * 0.7).toFixed(1)}" height="${h.toFixed(1)}" rx="2" fill="#93c5fd"><title>${esc(dayLabel(d.day_ms))}: ${d.count}</title></rect>`);
    points.push(`${(x + slot / 2).toFixed(1)},${(PAD.t + ih - (d.paid / maxPaid) * ih).toFixed(1)}`);
    if ((days.length - 1 - i) % 2 === 0 || days.length <= 7) {
      labels.push(`<text x="${(x + slot / 2).toFixed(1)}" y="${H - 8}" font-size="11" text-anchor="middle" fill="#6b7280">${esc(dayLabel(d.day_ms).slice(5))}</text>`);
    }
  });
  const grid = [0, 0.5, 1]
    .map((f) => {
      const y = (PAD.t + ih - f * ih).toFixed(1);
      return `<line x1="${PAD.l}" x2="${W - PAD.r}" y1="${y}" y2="${y}" stroke="#e5e7eb"/><text x="${PAD.l - 6}" y="${Number(y) + 4}" font-size="11" text-anchor="end" fill="#6b7280">${Math.round(f * maxCount)}</text>`;
    })
    .join('');
  const totalCount = days.reduce((s, d) => s + d.count, 0);
  const totalPaid = days.reduce((s, d) => s + d.paid, 0);
  const title = `${ct(lang, 'chart_title')}: ${totalCount} ${ct(lang, 'chart_count')}, ${formatAmount(lang, totalPaid, currency)} ${ct(lang, 'chart_amount')}`;
  const rows = days.map((d) => `<tr><td>${esc(dayLabel(d.day_ms))}</td><td>${d.count}</td><td>${esc(formatAmount(lang, d.paid, currency))}</td></tr>`).join('');
  return `<figure class="chart-box">
<svg class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="chart-title" focusable="false">
<title id="chart-title">${esc(title)}</title>
${grid}
${bars.join('\n')}
<polyline points="${points.join(' ')}" fill="none" stroke="#1d4ed8" stroke-width="2.5" stroke-linejoin="round"/>
${points.map((p) => `<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="3" fill="#1d4ed8"/>`).join('')}
${labels.join('')}
<text x="${PAD.l + 6}" y="${PAD.t + 10}" font-size="11" text-anchor="start" fill="#1d4ed8">max ${esc(formatAmount(lang, maxPaid === 1 && totalPaid === 0 ? 0 : maxPaid, currency))}</text>
</svg>
<figcaption class="legend"><span><i class="c"></i>${esc(ct(lang, 'chart_count'))}</span><span><i class="a"></i>${esc(ct(lang, 'chart_amount'))}</span><span>${esc(title)}</span></figcaption>
<table class="sr"><caption>${esc(ct(lang, 'chart_title'))}</caption><tbody>${rows}</tbody></table>
</figure>`;
}

function dayLabel(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
