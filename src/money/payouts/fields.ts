import { badRequest, ApiError } from '../../platform/http/errors';
import { amountField, bodyObject, currencyField, describe, enumField, strField } from '../../platform/http/body';
import { PAYOUT_SCOPES, PAYOUT_METHODS, type PayoutMethod } from '../bank-port/payout';
export { PAYOUT_SCOPES, PAYOUT_METHODS, type PayoutMethod };

/** The recipient fields of each method (besides `amount` and the optional `currency`). */
const RECIPIENT_FIELDS: Record<PayoutMethod, readonly string[]> = {
  payouts_sbp: ['phone', 'bank_id', 'full_name'],
  payouts_card: ['card_pan', 'full_name'],
  payouts_account: ['account_number', 'bik', 'inn', 'full_name'],
};

const FULL_NAME_MAX = 200;

/** A validated payout request. `cardPan` lives only in memory: it is never stored, logged or echoed. */
export interface PayoutInput {
  method: PayoutMethod;
  amount: number;
  /** What is stored and echoed (sbp: phone, bank_id, full_name; account: account_number, bik, inn?, full_name; card: full_name?). */
  recipient: Record<string, string>;
  cardPan?: string;
}

/** The spec's first rule: a bank_id present but not 12 digits is 400 before any other check of the body. */
export function checkBankIdFirst(obj: Record<string, unknown>): void {
  if (!('bank_id' in obj) || obj.bank_id === null) return;
  const v = obj.bank_id;
  if (typeof v !== 'string' || !/^[0-9]{12}$/.test(v)) {
    throw badRequest(`Field "bank_id" must be the 12-digit SBP member id of the recipient bank, got ${describe(v)}`, 'bank_id');
  }
}

export function methodField(obj: Record<string, unknown>): PayoutMethod {
  if (obj.method === undefined || obj.method === null) throw badRequest('Field "method" is required', 'method');
  return enumField(obj, 'method', PAYOUT_METHODS)!;
}

/** A request body as an object (400 otherwise), before any field is read. */
export function asObject(body: unknown, what = 'Request body'): Record<string, unknown> {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) throw badRequest(`${what} must be a JSON object`);
  return body as Record<string, unknown>;
}

/** Validate the fields of one payout of a known method; throws 400 bad_request naming the first bad field. */
export function payoutFields(obj: Record<string, unknown>, method: PayoutMethod, withMethod: boolean): PayoutInput {
  checkBankIdFirst(obj);
  // A batch item carries no `method`: the batch's applies.
  bodyObject(obj, [...(withMethod ? ['method'] : []), 'amount', 'currency', ...RECIPIENT_FIELDS[method]]);
  const amount = amountField(obj, 'amount', true)!;
  currencyField(obj);
  const recipient: Record<string, string> = {};
  const name = (required: boolean) => {
    const v = strField(obj, 'full_name', { required, max: FULL_NAME_MAX });
    if (v !== undefined && v.trim().length === 0) throw badRequest('Field "full_name" must not be blank', 'full_name');
    if (v !== undefined) recipient.full_name = v.trim();
  };
  if (method === 'payouts_sbp') {
    recipient.phone = strField(obj, 'phone', { required: true, max: 12, pattern: /^\+7[0-9]{10}$/, patternHint: 'a Russian phone number +7XXXXXXXXXX' })!;
    recipient.bank_id = strField(obj, 'bank_id', { required: true })!;
    name(true);
    return { method, amount, recipient };
  }
  if (method === 'payouts_card') {
    const cardPan = cardPanField(obj);
    name(false);
    return { method, amount, recipient, cardPan };
  }
  recipient.account_number = strField(obj, 'account_number', { required: true, max: 20, pattern: /^[0-9]{20}$/, patternHint: 'a bank account number of 20 digits' })!;
  recipient.bik = strField(obj, 'bik', { required: true, max: 9, pattern: /^[0-9]{9}$/, patternHint: 'a bank code (BIK) of 9 digits' })!;
  const inn = strField(obj, 'inn', { max: 12, pattern: /^([0-9]{10}|[0-9]{12})$/, patternHint: 'a taxpayer number (INN) of 10 or 12 digits' });
  if (inn !== undefined) recipient.inn = inn;
  name(true);
  return { method, amount, recipient };
}

/** card_pan: 16 to 18 digits. The message never repeats the value, so an error cannot leak a card number. */
function cardPanField(obj: Record<string, unknown>): string {
  const v = obj.card_pan;
  if (v === undefined || v === null) throw badRequest('Field "card_pan" is required', 'card_pan');
  if (typeof v !== 'string') throw badRequest(`Field "card_pan" must be a string of 16 to 18 digits, got ${typeof v}`, 'card_pan');
  if (!/^[0-9]{16,18}$/.test(v)) {
    const got = /^[0-9]*$/.test(v) ? `${v.length} digits` : `${v.length} characters that are not all digits`;
    throw badRequest(`Field "card_pan" must be 16 to 18 digits, got ${got}`, 'card_pan');
  }
  return v;
}

export function duplicateKey(p: PayoutInput): string {
  const fields = Object.keys(p.recipient).sort().map((k) => [k, p.recipient[k]]);
  return JSON.stringify([p.method, p.amount, p.cardPan ?? null, fields]);
}

export function requirePayoutScope(scopes: ReadonlySet<string>, method: PayoutMethod): void {
  const scope = PAYOUT_SCOPES[method];
  if (!scopes.has(scope)) throw new ApiError(403, 'scope_required', `Cannot create a ${method} payout: the key needs scope "${scope}"`);
}
