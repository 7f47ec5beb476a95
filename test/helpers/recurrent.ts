import assert from 'node:assert/strict';
import type { TestServer } from './server';

/** POST /v1/public/tokens and assert 201; returns the body. */
export async function createToken(s: TestServer, body: Record<string, unknown>, key?: string): Promise<any> {
  const r = await s.request('POST', '/v1/public/tokens', { body, key });
  assert.equal(r.status, 201, `create token: ${r.text}`);
  return r.body;
}

/** POST /v1/public/subscriptions and assert 201; returns the body. */
export async function createSubscription(s: TestServer, body: Record<string, unknown>, key?: string): Promise<any> {
  const r = await s.request('POST', '/v1/public/subscriptions', { body, key });
  assert.equal(r.status, 201, `create subscription: ${r.text}`);
  return r.body;
}

/**
 * Pay a binding or initial payment as the buyer would, through the test helper: open its session; the test
 * bank answers its plan (a 0 s advance runs that answer now); a payment still waiting is confirmed by hand.
 */
export async function payThroughHelper(s: TestServer, paymentId: string, key?: string): Promise<void> {
  const open = await s.request('POST', `/v1/test/payments/${paymentId}/simulate`, { body: { action: 'open_session' }, key });
  assert.equal(open.status, 200, open.text);
  await advanceSeconds(s, 0, key);
  const p = await get(s, `/v1/public/payments/${paymentId}`, key);
  if (p.status === 'processing') {
    const ok = await s.request('POST', `/v1/test/payments/${paymentId}/simulate`, { body: { action: 'succeed' }, key });
    assert.equal(ok.status, 200, ok.text);
  }
}

/** An active token: created and bound through the simulate helper. */
export async function activeToken(s: TestServer, body: Record<string, unknown> = { customer_ref: 'cust-1' }, key?: string): Promise<any> {
  const c = await createToken(s, body, key);
  await payThroughHelper(s, c.binding_payment_id, key);
  const t = await get(s, `/v1/public/tokens/${c.card.id}`, key);
  assert.equal(t.status, 'active');
  return t;
}

/** GET a path and assert 200; returns the body. */
export async function get(s: TestServer, path: string, key?: string): Promise<any> {
  const r = await s.request('GET', path, { key });
  assert.equal(r.status, 200, `GET ${path}: ${r.text}`);
  return r.body;
}

/** POST /v1/test/clock/advance by whole seconds; returns the clock's new now (ms). */
export async function advanceSeconds(s: TestServer, seconds: number, key?: string): Promise<number> {
  const r = await s.request('POST', '/v1/test/clock/advance', { body: { seconds }, key });
  assert.equal(r.status, 200, r.text);
  return Date.parse(r.body.now);
}

/** Now on the key's shop test clock (ms). */
export async function clockNow(s: TestServer, key?: string): Promise<number> {
  return Date.parse((await get(s, '/v1/test/clock', key)).now);
}

/** Move the shop's test clock to just after `target_ms` (it only moves forward). */
export async function advanceTo(s: TestServer, target_ms: number, key?: string): Promise<number> {
  const now = await clockNow(s, key);
  assert.ok(target_ms >= now, `cannot move the test clock back to ${new Date(target_ms).toISOString()}`);
  return advanceSeconds(s, Math.ceil((target_ms - now) / 1000), key);
}

/** Move the clock by days. */
export function advanceDays(s: TestServer, days: number, key?: string): Promise<number> {
  return advanceSeconds(s, Math.round(days * 86_400), key);
}

/** Webhook events appended for an object (token or subscription), oldest first, from the event log. */
/** The `id` field of an event's payload, in the engine's own JSON function. */
function payloadId(s: TestServer): string {
  return s.store.engine === 'postgres' ? `(payload::json ->> 'id')` : `json_extract(payload, '$.id')`;
}

export async function webhooksOf(s: TestServer, objectId: string): Promise<string[]> {
  const rows = await s.store.all<{ webhook_event: string }>(
    `SELECT webhook_event FROM events WHERE webhook_event IS NOT NULL AND ${payloadId(s)} = ? ORDER BY seq`,
    objectId,
  );
  return rows.map((r) => r.webhook_event);
}

/** SSE events (kind and payload) of an object, oldest first, from the event log. */
export async function streamOf(s: TestServer, objectId: string): Promise<Array<{ kind: string; payload: any }>> {
  const rows = await s.store.all<{ kind: string; payload: string }>(`SELECT kind, payload FROM events WHERE ${payloadId(s)} = ? ORDER BY seq`, objectId);
  return rows.map((r) => ({ kind: r.kind, payload: JSON.parse(r.payload) }));
}
