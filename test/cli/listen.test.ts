import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { receiverPool, type Received } from '../helpers/webhooks';
import { createPayment, simulate } from '../helpers/payments';
import { openStorage } from '../../src/platform/storage/maintenance';
import { createDemo } from '../../src/money/shops/store';
import { addEndpoint } from '../../src/money/webhooks/store';

const ROOT = join(__dirname, '..', '..');
const SECRET = 'whs_listen_test_secret_0123456789';
const pool = receiverPool();
const listeners: Listener[] = [];
const servers: TestServer[] = [];

after(async () => {
  for (const l of listeners) if (l.proc.exitCode === null && l.proc.signalCode === null) l.proc.kill('SIGKILL');
  await pool.closeAll();
  for (const s of servers) await s.close();
});

/** `kopek listen` running as a child process, its stdout read line by line. */
interface Listener {
  proc: ChildProcess;
  lines: string[];
  stderr(): string;
  /** Resolve with the first line (from `from` on) matching `re`. */
  waitLine(re: RegExp, from?: number, timeout_ms?: number): Promise<string>;
  exited: Promise<number | string>;
}

function startListener(args: string[], env: NodeJS.ProcessEnv = {}): Listener {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'main.ts'), 'listen', ...args], {
    cwd: ROOT,
    env: { ...process.env, KOPEK_URL: '', KOPEK_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let partial = '';
  let err = '';
  const waiters = new Set<() => void>();
  proc.stdout!.setEncoding('utf8');
  proc.stdout!.on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
    for (const w of [...waiters]) w();
  });
  proc.stderr!.on('data', (c: Buffer) => void (err += c.toString()));
  const exited = new Promise<number | string>((resolve) => proc.on('exit', (code, signal) => resolve(code ?? signal ?? -1)));
  const l: Listener = {
    proc,
    lines,
    stderr: () => err,
    exited,
    waitLine(re, from = 0, timeout_ms = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const hit = lines.slice(from).find((x) => re.test(x));
          if (hit === undefined) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hit);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no line matching ${re} within ${timeout_ms} ms; stdout: ${lines.join(' | ')}; stderr: ${err}`));
        }, timeout_ms);
        if (!check()) waiters.add(check);
        void exited.then(() => setTimeout(() => check() || reject(new Error(`listener exited before ${re}; stdout: ${lines.join(' | ')}; stderr: ${err}`)), 50));
      });
    },
  };
  listeners.push(l);
  return l;
}

async function server(): Promise<TestServer> {
  const s = await startTestServer();
  servers.push(s);
  return s;
}

/** Start a listener on the server's demo shop and wait for its ready line. */
async function ready(s: TestServer, forwardTo: string, more: string[] = []): Promise<Listener> {
  const l = startListener(['--url', s.url, '--key', s.demo.key, '--forward-to', forwardTo, ...more]);
  await l.waitLine(/Ready\. Webhook signing secret: whs_|"type":"ready"/);
  return l;
}

/** A receiver's request as the event it carries. */
function eventOf(r: Received): { id: string; event: string } {
  return JSON.parse(r.body) as { id: string; event: string };
}

async function waitCount(list: unknown[], n: number, timeout_ms = 15_000): Promise<void> {
  const until = Date.now() + timeout_ms;
  while (list.length < n) {
    if (Date.now() > until) throw new Error(`expected ${n} requests, got ${list.length}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('listen forwards a payment webhook with the exact body and headers a delivery sends, signed v2 with its printed secret, and leaves no endpoint', async () => {
  const s = await server();
  const viaListen = await pool.receiver();
  const viaEndpoint = await pool.receiver();
  const l = await ready(s, viaListen.url + '/hook', ['--secret', SECRET]);
  assert.equal(l.lines[0], `Ready. Webhook signing secret: ${SECRET}`, 'the secret is the first line');
  // A real endpoint of the same shop, to compare with what a delivery sends.
  await addEndpoint(s.store, { shopId: s.demo.shopId, url: viaEndpoint.url + '/ep' }, Date.now());
  await paid(s, 10000);
  const got = await viaListen.waitFor(1);
  const sent = await viaEndpoint.waitFor(1);
  assert.equal(got.body, sent.body, 'the same body bytes as the delivery');
  assert.equal(got.method, 'POST');
  assert.equal(got.path, '/hook');
  for (const h of ['content-type', 'user-agent', 'x-psp-event-id', 'content-length']) assert.equal(got.headers[h], sent.headers[h], h);
  const { id, event } = eventOf(got);
  assert.equal(event, 'payment.succeeded');
  const sig = String(got.headers['x-psp-signature']);
  const t = String(got.headers['x-psp-timestamp']);
  const mac = createHmac('sha256', SECRET).update(`${t}.${got.body}`).digest('hex');
  assert.equal(sig, `t=${t},v1=${mac},v2=${mac}`, 'a v2 signature over the exact body with the printed secret');
  assert.match(await l.waitLine(/payment\.succeeded/), new RegExp(`^payment\\.succeeded  ${id}  -> 200  \\(\\d+ ms\\)$`));
  l.proc.kill('SIGTERM');
  assert.equal(await l.exited, 0);
  const endpoints = await s.store.all<{ url: string }>('SELECT url FROM webhook_endpoints WHERE shop_id = ?', s.demo.shopId);
  assert.deepEqual(endpoints.map((e) => e.url), [viaEndpoint.url + '/ep'], 'listen made no endpoint of its own');
});

test('listen prints the receiver status, or the error when nothing answers, one line per event with --json', async () => {
  const s = await server();
  const failing = await pool.receiver(() => ({ status: 500 }));
  const l = await ready(s, failing.url + '/x', ['--json']);
  const readyLine = JSON.parse(l.lines[0]);
  assert.equal(readyLine.type, 'ready');
  assert.match(readyLine.secret, /^whs_[A-Za-z0-9_-]{43}$/, 'a fresh secret when none is given');
  await paid(s, 10000);
  const line = JSON.parse(await l.waitLine(/"type":"event"/));
  assert.equal(line.event, 'payment.succeeded');
  assert.match(line.id, /^evt_/);
  assert.equal(line.status, 500);
  assert.equal(line.error, null);
  l.proc.kill('SIGINT');
  assert.equal(await l.exited, 0);

  // A receiver that is not there: the line names the error and the listener goes on.
  const gone = await pool.receiver();
  const deadUrl = gone.url;
  await gone.close();
  const l2 = await ready(s, deadUrl + '/x');
  await paid(s, 10000);
  assert.match(await l2.waitLine(/payment\.succeeded/), /^payment\.succeeded  evt_\S+  -> error: ECONNREFUSED/);
  l2.proc.kill('SIGTERM');
  assert.equal(await l2.exited, 0);
});

test('listen --events forwards only the named events', async () => {
  const s = await server();
  const rcv = await pool.receiver();
  const l = await ready(s, rcv.url, ['--events', 'payment.failed']);
  await paid(s, 10000);
  await paid(s, 10001);
  await l.waitLine(/payment\.failed/);
  await paid(s, 10000);
  await paid(s, 10001);
  await waitCount(rcv.received, 2);
  assert.deepEqual(rcv.received.map((r) => eventOf(r).event), ['payment.failed', 'payment.failed']);
  assert.ok(!l.lines.some((x) => x.includes('payment.succeeded')), l.lines.join('\n'));
  l.proc.kill('SIGTERM');
  assert.equal(await l.exited, 0);
});

test('listen reconnects after the server restarts on the same file: every event forwarded once, none lost or doubled', async () => {
  const s = await server();
  const rcv = await pool.receiver();
  const l = await ready(s, rcv.url);
  const port = Number(new URL(s.url).port);
  await paid(s, 10000);
  await waitCount(rcv.received, 1);
  await s.restart({ port });
  // Made at once after the restart, most likely before the listener is back: it comes through the replay.
  await paid(s, 10000);
  await l.waitLine(/^Reconnected; going on after event #\d+\.$/);
  await paid(s, 10000);
  await waitCount(rcv.received, 3);
  await new Promise((r) => setTimeout(r, 300));
  const ids = rcv.received.map((r) => eventOf(r).id);
  const stored = await s.store.all<{ id: string }>(`SELECT id FROM events WHERE shop_id = ? AND webhook_event = 'payment.succeeded' ORDER BY seq`, s.demo.shopId);
  assert.deepEqual(ids, stored.map((e) => e.id), 'each webhook event once, in order');
  l.proc.kill('SIGTERM');
  assert.equal(await l.exited, 0);
});

test('listen tells a server that came back on a new database (ids counted anew) from a restart, and forwards the new one from its first event', async () => {
  const s = await server();
  const rcv = await pool.receiver();
  const l = await ready(s, rcv.url, ['--json']);
  const port = Number(new URL(s.url).port);
  // Three events on the first database, so its ids run ahead of the new one's.
  for (let i = 0; i < 3; i++) await paid(s, 10000);
  await waitCount(rcv.received, 3);
  // A new database that knows the same key, as a restarted `serve --ephemeral --demo-key` does.
  const fresh = join(s.dir, 'fresh.db');
  const setup = openStorage(fresh);
  await createDemo(setup, Date.now(), s.demo.key);
  await setup.close();
  await s.restart({ port, db: fresh });
  await paid(s, 10000);
  const back = JSON.parse(await l.waitLine(/"type":"reconnected"/));
  assert.deepEqual([back.database, back.from], ['new', 'start']);
  await waitCount(rcv.received, 4);
  await paid(s, 10000);
  await waitCount(rcv.received, 5);
  await new Promise((r) => setTimeout(r, 300));
  const stored = await s.store.all<{ id: string }>(`SELECT id FROM events WHERE webhook_event = 'payment.succeeded' ORDER BY seq`);
  assert.equal(stored.length, 2);
  assert.deepEqual(rcv.received.slice(3).map((r) => eventOf(r).id), stored.map((e) => e.id), 'the new database forwarded from its first event, once each');
  l.proc.kill('SIGTERM');
  assert.equal(await l.exited, 0);
});

test('listen stops on SIGTERM with exit 0 and closes its stream', async () => {
  const s = await server();
  const rcv = await pool.receiver();
  const l = await ready(s, rcv.url);
  await waitFor(() => s.running.app.stream.clientCount === 1);
  l.proc.kill('SIGTERM');
  assert.equal(await l.exited, 0);
  assert.equal(l.lines.at(-1), 'Stopped.');
  await waitFor(() => s.running.app.stream.clientCount === 0);
});

test('listen refuses what cannot work with one line naming what to do, and a non-zero exit', async () => {
  const s = await server();
  const live = await s.newKey(s.demo.shopId, 'live');
  const cases: Array<[string[], RegExp]> = [
    [['--url', s.url, '--key', live.key, '--forward-to', 'http://127.0.0.1:9/x'], /test keys only.*live key/],
    [['--url', s.url, '--key', s.demo.key], /--forward-to URL is required/],
    [['--url', s.url, '--key', s.demo.key, '--forward-to', 'localhost:3000'], /--forward-to "localhost:3000": only http and https/],
    [['--url', s.url, '--key', s.demo.key, '--forward-to', 'http://127.0.0.1:9/x', '--events', 'payment.paid'], /event "payment\.paid".*known: payment\.succeeded/],
    [['--url', s.url, '--key', s.demo.key, '--forward-to', 'http://127.0.0.1:9/x', '--secret', 'abc'], /--secret "abc…": a webhook secret is whs_/],
    [['--url', s.url, '--key', 'sk_test_nosuchkey0123456789', '--forward-to', 'http://127.0.0.1:9/x'], /refused the key \(401.*check --key/],
    [['--url', 'http://127.0.0.1:9', '--key', s.demo.key, '--forward-to', 'http://127.0.0.1:9/x'], /no server answers at http:\/\/127\.0\.0\.1:9 \(ECONNREFUSED\); start one with `kopek serve`/],
    [['--url', s.url + '/nothing-here', '--key', s.demo.key, '--forward-to', 'http://127.0.0.1:9/x', '--db', 'x.db'], /not to a database file/],
  ];
  const runs = cases.map(([args]) => startListener(args));
  for (let i = 0; i < cases.length; i++) {
    const code = await runs[i].exited;
    assert.equal(code, 1, `exit code of ${cases[i][0].join(' ')}`);
    const err = runs[i].stderr().trim();
    assert.equal(err.split('\n').length, 1, `one line: ${err}`);
    assert.match(err, /^kopek listen: /);
    assert.match(err, cases[i][1]);
    assert.deepEqual(runs[i].lines, [], 'nothing on stdout');
  }
});

test('the stream refuses an unknown format before it opens', async () => {
  const s = await server();
  const r = await s.request('GET', '/v1/public/events?format=xml');
  assert.equal(r.status, 400);
  assert.equal(r.body.error.param, 'format');
  assert.match(r.body.error.message, /^Cannot open the event stream: format must be "events" or "webhook", got "xml"$/);
});

/** A test payment the test bank answers at once (the servers run with --sim-delay 0): the amount's plan decides. */
async function paid(s: TestServer, amount: number): Promise<void> {
  const c = await createPayment(s, { amount });
  const r = await simulate(s, c.payment.id, { action: 'open_session', method: 'sbp' });
  assert.equal(r.status, 200, r.text);
}

async function waitFor(cond: () => boolean, timeout_ms = 5000): Promise<void> {
  const until = Date.now() + timeout_ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
