import type { Core } from '../core/core';
import type { Module } from '../core/module';
import type { EventSink } from '../events/emit';
import type { AsyncJobKind } from '../../platform/queue/jobs';
import { enqueueDeliveries, recordAttempt, RETRY_JOB, type AttemptResult } from './outbox';
import { DeliveryWorker, type AttemptObserver } from './worker';

/**
 * Webhooks as the wiring mounts them: the outbox sink (deliveries written in the event's transaction, the
 * worker woken after commit), the retry job (an async job: HTTP outside, outcome recorded in the job's own
 * transaction), and the worker, started once the server listens and stopped at shutdown. Builds only.
 * `observe` hears every recorded attempt (the root passes the metrics' counter).
 */
export function webhooksModule(core: Core, observe?: AttemptObserver): Module & { readonly worker: DeliveryWorker } {
  const worker = new DeliveryWorker(core, observe);
  const outbox: EventSink = async (tx, row) => {
    const ids = await enqueueDeliveries(tx, core.clocks, row);
    // kick() reads the rows and queues them on its own, and never rejects.
    if (ids.length > 0) tx.afterCommit(() => void worker.kick(ids));
  };
  const retry: AsyncJobKind<AttemptResult | null> = {
    run: (job) => worker.attemptFor(job),
    complete: async (tx, _job, r) => {
      if (!r) return;
      const rec = await recordAttempt(tx, core.scheduler, core.clocks, r);
      tx.afterCommit(() => worker.report(r, rec));
    },
    // Room for DNS and the receiver's deadline.
    deadline_ms: core.config.webhookTimeoutMs + 15_000,
  };
  return {
    name: 'webhooks',
    // A failed run means shutdown or a bug, never a receiver's answer (that is a recorded attempt).
    jobs: [{ kind: RETRY_JOB, async: retry, opts: { maxAttempts: 20 } }],
    sinks: [outbox],
    start: () => worker.start(),
    stop: () => worker.stop(),
    worker,
  };
}
