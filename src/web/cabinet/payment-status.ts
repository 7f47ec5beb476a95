import { esc } from '../pay-page/layout';
import { formatAmount, type Lang } from '../pay-page/i18n';
import { ct, statusText } from './text';

/** What a payment's status cell reads: its status, and for the refunded share its amounts. */
export interface StatusFigures {
  status: string;
  amount: number;
  amount_refunded: number;
  currency: string;
}

/**
 * A payment's status as every list of the cabinet shows it: the status badge, and once money went back how
 * much of how much ("succeeded", then "refunded ₽500.00 of ₽1,500.00"; a fully refunded one "refunded", then
 * "in full, ₽1,500.00"). A partly refunded payment stays `succeeded` in the API, which alone hid the refund.
 */
export function paymentStatusCell(lang: Lang, p: StatusFigures): string {
  const badge = `<span class="badge ${esc(p.status)}">${esc(statusText(lang, p.status))}</span>`;
  const [amount, refunded] = [Number(p.amount), Number(p.amount_refunded)];
  if (!(refunded > 0)) return badge;
  const money = (n: number) => formatAmount(lang, n, p.currency);
  const note =
    p.status === 'refunded' && refunded >= amount
      ? ct(lang, 'refunded_in_full').replace('{amount}', money(amount))
      : ct(lang, 'refunded_of').replace('{refunded}', money(refunded)).replace('{amount}', money(amount));
  // The amounts go on a line of their own under the badge: beside it they widened the column until the
  // register's other columns wrapped at 1280 px.
  return `<span class="pstatus">${badge} <small class="refund-note">${esc(note)}</small></span>`;
}
