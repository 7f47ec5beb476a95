import type { BankPort, CallbackResult, PayoutStart } from './port';
import { NO_PROVIDER } from './directory';

/**
 * The bank of a live shop with no acquirer: nothing is sent anywhere. Sessions wait at the page until they
 * expire, refunds stay pending, payouts get no bank reference; nothing is ever answered.
 */
export class NoBank implements BankPort {
  readonly provider = NO_PROVIDER;
  readonly sendsPayouts = true;

  async describePayment(): Promise<Record<string, string>> {
    return {};
  }

  async openSession(): Promise<void> {}

  async chargeSaved(): Promise<void> {}

  async cancel(): Promise<void> {}

  async refund(): Promise<void> {}

  async checkStatus(): Promise<void> {}

  async payout(): Promise<PayoutStart> {
    return { accepted: true, bankRef: '' };
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
