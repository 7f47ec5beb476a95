// The benchmark's anchor: the least a node:http + better-sqlite3 service does per request. POST /payments
// is one INSERT, GET /payments/:id one SELECT, synchronous=NORMAL in WAL mode (a commit is not fsynced, so
// a power loss can drop acknowledged writes). No auth, no validation beyond JSON.parse, no events.
//
// Usage: node --import tsx scripts/lib/baseline-server.ts DB_PATH   (prints "listening on URL" on stderr)
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { readPayment, reply } from './baseline-http';

const dbPath = process.argv[2];
if (!dbPath) {
  process.stderr.write('usage: baseline-server.ts DB_PATH\n');
  process.exit(2);
}
const db = new Database(dbPath);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS payments (id TEXT PRIMARY KEY, amount INTEGER NOT NULL, currency TEXT NOT NULL, status TEXT NOT NULL, created_at INTEGER NOT NULL)');
const insert = db.prepare('INSERT INTO payments (id, amount, currency, status, created_at) VALUES (?, ?, ?, ?, ?)');
const select = db.prepare('SELECT * FROM payments WHERE id = ?');

const server = createServer((req, res) => {
  if (req.method === 'POST' && req.url === '/payments') {
    readPayment(req, res, (row) => {
      insert.run(row.id, row.amount, row.currency, row.status, row.created_at);
      reply(res, 201, { payment: row });
    });
    return;
  }
  const m = /^\/payments\/([0-9a-f-]{36})$/.exec(req.url ?? '');
  if (req.method === 'GET' && m) {
    req.resume();
    const row = select.get(m[1]);
    if (row) reply(res, 200, row);
    else reply(res, 404, { error: 'not found' });
    return;
  }
  req.resume();
  reply(res, 404, { error: 'no route' });
});
server.keepAliveTimeout = 5000;
server.listen(0, '127.0.0.1', () => {
  process.stderr.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.on('SIGTERM', () => server.close(() => (db.close(), process.exit(0))));
