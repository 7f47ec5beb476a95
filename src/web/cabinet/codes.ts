import type { Lang } from '../pay-page/i18n';
import { TEST_BANK_NAME } from '../../banks/simulator/payments';

// The codes the API speaks (a method, a mode, a delivery's state, the simulator's bank) as a merchant reads
// them on a page; the CSV export and the API keep the codes themselves.

const CODES: Record<string, [string, string]> = {
  // Payment methods.
  sbp: ['СБП', 'SBP'],
  cards: ['Банковская карта', 'Bank card'],
  tpay: ['T-Pay', 'T-Pay'],
  bankpay: ['Кошелёк банка', 'Bank wallet'],
  recurrent: ['Автоплатёж', 'Recurring charge'],
  any: ['На выбор покупателя', "Buyer's choice"],
  // Payout methods.
  payouts_sbp: ['По номеру телефона (СБП)', 'To a phone (SBP)'],
  payouts_card: ['На карту', 'To a card'],
  payouts_account: ['На банковский счёт', 'To a bank account'],
  // Modes.
  test: ['тестовый', 'test'],
  live: ['боевой', 'live'],
};

/** A method or mode code as a person reads it (unknown codes as they are). */
export function codeText(lang: Lang, code: string): string {
  return CODES[code]?.[lang === 'ru' ? 0 : 1] ?? code;
}

const DELIVERY: Record<string, [string, string]> = {
  succeeded: ['доставлено', 'delivered'],
  failed: ['не доставлено', 'failed'],
  pending: ['в очереди', 'queued'],
};

/** A webhook delivery's state as a person reads it. */
export function deliveryText(lang: Lang, status: string): string {
  return DELIVERY[status]?.[lang === 'ru' ? 0 : 1] ?? status;
}

/** A bank's name as stored, with the simulator's own bank named in the page's language. */
export function bankText(lang: Lang, name: string): string {
  return name === TEST_BANK_NAME && lang === 'ru' ? 'Тестовый банк kopek' : name;
}

/** The forms of a counted word: Russian needs one, few and many (1 платёж, 2 платежа, 5 платежей); English one and other. */
export interface Plural {
  one: string;
  few?: string;
  many?: string;
  other: string;
}

const RULES = { ru: new Intl.PluralRules('ru-RU'), en: new Intl.PluralRules('en-GB') };

/** `n` and its word in the form the language's plural rules ask for (`Intl.PluralRules`). */
export function plural(lang: Lang, n: number, forms: Plural): string {
  const rule = RULES[lang].select(n) as keyof Plural;
  return `${n.toLocaleString(lang === 'ru' ? 'ru-RU' : 'en-GB')} ${forms[rule] ?? forms.other}`;
}

/** Counted words of the cabinet, [Russian, English]. */
export const COUNTED = {
  payments: [
    { one: 'платёж', few: 'платежа', many: 'платежей', other: 'платежа' },
    { one: 'payment', other: 'payments' },
  ],
  deliveries: [
    { one: 'доставка поставлена в очередь', few: 'доставки поставлены в очередь', many: 'доставок поставлено в очередь', other: 'доставки поставлено в очередь' },
    { one: 'delivery queued', other: 'deliveries queued' },
  ],
} as const satisfies Record<string, [Plural, Plural]>;

/** `n` of a counted word of the cabinet, in the page's language. */
export function counted(lang: Lang, n: number, word: keyof typeof COUNTED): string {
  return plural(lang, n, COUNTED[word][lang === 'ru' ? 0 : 1]);
}

/** A masked phone: the country code and the last two digits (+7 ••• •••-••-67). */
export function maskPhone(phone: string): string {
  const digits = phone.replace(/\D/g, '');
  return digits.length < 4 ? '•••' : `+${digits.slice(0, digits.length - 10 || 1)} ••• •••-••-${digits.slice(-2)}`;
}
