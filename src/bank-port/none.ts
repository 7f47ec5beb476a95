import type { BankPort, CallbackResult, PayoutStart } from './port';
import { NO_PROVIDER } from './directory';

/**
 * The bank of a live shop with no acquirer: nothing is sent anywhere. Sessions wait at the page until they
 * expire, refunds stay pending, payouts get no bank reference; nothing is ever answered.
 */
export class NoBank implements BankPort {
  readonly provider = NO_PROVIDER;
  readonly sendsPayouts = true;

  describePayment(): Record<string, string> {
    return {};
  }

  openSession(): void {}

  chargeSaved(): void {}

  cancel(): void {}

  refund(): void {}

  checkStatus(): void {}

  payout(): PayoutStart {
    return { accepted: true, bankRef: '' };
  }

  callback(): CallbackResult {
    return { valid: false, payments: [], refunds: [], reply: '' };
  }

  creationExtras(): undefined {
    return undefined;
  }

  pageSession(): undefined {
    return undefined;
  }
}
