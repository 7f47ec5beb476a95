import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local fake of YooKassa Payouts API v3 over real HTTP, written from the published protocol: Basic auth with
// the gateway's agentId and secret key, POST /v3/payouts under an Idempotence-Key (a repeated key answers the
// payout it first made, never a second one), GET /v3/payouts/{id}, error objects, and unsigned notifications
// posted to kopek. Payouts stay pending until the test settles them; tests steer faults per route.

/** What the fake does with the next request of a route: answer; hang (nothing happens); lose (act, never answer); 500; 429; garbage; drop; refuse (400 invalid_request, nothing made). */
export type Behaviour = 'answer' | 'hang' | 'lose' | '500' | '429' | 'garbage' | 'drop' | 'refuse';

/** One payout at the fake provider. */
export interface FakePayout {
  id: string;
  status: 'pending' | 'succeeded' | 'canceled';
  amount: { value: string; currency: string };
  payout_destination: Record<string, unknown>;
  description: string;
  metadata: Record<string, unknown>;
  created_at: string;
  succeeded_at?: string;
  cancellation_details?: { party: string; reason: string };
  test: boolean;
}

/** A request the fake received (the card number is kept only as the fake's own record of it). */
export interface Received {
  method: string;
  path: string;
  key: string;
  body: Record<string, unknown> | null;
}

/** The fake provider. */
export class FakeYookassa {
  readonly received: Received[] = [];
  readonly payouts = new Map<string, FakePayout>();
  /** Payouts by Idempotence-Key. */
  private readonly keys = new Map<string, string>();
  private readonly queued = new Map<string, Behaviour[]>();
  private readonly hung: ServerResponse[] = [];
  private seq = 1;
  private server!: Server;
  base = '';
  /** Where notifications go (kopek's /v1/callbacks/yookassa/{shop_id}), set by the test. */
  notifyUrl = '';
  /** kopek's answers to notifications. */
  readonly notified: Array<{ status: number }> = [];

  constructor(private readonly agentId: string, private readonly secret: string) {}

  /** Listen on 127.0.0.1 at a free port. */
  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The API address shops are configured with. */
  get apiUrl(): string {
    return `${this.base}/v3`;
  }

  /** Stop, cutting hung requests. */
  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** The next `n` requests of a route ('POST' creates, 'GET' reads) get `b`. */
  next(route: 'POST' | 'GET', b: Behaviour, n = 1): void {
    const q = this.queued.get(route) ?? [];
    for (let i = 0; i < n; i++) q.push(b);
    this.queued.set(route, q);
  }

  /** Forget the behaviours still queued. */
  reset(): void {
    this.queued.clear();
  }

  /** Cut every hung request. */
  release(): void {
    for (const res of this.hung.splice(0)) res.destroy();
  }

  /** Requests of a route received so far. */
  calls(route: 'POST' | 'GET'): Received[] {
    return this.received.filter((r) => r.method === route && r.path.startsWith('/v3/payouts'));
  }

  /** The payout kopek's payout id names (metadata.payout_id). */
  byPayoutId(payoutId: string): FakePayout | undefined {
    return [...this.payouts.values()].find((p) => p.metadata.payout_id === payoutId);
  }

  /** Move a payout to its final status, and notify kopek unless `notify` is false. */
  async settle(id: string, status: 'succeeded' | 'canceled', reason = 'general_decline', notify = true): Promise<void> {
    const p = this.payouts.get(id);
    if (!p) throw new Error(`no payout ${id} at the fake`);
    p.status = status;
    if (status === 'succeeded') p.succeeded_at = new Date().toISOString();
    else p.cancellation_details = { party: 'yoo_money', reason };
    if (notify) await this.notify(p);
  }

