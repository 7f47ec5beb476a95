import type { TestServer } from './server';

/**
 * Run the jobs due now, again and again, until no bank request waits to be sent or for its answer (a hung one
 * ends at --acquirer-timeout): the requests a job's answer queues (GetQr after Init, Charge after Init) included.
 */
export async function settled(s: TestServer, limit_ms = 10_000): Promise<void> {
  const started = Date.now();
  for (;;) {
    await s.running.app.scheduler.runDue();
    const open = (await s.store.get<{ n: number }>(`SELECT count(*) AS n FROM bank_requests WHERE state IN ('queued', 'sent')`))!.n;
    if (open === 0) return;
    if (Date.now() - started > limit_ms) throw new Error(`${open} bank request(s) still without an answer after ${limit_ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
