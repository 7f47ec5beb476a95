/** The page's languages: Russian by default, English on request. */
export type Lang = 'ru' | 'en';

/** Every text of the page: [Russian, English]. */
const TEXTS = {
  test_banner: ['Тестовый режим: деньги не списываются', 'Test mode: no money is charged'],
  secure: ['Защищённая оплата', 'Secure payment'],
  order: ['Заказ', 'Order'],
  switch_to: ['English', 'Русский'],
  choose_method: ['Выберите способ оплаты', 'Choose how to pay'],
  pay_by_sbp: ['Оплата через СБП', 'Pay by SBP'],
  pay_by_cards: ['Оплата картой', 'Pay by card'],
  pay_by_tpay: ['Оплата через T-Pay', 'Pay with T-Pay'],
  pay_by_bankpay: ['Оплата кошельком банка', 'Pay from a bank wallet'],
  continue: ['Продолжить', 'Continue'],
  other_methods: ['Другие способы оплаты', 'Other ways to pay'],
  foreign_title: ['Форма пришла с другого сайта', 'This form came from another site'],
  foreign_text: ['Ничего не изменилось: платёж принимает формы только со своей страницы. Откройте страницу оплаты и продолжите там.', 'Nothing was changed: the payment takes forms only from its own page. Open the payment page and continue there.'],
  open_payment: ['Открыть страницу оплаты', 'Open the payment page'],
  method_sbp: ['СБП', 'SBP'],
  method_sbp_hint: ['Система быстрых платежей, по QR-коду', 'Faster Payments System, by QR code'],
  method_cards: ['Банковская карта', 'Bank card'],
  method_cards_hint: ['Мир, Visa, Mastercard', 'Mir, Visa, Mastercard'],
  method_tpay: ['T-Pay', 'T-Pay'],
  method_tpay_hint: ['Подтверждение в приложении банка', 'Confirm in your bank app'],
  method_bankpay: ['Кошелёк банка', 'Bank wallet'],
  method_bankpay_hint: ['Оплата со счёта в вашем банке', 'Pay from your bank account'],
  sbp_title: ['Оплата через СБП', 'Pay with SBP'],
  sbp_scan: ['Отсканируйте QR-код камерой телефона или в приложении банка', 'Scan the QR code with your phone camera or your bank app'],
  sbp_qr_label: ['QR-код для оплаты через СБП', 'QR code to pay with SBP'],
  sbp_open_bank: ['Открыть приложение банка', 'Open the bank app'],
  sbp_waiting: ['Ждём подтверждения оплаты в банке. Страница обновится сама.', 'Waiting for the bank to confirm. This page updates by itself.'],
  test_controls: ['Тестовый банк', 'Test bank'],
  test_plan: ['Запланированный исход', 'Planned outcome'],
  approve: ['Подтвердить оплату', 'Approve payment'],
  decline: ['Отклонить', 'Decline'],
  card_number: ['Номер карты', 'Card number'],
  card_exp: ['Срок действия', 'Expiry date'],
  card_exp_hint: ['ММ/ГГ', 'MM/YY'],
  card_cvc: ['CVC', 'CVC'],
  card_cvc_hint: ['На обороте карты', 'On the back of the card'],
  card_holder: ['Имя владельца', 'Cardholder name'],
  card_holder_hint: ['Латиницей, как на карте (необязательно)', 'In Latin letters, as on the card (optional)'],
  card_number_length: ['Введите номер карты: от 15 до 19 цифр', 'Enter a card number of 15 to 19 digits'],
  card_number_luhn: ['Проверьте номер карты: в нём ошибка', 'Check the card number: it has a typo'],
  card_exp_format: ['Введите срок действия в виде ММ/ГГ', 'Enter the expiry date as MM/YY'],
  card_exp_past: ['Срок действия карты истёк', 'This card has expired'],
  card_cvc_3: ['Введите 3 цифры CVC', 'Enter the 3-digit CVC'],
  card_cvc_4: ['Введите 4 цифры CVC', 'Enter the 4-digit CVC'],
  card_holder_invalid: ['Имя владельца: только латинские буквы, до 64 символов', 'Cardholder name: Latin letters only, up to 64 characters'],
  form_errors: ['Проверьте данные карты', 'Check the card details'],
  test_cards: ['Тестовые карты', 'Test cards'],
  test_cards_hint: ['Срок — любой будущий, CVC — любые цифры. Нажмите на карту, чтобы подставить номер.', 'Any future expiry date and any CVC digits. Press a card to fill in its number.'],
  use_card: ['Подставить', 'Use'],
  tds_title: ['Подтверждение 3-D Secure', '3-D Secure check'],
  tds_text: ['Банк отправил код подтверждения. Введите его, чтобы завершить оплату.', 'Your bank sent a confirmation code. Enter it to complete the payment.'],
  tds_code: ['Код из SMS', 'Code from the SMS'],
  tds_hint: ['Тестовый код', 'Test code'],
  tds_submit: ['Подтвердить', 'Confirm'],
  bank_text: ['Подтвердите оплату в приложении банка', 'Confirm the payment in your bank app'],
  bank_confirm_title: ['Банк просит подтвердить платёж', 'Your bank asks you to confirm'],
  bank_confirm_text: ['Для этой операции нужно дополнительное подтверждение.', 'This payment needs an extra confirmation.'],
  bank_live_wait: ['Подтвердите оплату в приложении вашего банка. Страница обновится сама.', 'Confirm the payment in your bank app. This page updates by itself.'],
  processing_title: ['Обрабатываем платёж', 'Processing the payment'],
  processing_text: ['Ждём ответа банка. Не закрывайте страницу: она обновится сама.', 'Waiting for the bank. Keep this page open: it updates by itself.'],
  live_to_bank_title: ['Переходим на страницу банка', "Taking you to the bank's page"],
  live_to_bank_text: ['Оплата продолжится на защищённой странице банка. Если переход не произошёл, нажмите кнопку.', "You pay on the bank's secure page. If nothing happens, press the button."],
  live_to_bank_button: ['Перейти к оплате', 'Go to payment'],
  success_redirect: ['Через пару секунд вы вернётесь в магазин.', 'You will be taken back to the shop in a couple of seconds.'],
  back_to_shop: ['Вернуться в магазин', 'Back to the shop'],
  failed_title: ['Платёж не прошёл', 'Payment failed'],
  failed_retry: ['Деньги не списаны. Вы можете вернуться в магазин и попробовать снова.', 'No money was charged. You can go back to the shop and try again.'],
  cancelled_title: ['Платёж отменён', 'Payment cancelled'],
  cancelled_text: ['Платёж отменён. Деньги не списаны.', 'This payment was cancelled. No money was charged.'],
  cancel_payment: ['Отказаться от оплаты', 'Cancel payment'],
  cancel_confirm_title: ['Отказаться от оплаты?', 'Cancel this payment?'],
  cancel_confirm_text: ['Платёж будет отменён, деньги не спишутся. Чтобы оплатить позже, понадобится новая ссылка от магазина.', 'The payment will be cancelled and no money charged. To pay later, you will need a new link from the shop.'],
  cancel_yes: ['Да, отказаться', 'Yes, cancel'],
  cancel_back: ['Назад', 'Back'],
  expired_title: ['Время на оплату истекло', 'Time to pay is over'],
  refunded_title: ['Платёж возвращён', 'Payment refunded'],
  refunded_text: ['Деньги возвращены на ваш счёт.', 'The money was returned to your account.'],
  not_found_title: ['Платёж не найден', 'Payment not found'],
  not_found_text: ['Ссылка неверна или устарела. Попросите магазин прислать новую ссылку на оплату.', 'The link is wrong or out of date. Ask the shop for a new payment link.'],
  card: ['Карта', 'Card'],
  status_note: ['Номер платежа', 'Payment number'],
  plan_succeeded: ['успех', 'success'],
  plan_failed: ['отказ', 'decline'],
  plan_requires_action: ['нужно подтверждение', 'confirmation needed'],
  plan_pending: ['банк не ответит', 'the bank never answers'],
} as const;

