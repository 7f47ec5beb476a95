import type { PaymentsCore } from './money/payments/core';
import type { PaymentCreates } from './money/payments/create-batch';
import type { WebhookAttempts } from './money/webhooks/delivery';
import type { EventStreamHub } from './money/events/events';
import type { Metrics } from './web/system/metrics';
import type { Retention } from './web/system/retention';
import type { KeyUsage } from './platform/auth/authenticate';

/**
 * The running service: the core with payments' hooks, and the services the modules built. Every handler gets it as
 * `ctx.app` (its type naming only the part it uses); nothing below the root imports this type.
 */
export interface App extends PaymentsCore {
  /** The node's payment creates, gathered into shared transactions: PostgreSQL only (undefined on SQLite). */
  readonly creates: PaymentCreates | undefined;
  /** The webhook attempt job kind (its attempts in flight, for metrics). */
  readonly webhooks: WebhookAttempts;
  /** The Server-Sent Events hub: every open stream, fed by committed events. */
  readonly stream: EventStreamHub;
  /** Request, job and delivery metrics for GET /metrics. */
  readonly metrics: Metrics;
  /** The last use of each API key, written once a minute. */
  readonly keyUsage: KeyUsage;
  /** Deletes, in small batches, what is kept only for a while (finished jobs, ended deliveries, old events, idempotency records). */
  readonly retention: Retention;
}
