/** The page's languages: Russian by default, English on request. */
export type Lang = 'ru' | 'en';

/**
 * The language of a request: `?lang=` wins (the visible switch keeps it across the flow); otherwise the
 * first of ru/en in Accept-Language by quality; otherwise Russian.
 */
export function pickLang(query: URLSearchParams, acceptLanguage: string | undefined): Lang {
  const q = query.get('lang');
  if (q === 'ru' || q === 'en') return q;
  let best: Lang = 'ru';
  let bestQ = -1;
  for (const part of (acceptLanguage ?? '').split(',').slice(0, 20)) {
    const [tag, ...params] = part.trim().toLowerCase().split(';');
    const primary = tag.split('-')[0];
    if (primary !== 'ru' && primary !== 'en') continue;
    const qp = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    const weight = qp ? Number(qp.slice(2)) : 1;
    if (Number.isFinite(weight) && weight > bestQ) {
      best = primary;
      bestQ = weight;
    }
  }
  return best;
}

const RU = {
  test_banner: 'Тестовый режим: деньги не списываются',
  secure: 'Защищённая оплата',
  order: 'Заказ',
  payment_no: 'Платёж',
  switch_to: 'English',
  choose_method: 'Выберите способ оплаты',
  pay_by_sbp: 'Оплата через СБП',
  pay_by_cards: 'Оплата картой',
  pay_by_tpay: 'Оплата через T-Pay',
  pay_by_bankpay: 'Оплата кошельком банка',
  continue: 'Продолжить',
  other_methods: 'Другие способы оплаты',
  foreign_title: 'Форма пришла с другого сайта',
  foreign_text: 'Ничего не изменилось: платёж принимает формы только со своей страницы. Откройте страницу оплаты и продолжите там.',
  open_payment: 'Открыть страницу оплаты',
  method_sbp: 'СБП',
  method_sbp_hint: 'Система быстрых платежей, по QR-коду',
  method_cards: 'Банковская карта',
  method_cards_hint: 'Мир, Visa, Mastercard',
  method_tpay: 'T-Pay',
  method_tpay_hint: 'Подтверждение в приложении банка',
  method_bankpay: 'Кошелёк банка',
  method_bankpay_hint: 'Оплата со счёта в вашем банке',
  sbp_title: 'Оплата через СБП',
  sbp_scan: 'Отсканируйте QR-код камерой телефона или в приложении банка',
  sbp_qr_label: 'QR-код для оплаты через СБП',
  sbp_open_bank: 'Открыть приложение банка',
  sbp_waiting: 'Ждём подтверждения оплаты в банке. Страница обновится сама.',
  test_controls: 'Тестовый банк',
  test_plan: 'Запланированный исход',
  approve: 'Подтвердить оплату',
  decline: 'Отклонить',
  card_title: 'Оплата картой',
  card_number: 'Номер карты',
  card_exp: 'Срок действия',
  card_exp_hint: 'ММ/ГГ',
  card_cvc: 'CVC',
  card_cvc_hint: 'На обороте карты',
  card_holder: 'Имя владельца',
  card_holder_hint: 'Латиницей, как на карте (необязательно)',
  pay: 'Оплатить',
  card_number_length: 'Введите номер карты: от 15 до 19 цифр',
  card_number_luhn: 'Проверьте номер карты: в нём ошибка',
  card_exp_format: 'Введите срок действия в виде ММ/ГГ',
  card_exp_past: 'Срок действия карты истёк',
  card_cvc_3: 'Введите 3 цифры CVC',
  card_cvc_4: 'Введите 4 цифры CVC',
  card_holder_invalid: 'Имя владельца: только латинские буквы, до 64 символов',
  form_errors: 'Проверьте данные карты',
  test_cards: 'Тестовые карты',
  test_cards_hint: 'Срок — любой будущий, CVC — любые цифры. Нажмите на карту, чтобы подставить номер.',
  use_card: 'Подставить',
  tds_title: 'Подтверждение 3-D Secure',
  tds_text: 'Банк отправил код подтверждения. Введите его, чтобы завершить оплату.',
  tds_code: 'Код из SMS',
  tds_hint: 'Тестовый код',
  tds_submit: 'Подтвердить',
  bank_title: 'Тестовый банк',
  bank_text: 'Подтвердите оплату в приложении банка',
  bank_confirm_title: 'Банк просит подтвердить платёж',
  bank_confirm_text: 'Для этой операции нужно дополнительное подтверждение.',
  bank_live_wait: 'Подтвердите оплату в приложении вашего банка. Страница обновится сама.',
  processing_title: 'Обрабатываем платёж',
  processing_text: 'Ждём ответа банка. Не закрывайте страницу: она обновится сама.',
  live_to_bank_title: 'Переходим на страницу банка',
  live_to_bank_text: 'Оплата продолжится на защищённой странице банка. Если переход не произошёл, нажмите кнопку.',
  live_to_bank_button: 'Перейти к оплате',
  success_redirect: 'Через пару секунд вы вернётесь в магазин.',
  back_to_shop: 'Вернуться в магазин',
  failed_title: 'Платёж не прошёл',
  failed_retry: 'Деньги не списаны. Вы можете вернуться в магазин и попробовать снова.',
  cancelled_title: 'Платёж отменён',
  cancelled_text: 'Платёж отменён. Деньги не списаны.',
  cancel_payment: 'Отказаться от оплаты',
  cancel_confirm_title: 'Отказаться от оплаты?',
  cancel_confirm_text: 'Платёж будет отменён, деньги не спишутся. Чтобы оплатить позже, понадобится новая ссылка от магазина.',
  cancel_yes: 'Да, отказаться',
  cancel_back: 'Назад',
  expired_title: 'Время на оплату истекло',
  refunded_title: 'Платёж возвращён',
  refunded_text: 'Деньги возвращены на ваш счёт.',
  not_found_title: 'Платёж не найден',
  not_found_text: 'Ссылка неверна или устарела. Попросите магазин прислать новую ссылку на оплату.',
  card: 'Карта',
  status_note: 'Номер платежа',
  plan_succeeded: 'успех',
  plan_failed: 'отказ',
  plan_requires_action: 'нужно подтверждение',
  plan_pending: 'банк не ответит',
};

