import type { Config } from './base/config';
import type { Store } from './db/store';
import type { Clocks } from './scheduler/clock';
import type { Scheduler } from './scheduler/jobs';
import type { Events } from './events/emit';
import type { Logger } from './base/log';
import type { BankDirectory } from './bank-port/directory';
import type { EventStreamHub } from './events/stream';
import type { PaymentViewCache } from './payments/view-cache';
import type { DeliveryWorker } from './webhooks/worker';
import type { Metrics } from './system/metrics';
import type { Retention } from './system/retention';
import type { KeyUsage } from './auth/key-usage';
import type { PaymentHooks } from './payments/hooks';

/** The running service: what every handler and job reaches through `ctx.app`. */
export interface App {
  config: Config;
  store: Store;
  clocks: Clocks;
  scheduler: Scheduler;
  events: Events;
  /** The payments state machine's typed hooks (tokens and subscriptions react to their payments through them). */
  paymentHooks: PaymentHooks;
  /** Which bank each shop and mode reaches (the simulator in test mode; the shop's acquirer live). */
  banks: BankDirectory;
  log: Logger;
  /** The Server-Sent Events hub: every open stream, fed by committed events. */
  stream: EventStreamHub;
  /** Serialised payment views, answered by GET until a write touches them. */
  viewCache: PaymentViewCache;
  /** The webhook delivery worker. */
  webhooks: DeliveryWorker;
  /** Request, job and delivery metrics for GET /metrics. */
  metrics: Metrics;
  /** The last use of each API key, written once a minute. */
  keyUsage: KeyUsage;
  /** Deletes, in small batches, what is kept only for a while (finished jobs, ended deliveries, old events, idempotency records). */
  retention: Retention;
  version: string;
  /** Address of the API as clients reach it (known once listening). */
  baseUrl(): string;
  /** Address of the hosted payment page. */
  payPageUrl(): string;
  /** Called on shutdown after the server stopped accepting, before the database closes; in reverse order of adding. */
  onClose(fn: () => void | Promise<void>): void;
  /** True once shutdown began (long-lived handlers end themselves). */
  closing: boolean;
}
