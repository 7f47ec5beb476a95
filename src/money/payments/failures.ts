/** The unified failure codes (decisions.md) with the sentence shown as failure_message and in docs. */
export const FAILURE_CODES = {
  do_not_honor: 'The bank declined the operation without giving a reason',
  insufficient_funds: 'The payer does not have enough money',
  card_expired: 'The card has expired',
  invalid_card: 'The card details are invalid',
  limit_exceeded: "The payer's limit is exceeded",
  three_ds_failed: 'The payer did not pass 3-D Secure or bank confirmation',
  link_expired: 'The payment link lifetime ended before the payer paid',
  session_expired: 'The bank session ended without a final answer from the bank',
  bank_unknown: 'The recipient bank is unknown',
  recipient_not_in_sbp: 'The recipient is not registered in the instant payment system',
  processing_error: 'The bank could not process the operation',
} as const;

/** A unified failure code. */
export type FailureCode = keyof typeof FAILURE_CODES;

/** The human sentence of a failure code; unknown codes get a generic one. */
export function failureMessage(code: string): string {
  return (FAILURE_CODES as Record<string, string>)[code] ?? 'The operation failed';
}

/** The raw ISO 8583 answer a bank gives for each code, kept as metadata.bank_failure_code for audit. */
const BANK_CODES: Partial<Record<FailureCode, string>> = {
  do_not_honor: '05',
  insufficient_funds: '51',
  card_expired: '54',
  invalid_card: '14',
  limit_exceeded: '61',
  three_ds_failed: '65',
  processing_error: '96',
};

/** Codes a payment may fail with, those a bank answers with (the others belong to expiry and payouts). */
export const PAYMENT_FAILURE_CODES = Object.keys(BANK_CODES) as readonly FailureCode[];

/** The raw bank code the simulator reports for a unified code. */
export function bankCodeFor(code: string): string {
  return BANK_CODES[code as FailureCode] ?? '06';
}
