// The cluster benchmark's anchor: the least a node:http + pg service does per request. POST /payments is one
// INSERT, its own durable transaction (synchronous_commit on), through a pool as large as kopek's. No auth, no
// validation beyond JSON.parse, no events, no jobs.
//
// Usage: node --import tsx scripts/lib/baseline-pg-server.ts URL [POOL]   (prints "listening on URL" on stderr;
// POOL: connections, default a node's pool)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { PG_LIMITS } from '../../src/platform/storage/limits';
import { readPayment, reply } from './baseline-http';

const url = process.argv[2];
if (!url) {
  process.stderr.write('usage: baseline-pg-server.ts URL [POOL]\n');
  process.exit(2);
}
const pool = new pg.Pool({ connectionString: url, max: Number(process.argv[3] ?? PG_LIMITS.pool), options: '-c synchronous_commit=on' });

async function main(): Promise<void> {
  await pool.query('CREATE TABLE IF NOT EXISTS baseline_payments (id TEXT PRIMARY KEY, amount BIGINT NOT NULL, currency TEXT NOT NULL, status TEXT NOT NULL, created_at BIGINT NOT NULL)');
  const server = createServer((req, res) => {
    if (req.method !== 'POST' || req.url !== '/payments') {
      req.resume();
      reply(res, 404, { error: 'not found' });
      return;
    }
    readPayment(req, res, (row) => {
      pool.query('INSERT INTO baseline_payments (id, amount, currency, status, created_at) VALUES ($1, $2, $3, $4, $5)', [row.id, row.amount, row.currency, row.status, row.created_at]).then(
        () => reply(res, 201, { payment: row }),
        (err) => reply(res, 500, { error: String(err) }),
      );
    });
  });
  server.listen(0, '127.0.0.1', () => process.stderr.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`));
  process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
}
void main();
