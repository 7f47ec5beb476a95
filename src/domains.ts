import type { App } from './app-types';
import { registerPayments } from './payments/register';
import { registerBankChecks } from './bank-port/answers';
import { registerRecurrent } from './subscriptions/register';

/**
 * Register every domain's job handlers and event sinks with the app (the banks register their own; the
 * services are built in app.ts). Routes live in routes.ts.
 */
export function registerDomains(app: App): void {
  registerPayments(app);
  registerBankChecks(app);
  registerRecurrent(app);
}
