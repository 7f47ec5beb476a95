import type { App } from './app-types';
import { registerPayments } from './payments/register';
import { registerBankChecks } from './bank-port/answers';
import { registerWebhooks } from './webhooks/register';
import { registerEventStream } from './events/stream';
import { registerRecurrent } from './subscriptions/register';

/** Register every domain's job handlers and event sinks with the app (the banks register their own). Routes live in http/routes.ts. */
export function registerDomains(app: App): void {
  registerPayments(app);
  registerBankChecks(app);
  registerWebhooks(app);
  registerEventStream(app);
  registerRecurrent(app);
}
