import type { App } from '../app-types';
import { registerPaymentJobs } from './state';
import { registerLinkSweep } from './expiry';
import { registerPaymentSimulator } from '../simulator/payments';
import { registerRefundJobs } from '../refunds/refunds';

/** Register the job handlers of payments, refunds and the payment simulator. */
export function registerPayments(app: App): void {
  registerPaymentJobs(app);
  registerLinkSweep(app);
  registerPaymentSimulator(app);
  registerRefundJobs(app);
}
