import type { BankPort, CallbackResult } from '../money/bank-port/port';
import { ApiError } from '../platform/http/errors';
import { NO_PROVIDER } from '../money/bank-port/directory';

function refuse(code: string, message: string): () => Promise<never> {
  return async () => {
    throw new ApiError(403, code, message);
  };
}

/** The parts of the port a bank has nothing for: no answer to wait for, no block or description of a payment. */
export const nothing = async (): Promise<undefined> => undefined;
export const noExtras = (): undefined => undefined;
export const noDescription = async (): Promise<Record<string, string>> => ({});
/** A notification a bank cannot have sent: answered 403, nothing changes. */
export const forged = async (): Promise<CallbackResult> => ({ valid: false, payments: [], refunds: [], reply: '' });

// A live shop's bank without an acquirer: new payments (bindings, charges) and refunds answer 403 acquirer_not_configured
// before anything is written; payouts 403 payouts_not_configured (sendsPayouts false). Open sessions expire at the page.
export class NoBank implements BankPort {
  readonly provider = NO_PROVIDER;
  readonly sendsPayouts = false;
  readonly describePayment = refuse('acquirer_not_configured', 'Cannot create a live payment: the shop has no acquirer (kopek shop acquirer)');
  readonly refund = refuse('acquirer_not_configured', 'Cannot create a live refund: the shop has no acquirer (kopek shop acquirer)');
  readonly payout = refuse('payouts_not_configured', 'Cannot send a live payout: the shop has no payout provider (kopek shop payouts)');
  readonly openSession = nothing;
  readonly chargeSaved = nothing;
  readonly cancel = nothing;
  readonly checkStatus = nothing;
  readonly pageSession = nothing;
  readonly callback = forged;
  readonly creationExtras = noExtras;
}
