import { esc } from '../pay-page/render';
import { formatAmount, type Lang } from '../pay-page/i18n';
import { TEST_BANK_NAME } from '../../banks/simulator/test-bank';

/** Every text of the cabinet: [Russian, English]. */
const TEXTS = {
  cabinet: ['Кабинет', 'Cabinet'],
  skip: ['К содержанию', 'Skip to content'],
  nav: ['Разделы кабинета', 'Cabinet sections'],
  overview: ['Обзор', 'Overview'],
  payments: ['Платежи', 'Payments'],
  refunds: ['Возвраты', 'Refunds'],
  payouts: ['Выплаты', 'Payouts'],
  shops: ['Магазины', 'Shops'],
  keys: ['API-ключи', 'API keys'],
  webhooks: ['Вебхуки', 'Webhooks'],
  test_mode: ['Тестовый режим', 'Test mode'],
  audit: ['Журнал действий', 'Audit log'],
  account: ['Вход и безопасность', 'Sign-in and security'],
  sign_in: ['Войти', 'Sign in'],
  sign_in_title: ['Вход в кабинет', 'Sign in to the cabinet'],
  sign_out: ['Выйти', 'Sign out'],
  sign_out_all: ['Выйти на всех устройствах', 'Sign out everywhere'],
  email: ['Эл. почта', 'Email'],
  password: ['Пароль', 'Password'],
  totp_code: ['Код из приложения или код восстановления', 'Authenticator code or recovery code'],
  totp_hint: ['Только если включён вход с кодом', 'Only if two-step sign-in is on'],
  bad_login: ['Неверная почта, пароль или код.', 'Wrong email, password or code.'],
  locked: ['Слишком много неудачных попыток. Повторите через', 'Too many failed attempts. Try again in'],
  seconds: ['с', 's'],
  mode_test: ['Тест', 'Test'],
  mode_live: ['Боевой', 'Live'],
  mode_label: ['Данные', 'Data'],
  test_banner: ['Тестовые данные: деньги не движутся', 'Test data: no money moves'],
  balance: ['Баланс', 'Balance'],
  available: ['Доступно', 'Available'],
  shop: ['Магазин', 'Shop'],
  all_shops: ['Все магазины', 'All shops'],
  last_payments: ['Последние платежи', 'Latest payments'],
  failing_endpoints: ['Вебхуки с ошибками', 'Failing webhook endpoints'],
  none_failing: ['Все адреса вебхуков отвечают.', 'Every webhook endpoint answers.'],
  chart_title: ['Платежи по дням за 14 дней', 'Payments per day, last 14 days'],
  chart_count_title: ['Создано платежей', 'Payments created'],
  chart_paid_title: ['Оплачено', 'Amount paid'],
  chart_count_legend: ['Столбец — сколько платежей создано за день (UTC), шкала в штуках', 'Bar: payments created that day (UTC), scale in payments'],
  chart_paid_legend: ['Столбец — сколько из них оплачено за день (UTC), шкала в рублях', 'Bar: how much of them was paid that day (UTC), scale in rubles'],
  chart_total: ['За 14 дней', 'In 14 days'],
  chart_day: ['День (UTC)', 'Day (UTC)'],
  refunded_of: ['возвращено {refunded} из {amount}', 'refunded {refunded} of {amount}'],
  refunded_in_full: ['полностью, {amount}', 'in full, {amount}'],
  status: ['Статус', 'Status'],
  amount: ['Сумма', 'Amount'],
  amount_from: ['Сумма от', 'Amount from'],
  amount_to: ['Сумма до', 'Amount to'],
  order: ['Заказ', 'Order'],
  order_id: ['Номер заказа', 'Order id'],
  created: ['Создан', 'Created'],
  date_from: ['С даты (UTC)', 'From (UTC)'],
  date_to: ['По дату (UTC)', 'To (UTC)'],
  any_status: ['Любой', 'Any'],
  filter: ['Показать', 'Filter'],
  reset_filter: ['Сбросить', 'Clear'],
  export_csv: ['Скачать CSV', 'Export CSV'],
  next_page: ['Следующая страница', 'Next page'],
  timeline_more: ['Здесь события среди {n} событий магазина после создания платежа; более поздние могут быть дальше.', 'These are the events among the shop\'s {n} events after the payment was made; later ones may follow.'],
  timeline_search_on: ['Искать дальше', 'Search further'],
  searched_to: ['Просмотрены последние {n} записей, до {when}: чтобы искать дальше, откройте следующую страницу.', 'Searched the latest {n} records, back to {when}: open the next page to search further.'],
  first_page: ['В начало', 'First page'],
  nothing: ['Ничего не найдено.', 'Nothing found.'],
  method: ['Способ', 'Method'],
  payment: ['Платёж', 'Payment'],
  payment_number: ['Номер платежа', 'Payment number'],
  recipient: ['Получатель', 'Recipient'],
  timeline: ['История', 'Timeline'],
  webhook_attempts: ['Доставка вебхуков', 'Webhook deliveries'],
  refund: ['Вернуть', 'Refund'],
  refund_amount: ['Сумма возврата, ₽ (пусто — весь остаток)', 'Refund amount, ₽ (empty: the whole remainder)'],
  reason: ['Причина', 'Reason'],
  refundable: ['Можно вернуть', 'Refundable'],
  cancel_payment: ['Отменить платёж', 'Cancel payment'],
  resend: ['Отправить снова', 'Resend'],
  send_now: ['Отправить', 'Send'],
  no_endpoint_received: ['Ни один адрес вебхуков его не получил.', 'No webhook endpoint received it.'],
  event: ['Событие', 'Event'],
  time: ['Время', 'Time'],
  answer: ['Ответ', 'Answer'],
  attempt: ['Попытка', 'Attempt'],
  create_shop: ['Создать магазин', 'Create shop'],
  name: ['Название', 'Name'],
  scopes: ['Права', 'Scopes'],
  save: ['Сохранить', 'Save'],
  ip_allowlist: ['Разрешённые IP-адреса', 'IP allow-list'],
  ip_hint: ['Через запятую: IPv4, IPv6, подсети CIDR. Пусто — любой адрес.', 'Comma-separated IPv4, IPv6, CIDR ranges. Empty: any address.'],
  signing_secret: ['Секрет подписи запросов', 'Request-signing secret'],
  rotate: ['Выпустить новый', 'Rotate'],
  rotate_secret: ['Новый секрет адреса', "Rotate an endpoint's secret"],
  require_signature: ['Требовать подпись X-PSP-Signature', 'Require X-PSP-Signature'],
  acquirer: ['Эквайер (боевой режим)', 'Acquirer (live mode)'],
  acquirer_none: ['Эквайер не подключён: боевые платежи магазина получают 403 acquirer_not_configured.', 'No acquirer: the shop\'s live payments get 403 acquirer_not_configured.'],
  acquirer_hint: ['Терминал Т-Банка (интернет-эквайринг). Пароль хранится зашифрованным и больше не показывается.', 'A T-Bank Internet Acquiring terminal. The password is stored encrypted and never shown again.'],
  terminal_key: ['TerminalKey', 'TerminalKey'],
  terminal_password: ['Пароль терминала', 'Terminal password'],
  api_url: ['Адрес API банка (боевой или тестовый)', "The bank's API address (production or test)"],
  set_acquirer: ['Подключить терминал', 'Connect the terminal'],
  remove_acquirer: ['Отключить эквайер', 'Remove the acquirer'],
  payout_provider: ['Провайдер выплат (боевой режим)', 'Payout provider (live mode)'],
  payout_provider_none: ['Провайдер выплат не подключён: боевые выплаты получают 403 payouts_not_configured.', "No payout provider: the shop's live payouts get 403 payouts_not_configured."],
  payout_provider_hint: ['ЮKassa Выплаты: agentId и секретный ключ шлюза выплат. Ключ проверяется у провайдера, хранится зашифрованным и больше не показывается.', "YooKassa Payouts: the payout gateway's agentId and secret key. The key is checked at the provider, stored encrypted and never shown again."],
  agent_id: ['agentId', 'agentId'],
  payout_secret: ['Секретный ключ шлюза выплат', "The payout gateway's secret key"],
  payout_api_url: ['Адрес API провайдера', "The provider's API address"],
  set_payout_provider: ['Подключить выплаты', 'Connect payouts'],
  remove_payout_provider: ['Отключить провайдера выплат', 'Remove the payout provider'],
  payouts_undecided: ['Выплаты на карту ждут решения: номер карты не сохранился после перезапуска, а провайдер ещё не назвал выплату.', 'Card payouts waiting for a decision: the card number was lost with a restart before the provider named the payout.'],
  live_on: ['Боевой режим подключён.', 'Live mode is on.'],
  live_is_off: ['Боевой режим не подключён: боевые ключи получают 403 live_mode_not_activated. Его подключают, когда у магазина есть эквайер или провайдер выплат.', 'Live mode is off: live keys get 403 live_mode_not_activated. It can be activated once a shop has an acquirer or a payout provider.'],
  activate_live: ['Подключить боевой режим', 'Activate live mode'],
  shown_once: ['Показан один раз: сохраните его сейчас.', 'Shown once: save it now.'],
  create_key: ['Создать ключ', 'Create key'],
  key: ['Ключ', 'Key'],
  mode: ['Режим', 'Mode'],
  prefix: ['Начало', 'Prefix'],
  last_use: ['Последнее использование', 'Last use'],
  never: ['никогда', 'never'],
  revoke: ['Отозвать', 'Revoke'],
  revoked: ['отозван', 'revoked'],
  active: ['действует', 'active'],
  add_endpoint: ['Добавить адрес', 'Add endpoint'],
  events: ['События', 'Events'],
  events_hint: ['Ничего не выбрано — все события.', 'None chosen: all events.'],
  signature: ['Подпись', 'Signature'],
  overlap_hours: ['Старый секрет действует ещё, часов', 'Old secret stays valid, hours'],
  delete: ['Удалить', 'Delete'],
  disabled: ['отключён', 'disabled'],
  delivery_log: ['Журнал доставки', 'Delivery log'],
  event_id: ['Id события', 'Event id'],
  test_clock: ['Тестовые часы', 'Test clock'],
  clock_now: ['Сейчас на часах магазина', "Now on the shop's clock"],
  clock_offset: ['Впереди реального времени', 'Ahead of real time'],
  advance: ['Перевести вперёд', 'Advance'],
  advance_by: ['На сколько', 'By'],
  minutes: ['минут', 'minutes'],
  hours: ['часов', 'hours'],
  days: ['дней', 'days'],
  reset_test: ['Удалить тестовые данные', 'Reset test data'],
  reset_hint: ['Удаляет тестовые платежи, возвраты, выплаты и события магазина и возвращает часы к реальному времени. Ключи и настройки остаются.', "Deletes the shop's test payments, refunds, payouts and events and sets its clock back to real time. Keys and settings stay."],
  reset_confirm: ['Да, удалить тестовые данные магазина', "Yes, delete the shop's test data"],
  action: ['Действие', 'Action'],
  who: ['Кто', 'Who'],
  target: ['Объект', 'Target'],
  details: ['Подробности', 'Details'],
  older: ['Раньше', 'Older'],
  two_step: ['Вход с кодом (TOTP)', 'Two-step sign-in (TOTP)'],
  two_step_on: ['Включён. Осталось кодов восстановления:', 'On. Recovery codes left:'],
  two_step_off: ['Выключен.', 'Off.'],
  totp_start: ['Включить', 'Turn on'],
  totp_scan: ['Отсканируйте код в приложении-аутентификаторе или введите секрет вручную, затем введите код из приложения.', 'Scan the code with an authenticator app or type the secret, then enter the code it shows.'],
  totp_confirm: ['Подтвердить', 'Confirm'],
  totp_disable: ['Выключить', 'Turn off'],
  recovery_codes: ['Коды восстановления', 'Recovery codes'],
  recovery_hint: ['Каждый код входит один раз вместо кода из приложения. Показаны один раз.', 'Each code signs in once instead of an app code. Shown once.'],
  code: ['Код', 'Code'],
  change_password: ['Сменить пароль', 'Change password'],
  current_password: ['Текущий пароль', 'Current password'],
  new_password: ['Новый пароль (от 10 символов)', 'New password (10 characters or more)'],
  sessions_open: ['Открытых сессий:', 'Open sessions:'],
  not_found: ['Не найдено', 'Not found'],
  error: ['Ошибка', 'Error'],
  forbidden: ['Запрос отклонён: обновите страницу и повторите.', 'Request refused: reload the page and try again.'],
  back: ['Назад', 'Back'],
  saved: ['Сохранено.', 'Saved.'],
  confirm: ['Точно?', 'Are you sure?'],
  signed_in_as: ['Вы вошли как', 'Signed in as'],
  switch_lang: ['English', 'Русский'],
  id: ['Id', 'Id'],
  all_events: ['все события', 'all events'],
  jobs_run: ['Выполнено задач:', 'Jobs run:'],
  deleted_rows: ['Удалено записей:', 'Rows deleted:'],
  description: ['Описание', 'Description'],
  card: ['Карта', 'Card'],
  bank: ['Банк', 'Bank'],
} as const;

