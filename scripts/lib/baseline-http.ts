// What the benchmarks' bare servers (baseline-server.ts, baseline-pg-server.ts) share: the JSON reply, and the
// POST /payments body read down to its amount, the least any payment service does before it writes.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';

/** A payment row as both bare servers store and answer it. */
export interface BareRow {
  id: string;
  amount: number;
  currency: string;
  status: string;
  created_at: number;
}

export function reply(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Read a POST body and hand `write` the row it makes; a body that is not JSON is answered 400 here. */
export function readPayment(req: IncomingMessage, res: ServerResponse, write: (row: BareRow) => void): void {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let amount: number;
    try {
      amount = Number(JSON.parse(Buffer.concat(chunks).toString('utf8')).amount);
    } catch {
      reply(res, 400, { error: 'bad json' });
      return;
    }
    write({ id: randomUUID(), amount, currency: 'RUB', status: 'pending', created_at: Date.now() });
  });
}
