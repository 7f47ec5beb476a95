import { createHash } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local fake of T-Bank Internet Acquiring API v2 over real HTTP, written from the published protocol:
// POST {base}/v2/<Method> with a Token on every request, the bank's payment page at PaymentURL, and
// signed notifications to the NotificationURL. Tests steer it: outcomes, hangs, 5xx, unreadable bodies,
// lost, forged, repeated, late and wrong-amount notifications.

/**
 * What the fake does with the next request of a method: answer; hang before acting (nothing happens at the
 * bank); lose (act, then never answer); a 5xx; an unreadable body; refuse (ErrorCode 1051); drop the connection.
 */
export type Behaviour = 'answer' | 'hang' | 'lose' | '500' | 'garbage' | 'refuse' | 'drop';

/** One payment at the fake bank. */
export interface FakePayment {
  paymentId: string;
  orderId: string;
  terminalKey: string;
  amount: number;
  status: string;
  errorCode: string;
  recurrent: boolean;
  customerKey: string;
  rebillId: string;
  notificationUrl: string;
  successUrl: string;
  failUrl: string;
  redirectDueDate: string;
  description: string;
  refunded: number;
  /** Cancel answers by ExternalRequestId: a repeated refund is the same refund. */
  cancels: Map<string, Record<string, unknown>>;
}

/** A request the fake received, as sent. */
export interface Received {
  method: string;
  body: Record<string, unknown>;
}