export type CabKey = keyof typeof TEXTS;

export function ct(lang: Lang, key: CabKey): string {
  return TEXTS[key][lang === 'ru' ? 0 : 1];
}

/** A code in words from a [Russian, English] table; an unknown code as it is. */
function inWords(table: Record<string, [string, string]>, lang: Lang, code: string): string {
  return table[code]?.[lang === 'ru' ? 0 : 1] ?? code;
}

const STATUS: Record<string, [string, string]> = {
  pending: ['ожидает', 'pending'],
  processing: ['в обработке', 'processing'],
  succeeded: ['успешно', 'succeeded'],
  failed: ['ошибка', 'failed'],
  cancelled: ['отменён', 'cancelled'],
  refunded: ['возвращён', 'refunded'],
  expired: ['истёк', 'expired'],
};

export const statusText = (lang: Lang, status: string): string => inWords(STATUS, lang, status);

export function statusBadge(lang: Lang, status: string): string {
  return `<span class="badge ${esc(status)}">${esc(statusText(lang, status))}</span>`;
}

/** A moment as `YYYY-MM-DD HH:MM:SS UTC`: every time shown names its zone, the registers' and the API's. */
export function when(at: number | string | null | undefined): string {
  if (at === null || at === undefined) return '—';
  const ms = typeof at === 'string' ? Date.parse(at) : at;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

// The API's codes as a merchant reads them on a page; the CSV export and the API keep the codes themselves.

const CODES: Record<string, [string, string]> = {
  sbp: ['СБП', 'SBP'],
  cards: ['Банковская карта', 'Bank card'],
  tpay: ['T-Pay', 'T-Pay'],
  bankpay: ['Кошелёк банка', 'Bank wallet'],
  recurrent: ['Автоплатёж', 'Recurring charge'],
  any: ['На выбор покупателя', "Buyer's choice"],
  payouts_sbp: ['По номеру телефона (СБП)', 'To a phone (SBP)'],
  payouts_card: ['На карту', 'To a card'],
  payouts_account: ['На банковский счёт', 'To a bank account'],
  test: ['тестовый', 'test'],
  live: ['боевой', 'live'],
};

export const codeText = (lang: Lang, code: string): string => inWords(CODES, lang, code);

const DELIVERY: Record<string, [string, string]> = {
  succeeded: ['доставлено', 'delivered'],
  failed: ['не доставлено', 'failed'],
  pending: ['в очереди', 'queued'],
};

export const deliveryText = (lang: Lang, status: string): string => inWords(DELIVERY, lang, status);

/** A bank's name as stored, with the simulator's own bank named in the page's language. */
export function bankText(lang: Lang, name: string): string {
  return name === TEST_BANK_NAME && lang === 'ru' ? 'Тестовый банк kopek' : name;
}

/** The forms of a counted word: Russian needs one, few and many (1 платёж, 2 платежа, 5 платежей); English one and other. */
type Plural = { one: string; few?: string; many?: string; other: string };

const RULES = { ru: new Intl.PluralRules('ru-RU'), en: new Intl.PluralRules('en-GB') };

/** Counted words of the cabinet, [Russian, English]. */
const COUNTED = {
  payments: [
    { one: 'платёж', few: 'платежа', many: 'платежей', other: 'платежа' },
    { one: 'payment', other: 'payments' },
  ],
  deliveries: [
    { one: 'доставка поставлена в очередь', few: 'доставки поставлены в очередь', many: 'доставок поставлено в очередь', other: 'доставки поставлено в очередь' },
    { one: 'delivery queued', other: 'deliveries queued' },
  ],
} as const satisfies Record<string, [Plural, Plural]>;

/** `n` of a counted word of the cabinet in the form the language's plural rules ask for (`Intl.PluralRules`). */
export function counted(lang: Lang, n: number, word: keyof typeof COUNTED): string {
  const forms: Plural = COUNTED[word][lang === 'ru' ? 0 : 1];
  return `${n.toLocaleString(lang === 'ru' ? 'ru-RU' : 'en-GB')} ${forms[RULES[lang].select(n) as keyof Plural] ?? forms.other}`;
}

/** A masked phone: the country code and the last two digits (+7 ••• •••-••-67). */
export function maskPhone(phone: string): string {
  const digits = phone.replace(/\D/g, '');
  return digits.length < 4 ? '•••' : `+${digits.slice(0, digits.length - 10 || 1)} ••• •••-••-${digits.slice(-2)}`;
}

// A payment's status cell in every list: the badge, and once money went back how much of how much. A partly refunded
// payment stays `succeeded` in the API, which alone hid the refund.
export function paymentStatusCell(lang: Lang, p: { status: string; amount: number; amount_refunded: number; currency: string }): string {
  const badge = statusBadge(lang, p.status);
  const [amount, refunded] = [Number(p.amount), Number(p.amount_refunded)];
  if (!(refunded > 0)) return badge;
  const money = (n: number) => formatAmount(lang, n, p.currency);
  const note =
    p.status === 'refunded' && refunded >= amount
      ? ct(lang, 'refunded_in_full').replace('{amount}', money(amount))
      : ct(lang, 'refunded_of').replace('{refunded}', money(refunded)).replace('{amount}', money(amount));
  // Under the badge, not beside it: there they widened the column until the register's other columns wrapped at 1280 px.
  return `<span class="pstatus">${badge} <small class="refund-note">${esc(note)}</small></span>`;
}
