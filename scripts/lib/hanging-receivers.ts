import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server, type Socket, type AddressInfo } from 'node:net';

// Webhook receivers for the fairness proofs (fuzz, bench:fairness): ones that accept and never answer, and
// one that answers at once and notes when each delivery arrived. Loopback only.

/** `n` receivers on their own ports that accept connections and never send a byte back. */
export interface Hangs {
  urls: string[];
  /** Connections the receivers hold open right now. */
  held(): number;
  close(): Promise<void>;
}

/** Start `n` hanging receivers (one origin each, so each is its own endpoint for the server). */
export async function startHangs(n: number): Promise<Hangs> {
  const servers: Server[] = [];
  const socks = new Set<Socket>();
  for (let i = 0; i < n; i++) {
    const srv = createServer((sock) => {
      socks.add(sock);
      sock.on('error', () => {});
      sock.on('close', () => socks.delete(sock));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    servers.push(srv);
  }
  return {
    urls: servers.map((s) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hook`),
    held: () => socks.size,
    close: async () => {
      for (const s of socks) s.destroy();
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    },
  };
}

/** A receiver that answers 200 at once and records when each delivery arrived. */
export interface Prompt {
  url: string;
  arrivals: number[];
  /** Resolves with the time of the first arrival after `since` (performance.now()), or null after `limit_ms`. */
  firstAfter(since: number, limit_ms: number): Promise<number | null>;
  close(): Promise<void>;
}

/** Start the prompt receiver. */
export async function startPrompt(): Promise<Prompt> {
  const arrivals: number[] = [];
  const server: HttpServer = createHttpServer((req, res) => {
    arrivals.push(performance.now());
    req.resume();
    req.on('end', () => res.writeHead(200).end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    firstAfter: async (since, limit_ms) => {
      const until = performance.now() + limit_ms;
      while (performance.now() < until) {
        const t = arrivals.find((a) => a >= since);
        if (t !== undefined) return t;
        await new Promise((r) => setTimeout(r, 5));
      }
      return null;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

async function post(base: string, key: string, path: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(base + path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}

/** Create a test payment whose webhook_url is `hook` and have the test bank pay it; throws on any other answer. */
export async function paidPayment(base: string, key: string, hook: string): Promise<string> {
  const c = await post(base, key, '/v1/public/payments', { amount: 10_000, method: 'sbp', webhook_url: hook });
  if (c.status !== 201) throw new Error(`payment create answered ${c.status}: ${JSON.stringify(c.json).slice(0, 200)}`);
  const id = c.json.payment.id as string;
  const o = await post(base, key, `/v1/test/payments/${id}/simulate`, { action: 'open_session' });
  if (o.status !== 200) throw new Error(`open_session answered ${o.status}: ${JSON.stringify(o.json).slice(0, 200)}`);
  const s = await post(base, key, `/v1/test/payments/${id}/simulate`, { action: 'succeed' });
  if (s.status === 200 && s.json.status === 'succeeded') return id;
  // A server with --sim-delay 0 has its test bank settle the session itself: then the payment is paid already.
  const g = await fetch(`${base}/v1/public/payments/${id}`, { headers: { authorization: `Bearer ${key}` }, signal: AbortSignal.timeout(15_000) });
  const now = (await g.json()) as { status?: string; payment?: { status?: string } };
  if ((now.payment?.status ?? now.status) !== 'succeeded') throw new Error(`succeed answered ${s.status}: ${JSON.stringify(s.json).slice(0, 200)}`);
  return id;
}

/** `m` paid payments of one shop spread over the hanging receivers, `width` at a time. */
export async function payIntoHangs(base: string, key: string, hangs: Hangs, m: number, width = 16): Promise<void> {
  for (let i = 0; i < m; i += width) {
    await Promise.all(Array.from({ length: Math.min(width, m - i) }, (_, j) => paidPayment(base, key, hangs.urls[(i + j) % hangs.urls.length])));
  }
}

/** Wait until the hanging receivers hold at least `n` connections (or `limit_ms` passed); returns how many they hold. */
export async function waitHeld(hangs: Hangs, n: number, limit_ms: number): Promise<number> {
  const until = performance.now() + limit_ms;
  while (hangs.held() < n && performance.now() < until) await new Promise((r) => setTimeout(r, 10));
  return hangs.held();
}

/** The ms from the start of another shop's paid payment to its webhook's arrival (null: none within `limit_ms`). */
export async function otherShopDelay(base: string, key: string, prompt: Prompt, limit_ms: number): Promise<number | null> {
  const t0 = performance.now();
  await paidPayment(base, key, prompt.url);
  const t = await prompt.firstAfter(t0, limit_ms);
  return t === null ? null : t - t0;
}
