import type { App } from '../app-types';
import { registerPaymentJobs } from './state';
import { registerLinkSweep } from './expiry';
import { paymentViewCache } from './view-cache';

/** Register the job handlers of payments and the view cache. */
export function registerPayments(app: App): void {
  registerPaymentJobs(app);
  registerLinkSweep(app);
  // Made at start-up, so its triggers watch every write from the first one on.
  paymentViewCache(app);
}
