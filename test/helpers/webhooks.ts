import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestServer, TestShop } from './server';
import type { EventRow } from '../../src/money/events/events';
import type { Mode } from '../../src/platform/clock';

/** A request the receiver got. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Real time it arrived. */
  at: number;
}

/** How the receiver answers request number `n` (1-based): a status after a delay, or never. */
export type Responder = (n: number, r: Received) => { status: number; delay_ms?: number } | 'hang';

/** A real HTTP receiver on 127.0.0.1:0 that records every request. */
export interface Receiver {
  url: string;
  received: Received[];
  respond: Responder;
  /** Resolve with request number `n` (1-based) once it arrived; reject after `timeout_ms`. */
  waitFor(n: number, timeout_ms?: number): Promise<Received>;
  close(): Promise<void>;
}

/** Receivers a test file starts, to be closed together in its `after`. */
export function receiverPool(): { receiver: (respond?: Responder) => Promise<Receiver>; closeAll: () => Promise<void> } {
  const started: Receiver[] = [];
  return {
    receiver: async (respond) => {
      const r = await startReceiver(respond);
      started.push(r);
      return r;
    },
    closeAll: async () => {
      for (const r of started.splice(0)) await r.close();
    },
  };
}

/** Start a receiver; by default it answers 200 at once. */
export async function startReceiver(respond: Responder = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  const waiters: Array<() => void> = [];
  const hanging = new Set<import('node:http').ServerResponse>();
  const rcv = { received, respond } as Receiver;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(r);
      for (const w of waiters.splice(0)) w();
      const how = rcv.respond(received.length, r);
      if (how === 'hang') {
        hanging.add(res);
        return;
      }
      const answer = (): void => {
        res.writeHead(how.status, { 'Content-Type': 'text/plain' });
        res.end('ok');
      };
      if (how.delay_ms) setTimeout(answer, how.delay_ms);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  rcv.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  rcv.waitFor = (n, timeout_ms = 5000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} requests, not ${n}, within ${timeout_ms} ms`)), timeout_ms);
      const check = (): void => {
        if (received.length >= n) {
          clearTimeout(timer);
          resolve(received[n - 1]);
        } else waiters.push(check);
      };
      check();
    });
  rcv.close = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return rcv;
}

/** Append an event with a webhook directly, as a domain would (payment.succeeded of a made-up payment by default). */
export async function appendWebhookEvent(
  s: TestServer,
  shop: Pick<TestShop, 'merchantId' | 'shopId'>,
  o: { mode?: Mode; event?: string; kind?: string; data?: Record<string, unknown>; url?: string | null; paymentId?: string } = {},
): Promise<EventRow> {
  const app = s.running.app;
  const mode = o.mode ?? 'test';
  const paymentId = o.paymentId ?? crypto.randomUUID();
  const data = o.data ?? { id: paymentId, status: 'succeeded', amount: 10000, metadata: { mode } };
  // The shop's clock is read before the transaction: the body reads nothing but through its tx.
  const at = await app.clocks.now(app.store, shop.shopId, mode);
  return app.store.tx(async (tx) =>
    app.events.append(tx, {
      merchantId: shop.merchantId,
      shopId: shop.shopId,
      mode,
      kind: o.kind ?? 'payment.status_changed',
      // Not 'succeeded': the ledger credits real payments on that status, and this payment is made up.
      payload: { id: paymentId, status: 'processing' },
      at,
      webhook: { event: o.event ?? 'payment.succeeded', data, url: o.url ?? null },
      paymentId,
    }),
  );
}

/** Poll the test delivery log until `pred` holds (the worker acts after commit, asynchronously). */
export async function waitForLog(
  s: TestServer,
  query: string,
  pred: (items: any[]) => boolean,
  o: { key?: string; timeout_ms?: number } = {},
): Promise<any[]> {
  const until = Date.now() + (o.timeout_ms ?? 5000);
  for (;;) {
    const r = await s.request('GET', `/v1/test/webhooks/deliveries?${query}`, { key: o.key });
    if (r.status !== 200) throw new Error(`delivery log answered ${r.status}: ${r.text}`);
    if (pred(r.body.items)) return r.body.items;
    if (Date.now() > until) throw new Error(`delivery log did not reach the expected state: ${JSON.stringify(r.body.items)}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}
