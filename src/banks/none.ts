import type { BankPort, CallbackResult, PayoutStart } from '../money/bank-port/port';
import { ApiError } from '../platform/http/errors';
import { NO_PROVIDER } from '../money/bank-port/directory';

/** 403 acquirer_not_configured: a live payment operation of a shop with no acquirer (it may have a payout provider). */
function noAcquirer(what: string): ApiError {
  return new ApiError(403, 'acquirer_not_configured', `Cannot ${what}: the shop has no acquirer (kopek shop acquirer)`);
}

/**
 * The bank of a live shop with no acquirer, and of live payouts with no payout provider: nothing is sent
 * anywhere. A new payment (and so a token binding, a charge, a subscription) or refund answers 403
 * acquirer_not_configured before anything is written: a shop with only a payout provider passes
 * authentication, and this is where its payment operations stop. Payouts answer 403 payouts_not_configured
 * (sendsPayouts is false). What was open before an acquirer was removed waits: sessions expire at the page.
 */
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
