/** A listed SBP member (Т-Банк in the bundled directory). */
export const KNOWN_BANK = '100000000004';
/** A well-formed member id the directory does not list. */
export const UNKNOWN_BANK = '199999999999';
/** The card number of cardBody: a valid 16-digit number. */
export const TEST_PAN = '2200700155559999';

/** A valid payouts_sbp body of `amount`. */
export function sbpBody(amount: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { method: 'payouts_sbp', amount, phone: '+79001234567', bank_id: KNOWN_BANK, full_name: 'Ivan Petrov', ...extra };
}

/** A valid payouts_card body of `amount`. */
export function cardBody(amount: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { method: 'payouts_card', amount, card_pan: TEST_PAN, ...extra };
}

/** A valid payouts_account body of `amount`. */
export function accountBody(amount: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { method: 'payouts_account', amount, account_number: '40817810099910004312', bik: '044525225', full_name: 'Ivan Petrov', ...extra };
}
