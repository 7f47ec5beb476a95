import assert from 'node:assert/strict';
import type { TestServer, TestResponse } from './server';

/** Create a payment and assert 201; returns the creation body. */
export async function createPayment(s: TestServer, body: Record<string, unknown>, key?: string): Promise<any> {
  const r = await s.request('POST', '/v1/public/payments', { body, key });
  assert.equal(r.status, 201, `create payment: ${r.text}`);
  return r.body;
}

/** POST /v1/test/payments/{id}/simulate. */
export function simulate(s: TestServer, id: string, body: Record<string, unknown>, key?: string): Promise<TestResponse> {
  return s.request('POST', `/v1/test/payments/${id}/simulate`, { body, key });
}

/** Move the key's shop test clock forward by `seconds` (runs due jobs). */
export async function advance(s: TestServer, seconds: number, key?: string): Promise<void> {
  const r = await s.request('POST', '/v1/test/clock/advance', { body: { seconds }, key });
  assert.equal(r.status, 200, r.text);
}

/** GET a payment and assert 200. */
export async function getPayment(s: TestServer, id: string, key?: string): Promise<any> {
  const r = await s.request('GET', `/v1/public/payments/${id}`, { key });
  assert.equal(r.status, 200, r.text);
  return r.body;
}

/** The statuses of payments, in the order of their ids. */
export async function statusesOf(s: TestServer, ids: string[], key?: string): Promise<string[]> {
  const out: string[] = [];
  for (const id of ids) out.push((await getPayment(s, id, key)).status);
  return out;
}

/** A shop's pending jobs, by due time. */
export async function pendingJobsOf(s: TestServer, shopId: string): Promise<Array<{ kind: string; subject_id: string; due_at: number }>> {
  return s.store.all<{ kind: string; subject_id: string; due_at: number }>(
    `SELECT kind, subject_id, due_at FROM jobs WHERE shop_id = ? AND state = 'pending' ORDER BY due_at, id`,
    shopId,
  );
}

/** A succeeded test payment of `amount` (created, session opened with sbp, confirmed). */
export async function succeededPayment(s: TestServer, amount: number, key?: string): Promise<any> {
  const c = await createPayment(s, { amount }, key);
  const r = await simulate(s, c.payment.id, { action: 'open_session', method: 'sbp' }, key);
  assert.equal(r.status, 200, r.text);
  const ok = await simulate(s, c.payment.id, { action: 'succeed' }, key);
  assert.equal(ok.status, 200, ok.text);
  return ok.body;
}

/** Events appended for a payment, oldest first, as stored (kind, payload, webhook event and data). */
export async function eventsOf(
  s: TestServer,
  paymentId: string,
): Promise<Array<{ kind: string; payload: any; webhook_event: string | null; webhook_data: any; webhook_url: string | null }>> {
  const rows = await s.store.all<{ kind: string; payload: string; webhook_event: string | null; webhook_data: string | null; webhook_url: string | null }>(
    'SELECT kind, payload, webhook_event, webhook_data, webhook_url FROM events WHERE payment_id = ? ORDER BY seq',
    paymentId,
  );
  return rows.map((r) => ({ ...r, payload: JSON.parse(r.payload), webhook_data: r.webhook_data ? JSON.parse(r.webhook_data) : null }));
}
