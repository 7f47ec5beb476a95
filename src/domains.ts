import type { App } from './app-types';
import { registerPayments } from './payments/register';
import { registerLedger } from './ledger/sinks';
import { registerPayouts } from './payouts/payouts';
import { registerWebhooks } from './webhooks/register';
import { registerEventStream } from './events/stream';
import { registerRecurrent } from './subscriptions/register';

/** Register every domain's job handlers and event sinks with the app. Routes live in http/routes.ts. */
export function registerDomains(app: App): void {
  registerPayments(app);
  registerLedger(app);
  registerPayouts(app);
  registerWebhooks(app);
  registerEventStream(app);
  registerRecurrent(app);
}