/** Every text of the page, by key; each language has every key. */
export type TextKey = keyof typeof RU;

const EN: Record<TextKey, string> = {
  test_banner: 'Test mode: no money is charged',
  secure: 'Secure payment',
  order: 'Order',
  payment_no: 'Payment',
  switch_to: 'Русский',
  choose_method: 'Choose how to pay',
  pay_by_sbp: 'Pay by SBP',
  pay_by_cards: 'Pay by card',
  pay_by_tpay: 'Pay with T-Pay',
  pay_by_bankpay: 'Pay from a bank wallet',
  continue: 'Continue',
  other_methods: 'Other ways to pay',
  foreign_title: 'This form came from another site',
  foreign_text: 'Nothing was changed: the payment takes forms only from its own page. Open the payment page and continue there.',
  open_payment: 'Open the payment page',
  method_sbp: 'SBP',
  method_sbp_hint: 'Faster Payments System, by QR code',
  method_cards: 'Bank card',
  method_cards_hint: 'Mir, Visa, Mastercard',
  method_tpay: 'T-Pay',
  method_tpay_hint: 'Confirm in your bank app',
  method_bankpay: 'Bank wallet',
  method_bankpay_hint: 'Pay from your bank account',
  sbp_title: 'Pay with SBP',
  sbp_scan: 'Scan the QR code with your phone camera or your bank app',
  sbp_qr_label: 'QR code to pay with SBP',
  sbp_open_bank: 'Open the bank app',
  sbp_waiting: 'Waiting for the bank to confirm. This page updates by itself.',
  test_controls: 'Test bank',
  test_plan: 'Planned outcome',
  approve: 'Approve payment',
  decline: 'Decline',
  card_title: 'Pay by card',
  card_number: 'Card number',
  card_exp: 'Expiry date',
  card_exp_hint: 'MM/YY',
  card_cvc: 'CVC',
  card_cvc_hint: 'On the back of the card',
  card_holder: 'Cardholder name',
  card_holder_hint: 'In Latin letters, as on the card (optional)',
  pay: 'Pay',
  card_number_length: 'Enter a card number of 15 to 19 digits',
  card_number_luhn: 'Check the card number: it has a typo',
  card_exp_format: 'Enter the expiry date as MM/YY',
  card_exp_past: 'This card has expired',
  card_cvc_3: 'Enter the 3-digit CVC',
  card_cvc_4: 'Enter the 4-digit CVC',
  card_holder_invalid: 'Cardholder name: Latin letters only, up to 64 characters',
  form_errors: 'Check the card details',
  test_cards: 'Test cards',
  test_cards_hint: 'Any future expiry date and any CVC digits. Press a card to fill in its number.',
  use_card: 'Use',
  tds_title: '3-D Secure check',
  tds_text: 'Your bank sent a confirmation code. Enter it to complete the payment.',
  tds_code: 'Code from the SMS',
  tds_hint: 'Test code',
  tds_submit: 'Confirm',
  bank_title: 'Test bank',
  bank_text: 'Confirm the payment in your bank app',
  bank_confirm_title: 'Your bank asks you to confirm',
  bank_confirm_text: 'This payment needs an extra confirmation.',
  bank_live_wait: 'Confirm the payment in your bank app. This page updates by itself.',
  processing_title: 'Processing the payment',
  processing_text: 'Waiting for the bank. Keep this page open: it updates by itself.',
  live_to_bank_title: "Taking you to the bank's page",
  live_to_bank_text: "You pay on the bank's secure page. If nothing happens, press the button.",
  live_to_bank_button: 'Go to payment',
  success_redirect: 'You will be taken back to the shop in a couple of seconds.',
  back_to_shop: 'Back to the shop',
  failed_title: 'Payment failed',
  failed_retry: 'No money was charged. You can go back to the shop and try again.',
  cancelled_title: 'Payment cancelled',
  cancelled_text: 'This payment was cancelled. No money was charged.',
  cancel_payment: 'Cancel payment',
  cancel_confirm_title: 'Cancel this payment?',
  cancel_confirm_text: 'The payment will be cancelled and no money charged. To pay later, you will need a new link from the shop.',
  cancel_yes: 'Yes, cancel',
  cancel_back: 'Back',
  expired_title: 'Time to pay is over',
  refunded_title: 'Payment refunded',
  refunded_text: 'The money was returned to your account.',
  not_found_title: 'Payment not found',
  not_found_text: 'The link is wrong or out of date. Ask the shop for a new payment link.',
  card: 'Card',
  status_note: 'Payment number',
  plan_succeeded: 'success',
  plan_failed: 'decline',
  plan_requires_action: 'confirmation needed',
  plan_pending: 'the bank never answers',
};

