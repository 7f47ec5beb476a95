// An integration test of a shop's webhook handling against kopek, with node:test and nothing to install.
// Run from the project folder: node --test examples/node/payment.test.mjs   (KOPEK_BIN names another kopek executable)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createInterface } from 'node:readline';

const KOPEK = process.env.KOPEK_BIN ?? 'dist/kopek';
const SECRET = 'whs_example_secret_0123456789'; // fixed with --secret, so the receiver knows it
let server, listener, kopek, receiver;
const received = []; // the events the receiver accepted

/** Start a process and resolve with it and its first stdout line that `match` accepts. */
function start(args, match) {
  const proc = spawn(KOPEK, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout });
  return new Promise((resolve, reject) => {
    proc.on('exit', (code) => reject(new Error(`${KOPEK} ${args[0]} exited with ${code}`)));
    lines.on('line', (line) => {
      if (match(line)) resolve({ proc, line, lines });
    });
  });
}

/** True when the X-PSP-Signature header holds a v2 signature of this body with our secret. */
function verified(header, body) {
  const t = /(?:^|,)t=(\d+)/.exec(header)?.[1];
  const expected = Buffer.from(createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex'));
  return [...header.matchAll(/v2=([0-9a-f]{64})/g)].some((m) => timingSafeEqual(Buffer.from(m[1]), expected));
}

before(async () => {
  // Your application's webhook handler would be here; this one checks the signature and keeps the event.
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (!verified(String(req.headers['x-psp-signature']), body)) return void res.writeHead(400).end();
      received.push(JSON.parse(body));
      res.writeHead(200).end();
    });
  });
  await new Promise((r) => receiver.listen(0, '127.0.0.1', r));
  const started = await start(['serve', '--ephemeral', '--ready-json', '--port', '0'], (l) => l.startsWith('{'));
  server = started.proc;
  kopek = JSON.parse(started.line); // {base_url, merchant_id, shop_id, test_key}
  const forwardTo = `http://127.0.0.1:${receiver.address().port}/webhooks/kopek`;
  listener = (await start(['listen', '--url', kopek.base_url, '--key', kopek.test_key, '--forward-to', forwardTo, '--secret', SECRET], (l) => l.startsWith('Ready.'))).proc;
});

after(() => {
  listener?.kill('SIGTERM');
  server?.kill('SIGTERM');
  receiver?.close();
});

/** Call the API with the test key. */
async function api(method, path, body) {
  const res = await fetch(kopek.base_url + path, {
    method,
    headers: { Authorization: `Bearer ${kopek.test_key}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function eventually(check, timeout_ms = 10_000) {
  const until = Date.now() + timeout_ms;
  for (;;) {
    const value = check();
    if (value) return value;
    if (Date.now() > until) throw new Error('the webhook did not come in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a paid order gets a signed payment.succeeded webhook', async () => {
  const created = await api('POST', '/v1/public/payments', { amount: 150000, order_id: 'order-1001', description: 'Tea, 3 packs' });
  const id = created.payment.id;
  // The buyer picks SBP on the hosted page; the test bank confirms the payment.
  await api('POST', `/v1/test/payments/${id}/simulate`, { action: 'open_session', method: 'sbp' });
  await api('POST', `/v1/test/payments/${id}/simulate`, { action: 'succeed' });

  const hook = await eventually(() => received.find((e) => e.data.id === id));
  assert.equal(hook.event, 'payment.succeeded');
  assert.equal(hook.data.amount, 150000);
  assert.equal(hook.data.order_id, 'order-1001');
  assert.equal((await api('GET', `/v1/public/payments/${id}`)).status, 'succeeded');
});
