import type { Ctx } from '../../platform/http/types';
import { esc } from '../pay-page/layout';
import { failureReason, formatAmount, type Lang } from '../pay-page/i18n';
import type { Endpoint } from '../../money/webhooks/store';
import { postForm } from './layout';
import { codeText, ct, statusText, type CabKey } from './text';
import type { TimelineEvent } from './timeline';

/** Fields of an event payload the timeline shows, with how each reads: money as money, codes in words. */
const SHOWN: Array<[string, CabKey, (lang: Lang, v: unknown, currency: string) => string]> = [
  ['status', 'status', (lang, v) => statusText(lang, String(v))],
  ['amount', 'amount', (lang, v, currency) => (typeof v === 'number' ? formatAmount(lang, v, currency) : String(v))],
  ['amount_refunded', 'refunds', (lang, v, currency) => (typeof v === 'number' ? formatAmount(lang, v, currency) : String(v))],
  ['failure_code', 'reason', (lang, v) => failureReason(lang, String(v)).replace(/\.$/, '')],
  ['method', 'method', (lang, v) => codeText(lang, String(v))],
];

/** An event payload in one short line in the page's language: its status, amounts, failure and method when it has them. */
export function eventSummary(lang: Lang, payload: string, currency: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(payload) as Record<string, unknown>;
  } catch {
    return '';
  }
  return SHOWN.filter(([k]) => o[k] !== undefined && o[k] !== '' && !(k === 'amount_refunded' && o[k] === 0))
    .map(([k, label, show]) => `${ct(lang, label)}: ${show(lang, o[k], currency)}`)
    .join('; ');
}

/** True when an endpoint takes an event now (enabled, and listing it or listing none). */
function takes(e: Endpoint, event: string): boolean {
  return e.disabled_at === null && (e.events === '' || e.events.split(',').includes(event));
}

/**
 * The webhook cell of a timeline event. An event that went to an endpoint can be sent again (*Resend*). One that
 * went to none says so; it can be sent when an endpoint takes it now (added since), and otherwise offers nothing.
 */
export function webhookCell(ctx: Ctx, e: TimelineEvent, o: { delivered: Set<string>; endpoints: Endpoint[]; back: string }): string {
  if (!e.webhook_event) return '—';
  const lang = ctx.cabinet!.lang;
  const send = (label: CabKey) =>
    postForm(
      ctx,
      `/cabinet/events/${e.id}/resend`,
      `<input type="hidden" name="back" value="${esc(o.back)}"><button class="chip" type="submit" aria-label="${esc(`${ct(lang, label)} ${e.webhook_event}`)}">${esc(ct(lang, label))}</button>`,
    );
  const name = `<span class="mono">${esc(e.webhook_event)}</span>`;
  if (o.delivered.has(e.id)) return `${name} ${send('resend')}`;
  const now = o.endpoints.some((x) => takes(x, e.webhook_event!));
  return `${name} <small class="muted">${esc(ct(lang, 'no_endpoint_received'))}</small>${now ? ` ${send('send_now')}` : ''}`;
}