/** The published signature: SHA-256 of the root scalar values plus Password, ordered by key. */
export function sign(body: Record<string, unknown>, password: string): string {
  const pairs: Array<[string, string]> = [['Password', password]];
  for (const [k, v] of Object.entries(body)) {
    if (k !== 'Token' && v !== null && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')) pairs.push([k, String(v)]);
  }
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return createHash('sha256').update(pairs.map((p) => p[1]).join(''), 'utf8').digest('hex');
}

/** The fake bank. */
export class FakeTBank {
  readonly received: Received[] = [];
  readonly payments = new Map<string, FakePayment>();
  /** Notifications sent, with kopek's answer. */
  readonly notified: Array<{ body: Record<string, unknown>; status: number; text: string }> = [];
  /** One-shot behaviours per method, used first in order. */
  private readonly queued = new Map<string, Array<{ b: Behaviour; when?: (body: Record<string, unknown>) => boolean }>>();
  /** The status the payment page's "Pay" gives (and its ErrorCode). */
  pageOutcome: { status: string; errorCode: string } = { status: 'CONFIRMED', errorCode: '0' };
  /** The status Charge gives. */
  chargeOutcome: { status: string; errorCode: string } = { status: 'CONFIRMED', errorCode: '0' };
  /** When false, the bank "loses" its notifications (they are never sent). */
  notify = true;
  /** Refuse refunds (Cancel with Amount) with this ErrorCode, when set. */
  refundRefusal = '';
  private readonly hung: ServerResponse[] = [];
  private seq = 7_000_000;
  private server!: Server;
  base = '';

  constructor(private readonly terminals: Record<string, string>) {}

  /** Listen on 127.0.0.1 at a free port; `unref`: do not keep the process alive (a helper's shared fake). */
  async start(opts: { unref?: boolean } = {}): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    if (opts.unref) this.server.unref();
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The API address shops are configured with. */
  get apiUrl(): string {
    return `${this.base}/v2`;
  }

  /** Stop, cutting hung requests. */
  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  /** The next `n` requests of `method` (those `when` accepts, if given) get `b`; then normal answers again. */
  next(method: string, b: Behaviour, n = 1, when?: (body: Record<string, unknown>) => boolean): void {
    const q = this.queued.get(method) ?? [];
    for (let i = 0; i < n; i++) q.push({ b, when });
    this.queued.set(method, q);
  }

  private take(method: string, body: Record<string, unknown>): Behaviour {
    const q = this.queued.get(method) ?? [];
    const i = q.findIndex((x) => !x.when || x.when(body));
    return i < 0 ? 'answer' : q.splice(i, 1)[0].b;
  }

  /** Cut every hung request (the client sees its connection close). */
  release(): void {
    for (const res of this.hung.splice(0)) res.destroy();
  }

  /** Requests of one method received so far. */
  calls(method: string): Received[] {
    return this.received.filter((r) => r.method === method);
  }

  /** The payment of an OrderId (the latest). */
  byOrder(orderId: string): FakePayment | undefined {
    return [...this.payments.values()].reverse().find((p) => p.orderId === orderId);
  }

  /** The latest payment created. */
  last(): FakePayment {
    const all = [...this.payments.values()];
    if (all.length === 0) throw new Error('the fake bank has no payment');
    return all[all.length - 1];
  }

  /** The notification body of a payment in its current state, signed with its terminal's password. */
  notification(p: FakePayment, over: Record<string, unknown> = {}): Record<string, unknown> {
    const body: Record<string, unknown> = {
      TerminalKey: p.terminalKey,
      OrderId: p.orderId,
      Success: p.status !== 'REJECTED' && p.status !== 'AUTH_FAIL',
      Status: p.status,
      PaymentId: Number(p.paymentId),
      ErrorCode: p.errorCode,
      Amount: p.amount,
      CardId: 881900,
      Pan: '430000******0777',
      ExpDate: '1230',
      ...(p.recurrent && p.status === 'CONFIRMED' ? { RebillId: p.rebillId } : {}),
      ...over,
    };
    body.Token = sign(body, this.terminals[p.terminalKey]);
    return body;
  }

  /** POST a notification to the payment's NotificationURL; returns kopek's answer. */
  async send(p: FakePayment, body: Record<string, unknown> = this.notification(p)): Promise<{ status: number; text: string }> {
    const r = await post(p.notificationUrl, body);
    this.notified.push({ body, ...r });
    return r;
  }

  /** The payer finishes paying with `status`: the bank sets it and (unless lost) notifies. */
  async settle(p: FakePayment, status: string, errorCode = '0'): Promise<{ status: number; text: string } | undefined> {
    p.status = status;
    p.errorCode = errorCode;
    return this.notify ? this.send(p) : undefined;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.base);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    if (url.pathname === '/favicon.ico') return void res.writeHead(204).end();
    const page = /^\/pay\/(\d+)$/.exec(url.pathname);
    if (page) return this.paymentPage(req.method ?? 'GET', page[1], res);
    const m = /^\/v2\/(\w+)$/.exec(url.pathname);
    if (!m || req.method !== 'POST') return void res.writeHead(404).end();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      return json(res, { Success: false, ErrorCode: '9999', Message: 'Invalid JSON' });
    }
    const method = m[1];
    this.received.push({ method, body });
    const b = this.take(method, body);
    if (b === 'hang') return void this.hung.push(res);
    if (b === 'drop') return void res.destroy();
    if (b === '500') return void res.writeHead(503, { 'Content-Type': 'text/html' }).end('<html>Service Unavailable</html>');
    if (b === 'garbage') return void res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"Success": tru');
    const password = this.terminals[String(body.TerminalKey)];
    if (password === undefined) return json(res, { Success: false, ErrorCode: '202', Message: 'Terminal not found' });
    if (typeof body.Token !== 'string' || body.Token !== sign(body, password)) return json(res, { Success: false, ErrorCode: '204', Message: 'Invalid token' });
    if (b === 'refuse') return json(res, { Success: false, ErrorCode: '1051', Message: 'Refused', TerminalKey: body.TerminalKey });
    const out = this.answer(method, body);
    if (b === 'lose') return void this.hung.push(res);
    json(res, out);
  }

  private answer(method: string, b: Record<string, unknown>): Record<string, unknown> {
    const tk = String(b.TerminalKey);
    const ok = (p: FakePayment, more: Record<string, unknown> = {}) => ({ Success: true, ErrorCode: '0', TerminalKey: tk, Status: p.status, PaymentId: p.paymentId, OrderId: p.orderId, Amount: p.amount, ...more });
    const find = (): FakePayment | undefined => {
      const p = this.payments.get(String(b.PaymentId));
      return p && p.terminalKey === tk ? p : undefined;
    };
    const missing = { Success: false, ErrorCode: '255', Message: 'Payment not found', TerminalKey: tk };
    switch (method) {
      case 'Init': {
        const paymentId = String(++this.seq);
        const p: FakePayment = {
          paymentId,
          orderId: String(b.OrderId),
          terminalKey: tk,
          amount: Number(b.Amount),
          status: 'NEW',
          errorCode: '0',
          recurrent: b.Recurrent === 'Y',
          customerKey: String(b.CustomerKey ?? ''),
          // Not the PaymentId behind a fixed prefix ("150" + "7000012" was one): the secrets test searches the
          // raw database bytes, where a stored text ending in "150" next to a stored PaymentId spelled it.
          rebillId: String(1_500_000_000_000 + this.seq * 7_919),
          notificationUrl: String(b.NotificationURL ?? ''),
          successUrl: String(b.SuccessURL ?? ''),
          failUrl: String(b.FailURL ?? ''),
          redirectDueDate: String(b.RedirectDueDate ?? ''),
          description: String(b.Description ?? ''),
          refunded: 0,
          cancels: new Map(),
        };
        this.payments.set(paymentId, p);
        return ok(p, { PaymentURL: `${this.base}/pay/${paymentId}` });
      }
      case 'GetQr': {
        const p = find();
        if (!p) return missing;
        p.status = 'FORM_SHOWED';
        return { Success: true, ErrorCode: '0', TerminalKey: tk, OrderId: p.orderId, PaymentId: p.paymentId, Data: `https://qr.nspk.ru/AS1000${p.paymentId}?type=02&bank=100000000004&sum=${p.amount}&cur=RUB&crc=C08B` };
      }
      case 'GetState': {
        const p = find();
        return p ? ok(p) : missing;
      }
      case 'CheckOrder': {
        const list = [...this.payments.values()].filter((p) => p.orderId === String(b.OrderId) && p.terminalKey === tk);
        if (list.length === 0) return { Success: false, ErrorCode: '7', Message: 'Order not found', OrderId: b.OrderId, TerminalKey: tk };
        return { Success: true, ErrorCode: '0', TerminalKey: tk, OrderId: b.OrderId, Payments: list.map((p) => ({ PaymentId: p.paymentId, Amount: p.amount, Status: p.status, RRN: p.status === 'CONFIRMED' ? '301234567890' : undefined, Success: true, ErrorCode: p.errorCode })) };
      }
      case 'Charge': {
        const p = find();
        if (!p) return missing;
        // A RebillId stays valid after its binding payment is refunded.
        const bound = [...this.payments.values()].find((x) => x.recurrent && ['CONFIRMED', 'PARTIAL_REFUNDED', 'REFUNDED'].includes(x.status) && x.rebillId === String(b.RebillId) && x.terminalKey === tk);
        if (!bound) return { Success: false, ErrorCode: '103', Message: 'RebillId not found', TerminalKey: tk, PaymentId: p.paymentId };
        p.status = this.chargeOutcome.status;
        p.errorCode = this.chargeOutcome.errorCode;
        return { ...ok(p), Success: p.status === 'CONFIRMED', ErrorCode: p.errorCode };
      }
      case 'Cancel': {
        const p = find();
        if (!p) return missing;
        const ext = String(b.ExternalRequestId ?? '');
        if (ext && p.cancels.has(ext)) return p.cancels.get(ext)!;
        let out: Record<string, unknown>;
        if (this.refundRefusal && b.Amount !== undefined) out = { Success: false, ErrorCode: this.refundRefusal, Message: 'Refund refused', TerminalKey: tk, PaymentId: p.paymentId, OrderId: p.orderId };
        else if (p.status === 'CONFIRMED' || p.status === 'PARTIAL_REFUNDED') {
          const amount = b.Amount === undefined ? p.amount - p.refunded : Number(b.Amount);
          if (amount > p.amount - p.refunded) out = { Success: false, ErrorCode: '3', Message: 'Amount exceeds the rest', TerminalKey: tk, PaymentId: p.paymentId };
          else {
            const original = p.amount - p.refunded;
            p.refunded += amount;
            p.status = p.refunded === p.amount ? 'REFUNDED' : 'PARTIAL_REFUNDED';
            out = { ...ok(p), OriginalAmount: original, NewAmount: p.amount - p.refunded };
          }
        } else if (p.status === 'AUTHORIZED') {
          p.status = 'REVERSED';
          out = ok(p);
        } else {
          p.status = 'CANCELED';
          out = ok(p);
        }
        if (ext) p.cancels.set(ext, out);
        return out;
      }
      default:
        return { Success: false, ErrorCode: '9999', Message: `unknown method ${method}` };
    }
  }

  /** The bank's payment page: GET shows a "Pay" button; POST pays, notifies, and sends the payer back. */
  private async paymentPage(method: string, paymentId: string, res: ServerResponse): Promise<void> {
    const p = this.payments.get(paymentId);
    if (!p) return void res.writeHead(404).end('no such payment');
    if (method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      return void res.end(`<!doctype html><title>Fake T-Bank</title><h1>Fake T-Bank</h1><p>Amount ${p.amount}</p>
<form method="post"><button id="bank-pay" type="submit">Pay</button></form>`);
    }
    await this.settle(p, this.pageOutcome.status, this.pageOutcome.errorCode);
    res.writeHead(303, { Location: p.status === 'CONFIRMED' ? p.successUrl : p.failUrl }).end();
  }
}

function json(res: ServerResponse, body: Record<string, unknown>): void {
  res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}

/** POST JSON with node:http; the answer's status and text. */
export function post(url: string, body: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = request(url, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': data.length } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(data);
  });
}