const TEXTS: Record<Lang, Record<TextKey, string>> = { ru: RU, en: EN };

/** A text in a language. */
export function t(lang: Lang, key: TextKey): string {
  return TEXTS[lang][key];
}

/** Whether a string names a text (validation reasons come from cards.ts as strings). */
export function isTextKey(key: string): key is TextKey {
  return Object.prototype.hasOwnProperty.call(RU, key);
}

const REASONS: Record<Lang, Record<string, string>> = {
  ru: {
    do_not_honor: 'Банк отклонил операцию. Попробуйте другую карту или обратитесь в свой банк.',
    insufficient_funds: 'Недостаточно средств на счёте.',
    card_expired: 'Срок действия карты истёк.',
    invalid_card: 'Банк не принял данные карты.',
    limit_exceeded: 'Превышен лимит операций по карте или счёту.',
    three_ds_failed: 'Платёж не подтверждён: неверный код 3-D Secure.',
    link_expired: 'Ссылка на оплату больше не действует. Попросите магазин прислать новую.',
    session_expired: 'Банк не подтвердил платёж вовремя. Деньги не списаны.',
    bank_unknown: 'Банк не найден.',
    recipient_not_in_sbp: 'Банк не подключён к СБП.',
    processing_error: 'Банк не смог обработать платёж. Попробуйте позже.',
    other: 'Банк отклонил платёж.',
  },
  en: {
    do_not_honor: 'Your bank declined the payment. Try another card or contact your bank.',
    insufficient_funds: 'Insufficient funds in the account.',
    card_expired: 'This card has expired.',
    invalid_card: 'The bank did not accept the card details.',
    limit_exceeded: 'The card or account limit is exceeded.',
    three_ds_failed: 'The payment was not confirmed: wrong 3-D Secure code.',
    link_expired: 'This payment link is no longer valid. Ask the shop for a new one.',
    session_expired: 'The bank did not confirm the payment in time. No money was charged.',
    bank_unknown: 'The bank was not found.',
    recipient_not_in_sbp: 'The bank is not connected to SBP.',
    processing_error: 'The bank could not process the payment. Please try again later.',
    other: 'The bank declined the payment.',
  },
};

/** A buyer-facing sentence for a unified failure code. */
export function failureReason(lang: Lang, code: string | undefined): string {
  return REASONS[lang][code ?? ''] ?? REASONS[lang].other;
}

/** What the page is for, from the payment's kind: a payment, a card binding or a subscription's first payment. */
export interface Purpose {
  title: string;
  /** The main button of the card form. */
  action: string;
  /** The success screen's heading. */
  done: string;
}

const PURPOSES: Record<Lang, Record<string, Purpose>> = {
  ru: {
    payment: { title: 'Оплата заказа', action: 'Оплатить', done: 'Оплата прошла успешно' },
    token_binding: { title: 'Привязка карты', action: 'Привязать карту', done: 'Карта привязана' },
    subscription_init: { title: 'Подписка', action: 'Оформить подписку', done: 'Подписка оформлена' },
  },
  en: {
    payment: { title: 'Payment', action: 'Pay', done: 'Payment successful' },
    token_binding: { title: 'Card binding', action: 'Save card', done: 'Card saved' },
    subscription_init: { title: 'Subscription', action: 'Subscribe', done: 'Subscription started' },
  },
};

/** The purpose texts of a payment kind (unknown kinds read as a plain payment). */
export function purpose(lang: Lang, kind: string | undefined): Purpose {
  return PURPOSES[lang][kind ?? 'payment'] ?? PURPOSES[lang].payment;
}

/** An amount of minor units in the language's currency format, e.g. `1 234,56 ₽`. */
export function formatAmount(lang: Lang, amount: number, currency: string): string {
  return new Intl.NumberFormat(lang === 'ru' ? 'ru-RU' : 'en-GB', { style: 'currency', currency, currencyDisplay: 'narrowSymbol' }).format(amount / 100);
}
