import type { App } from '../app-types';
import { enqueueDeliveries, recordAttempt, RETRY_JOB, type AttemptResult } from './outbox';
import { DeliveryWorker } from './worker';

/**
 * Wire webhooks into the app: the outbox sink (deliveries written in the event's transaction, the worker
 * woken after commit), the retry job (an async job: HTTP outside, outcome recorded in the job's own
 * transaction), and the worker itself, stopped on shutdown.
 */
export function startWebhooks(app: App): DeliveryWorker {
  const worker = new DeliveryWorker(app);
  app.events.addSink(async (tx, row) => {
    const ids = await enqueueDeliveries(tx, app.clocks, row);
    // kick() reads the rows and queues them on its own, and never rejects.
    if (ids.length > 0) tx.afterCommit(() => void worker.kick(ids));
  });
  app.scheduler.registerAsync<AttemptResult | null>(
    RETRY_JOB,
    {
      run: (job) => worker.attemptFor(job),
      complete: async (tx, _job, r) => {
        if (!r) return;
        const rec = await recordAttempt(tx, app.scheduler, app.clocks, r);
        tx.afterCommit(() => worker.report(r, rec));
      },
      // Room for DNS and the receiver's deadline.
      deadline_ms: app.config.webhookTimeoutMs + 15_000,
    },
    // A failed run means shutdown or a bug, never a receiver's answer (that is a recorded attempt).
    { maxAttempts: 20 },
  );
  worker.start();
  app.onClose(() => worker.stop());
  return worker;
}
