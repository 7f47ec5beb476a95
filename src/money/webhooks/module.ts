import type { Core } from '../core/core';
import type { Module } from '../core/module';
import type { EventSink } from '../events/emit';
import { enqueueDeliveries, ATTEMPT_JOB } from './outbox';
import { WebhookAttempts, type AttemptObserver } from './attempt';

/**
 * Webhooks as the wiring mounts them: the outbox sink (deliveries and their first attempts' jobs written in the
 * event's transaction) and the attempt job (an async job: HTTP outside, outcome recorded in the job's own
 * transaction), whose attempts in flight are cut at shutdown. Builds only. `observe` hears every recorded
 * attempt (the root passes the metrics' counter).
 */
export function webhooksModule(core: Core, observe?: AttemptObserver): Module & { readonly attempts: WebhookAttempts } {
  const attempts = new WebhookAttempts(core, observe);
  const outbox: EventSink = (tx, row) => (row.webhook_event ? enqueueDeliveries(tx, core.scheduler, row) : undefined);
  return {
    name: 'webhooks',
    // A failed run means shutdown or a bug, never a receiver's answer (that is a recorded attempt).
    jobs: [{ kind: ATTEMPT_JOB, async: attempts, opts: { maxAttempts: 20 } }],
    sinks: [outbox],
    stop: () => attempts.stop(),
    attempts,
  };
}
