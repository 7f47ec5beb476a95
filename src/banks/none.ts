import type { BankPort, CallbackResult, PayoutStart } from '../money/bank-port/port';
import { ApiError } from '../platform/http/errors';
import { NO_PROVIDER } from '../money/bank-port/directory';

/** 403 acquirer_not_configured: a live payment operation of a shop with no acquirer (it may have a payout provider). */
function noAcquirer(what: string): ApiError {
  return new ApiError(403, 'acquirer_not_configured', `Cannot ${what}: the shop has no acquirer (kopek shop acquirer)`);
}

// A live shop's bank without an acquirer: new payments (bindings, charges) and refunds answer 403 acquirer_not_configured
// before anything is written; payouts 403 payouts_not_configured (sendsPayouts false). Open sessions expire at the page.
export class NoBank implements BankPort {
  readonly provider = NO_PROVIDER;
  readonly sendsPayouts = false;

  async describePayment(): Promise<Record<string, string>> {
    throw noAcquirer('create a live payment');
  }

  async openSession(): Promise<void> {}

  async chargeSaved(): Promise<void> {}

  async cancel(): Promise<void> {}

  async refund(): Promise<void> {
    throw noAcquirer('create a live refund');
  }

  async checkStatus(): Promise<void> {}

  async payout(): Promise<PayoutStart> {
    throw new ApiError(403, 'payouts_not_configured', 'Cannot send a live payout: the shop has no payout provider (kopek shop payouts)');
  }

  async callback(): Promise<CallbackResult> {
    return { valid: false, payments: [], refunds: [], reply: '' };
  }

  creationExtras(): undefined {
    return undefined;
  }

  async pageSession(): Promise<undefined> {
    return undefined;
  }
}