export type TextKey = keyof typeof TEXTS;

export function t(lang: Lang, key: TextKey): string {
  return TEXTS[key]?.[lang === 'ru' ? 0 : 1];
}

/** Buyer-facing sentences for the unified failure codes: [Russian, English]. */
const REASONS: Record<string, [string, string]> = {
  do_not_honor: ['Банк отклонил операцию. Попробуйте другую карту или обратитесь в свой банк.', 'Your bank declined the payment. Try another card or contact your bank.'],
  insufficient_funds: ['Недостаточно средств на счёте.', 'Insufficient funds in the account.'],
  card_expired: ['Срок действия карты истёк.', 'This card has expired.'],
  invalid_card: ['Банк не принял данные карты.', 'The bank did not accept the card details.'],
  limit_exceeded: ['Превышен лимит операций по карте или счёту.', 'The card or account limit is exceeded.'],
  three_ds_failed: ['Платёж не подтверждён: неверный код 3-D Secure.', 'The payment was not confirmed: wrong 3-D Secure code.'],
  link_expired: ['Ссылка на оплату больше не действует. Попросите магазин прислать новую.', 'This payment link is no longer valid. Ask the shop for a new one.'],
  session_expired: ['Банк не подтвердил платёж вовремя. Деньги не списаны.', 'The bank did not confirm the payment in time. No money was charged.'],
  bank_unknown: ['Банк не найден.', 'The bank was not found.'],
  recipient_not_in_sbp: ['Банк не подключён к СБП.', 'The bank is not connected to SBP.'],
  processing_error: ['Банк не смог обработать платёж. Попробуйте позже.', 'The bank could not process the payment. Please try again later.'],
  other: ['Банк отклонил платёж.', 'The bank declined the payment.'],
};

export function failureReason(lang: Lang, code: string | undefined): string {
  return (REASONS[code ?? ''] ?? REASONS.other)[lang === 'ru' ? 0 : 1];
}

/** What the page is for, from the payment's kind: its title, the card form's button, the success screen's heading. */
type Purpose = { title: string; action: string; done: string };

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