  /** POST a notification of `p` (or any body) to kopek; kopek's HTTP status. */
  async notify(p: FakePayout | Record<string, unknown>, event?: string): Promise<number> {
    const body = 'status' in p && 'id' in p && !('type' in p) ? { type: 'notification', event: event ?? `payout.${p.status}`, object: p } : p;
    const r = await fetch(this.notifyUrl, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    await r.text();
    this.notified.push({ status: r.status });
    return r.status;
  }

  private take(route: string): Behaviour {
    return this.queued.get(route)?.shift() ?? 'answer';
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = (req.url ?? '').split('?')[0];
    let body: Record<string, unknown> | null = null;
    try {
      body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : null;
    } catch {
      body = null;
    }
    const key = String(req.headers['idempotence-key'] ?? '');
    this.received.push({ method: req.method ?? '', path, key, body });
    const auth = String(req.headers.authorization ?? '');
    if (auth !== `Basic ${Buffer.from(`${this.agentId}:${this.secret}`).toString('base64')}`) return this.error(res, 401, 'invalid_credentials', 'Authentication by given credentials failed');
    if (req.method === 'POST' && path === '/v3/payouts') return this.create(res, key, body);
    const m = /^\/v3\/payouts\/([^/]+)$/.exec(path);
    if (req.method === 'GET' && m) {
      const b = this.take('GET');
      if (this.fault(res, b)) return;
      const p = this.payouts.get(decodeURIComponent(m[1]));
      if (!p) return this.error(res, 404, 'not_found', 'Payout not found');
      return this.json(res, 200, p);
    }
    this.error(res, 404, 'not_found', 'No such method');
  }

  private create(res: ServerResponse, key: string, body: Record<string, unknown> | null): void {
    if (!key) return this.error(res, 400, 'invalid_request', 'Idempotence-Key is missing', 'Idempotence-Key');
    const b = this.take('POST');
    if (b === 'hang') return void this.hung.push(res);
    if (b !== 'answer' && b !== 'lose' && this.fault(res, b)) return;
    const known = this.keys.get(key);
    let p = known ? this.payouts.get(known) : undefined;
    if (!p) {
      const invalid = checkBody(body);
      if (invalid) return this.error(res, 400, 'invalid_request', invalid, invalid.split(' ')[0]);
      p = this.make(body!);
      this.keys.set(key, p.id);
    }
    if (b === 'lose') return void this.hung.push(res);
    this.json(res, 200, p);
  }

  private make(body: Record<string, unknown>): FakePayout {
    const dest = body.payout_destination_data as Record<string, any>;
    const shown = dest.type === 'bank_card' ? { type: 'bank_card', card: { first6: String(dest.card.number).slice(0, 6), last4: String(dest.card.number).slice(-4), card_type: 'Mir' } } : { type: 'sbp', phone: dest.phone, bank_id: dest.bank_id };
    const p: FakePayout = {
      id: `po-${String(this.seq++).padStart(6, '0')}-0000-5000-a000-${Date.now().toString(16).padStart(12, '0')}`,
      status: 'pending',
      amount: body.amount as FakePayout['amount'],
      payout_destination: shown,
      description: String(body.description ?? ''),
      metadata: (body.metadata as Record<string, unknown>) ?? {},
      created_at: new Date().toISOString(),
      test: false,
    };
    this.payouts.set(p.id, p);
    return p;
  }

  /** Answer a fault behaviour; true when it did. */
  private fault(res: ServerResponse, b: Behaviour): boolean {
    switch (b) {
      case 'hang':
      case 'lose':
        this.hung.push(res);
        return true;
      case '500':
        this.error(res, 500, 'internal_server_error', 'Internal server error');
        return true;
      case '429':
        this.error(res, 429, 'too_many_requests', 'Too many requests');
        return true;
      case 'garbage':
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<html>maintenance</html>');
        return true;
      case 'drop':
        res.socket?.destroy();
        return true;
      case 'refuse':
        this.error(res, 400, 'invalid_request', 'The recipient cannot take payouts', 'payout_destination_data');
        return true;
      default:
        return false;
    }
  }

  private json(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
  }

  private error(res: ServerResponse, status: number, code: string, description: string, parameter?: string): void {
    this.json(res, status, { type: 'error', id: `err-${this.seq++}`, code, description, ...(parameter ? { parameter } : {}) });
  }
}

/** Why a payout body is refused (invalid_request), or '' when it is well formed. */
function checkBody(body: Record<string, unknown> | null): string {
  const amount = body?.amount as { value?: unknown; currency?: unknown } | undefined;
  if (!amount || typeof amount.value !== 'string' || !/^\d+\.\d{2}$/.test(amount.value) || amount.currency !== 'RUB') return 'amount is invalid';
  const d = body!.payout_destination_data as Record<string, any> | undefined;
  if (d?.type === 'sbp') {
    if (typeof d.phone !== 'string' || !/^7\d{10}$/.test(d.phone)) return 'payout_destination_data.phone is invalid';
    if (typeof d.bank_id !== 'string' || !/^\d{12}$/.test(d.bank_id)) return 'payout_destination_data.bank_id is invalid';
    return '';
  }
  if (d?.type === 'bank_card') return typeof d.card?.number === 'string' && /^\d{13,19}$/.test(d.card.number) ? '' : 'payout_destination_data.card.number is invalid';
  return 'payout_destination_data is invalid';
}
