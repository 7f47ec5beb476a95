import type { App } from '../app-types';
import { registerPaymentJobs } from './state';
import { registerSweeps } from './sweeps';

/** Register the job handlers of payments: expiry of sessions and links. */
export function registerPayments(app: App): void {
  registerPaymentJobs(app);
  registerSweeps(app);
}
