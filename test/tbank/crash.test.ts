import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import { spawnServer } from '../helpers/child-server';
import { readOwn } from '../helpers/own-read';
import type { FakeTBank } from './fake-tbank';
import { settled, tbankSuite } from '../helpers/tbank';
import { defaultConfig } from '../../src/platform/config';

// A crash between sending a request and recording its answer: `kopek serve` is killed (SIGKILL) while the
// bank holds the Init it has already acted on. On restart the request is found sent without an answer: it
// is not sent again; its payment is settled by CheckOrder at --acquirer-sync-after.

const TERMINAL = '1700000000CRASH';
const PASSWORD = 'crash-terminal-pass-19bd';
const SYNC_AFTER_S = 60;
const suite = tbankSuite({ terminalKey: TERMINAL, password: PASSWORD }, { acquirerSyncAfterSeconds: SYNC_AFTER_S });
const { time } = suite;
let s: TestServer;
let fake: FakeTBank;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

function requests(id: string): Promise<Array<{ operation: string; state: string }>> {
  return readOwn(s.dbPath, 'SELECT operation, state FROM bank_requests WHERE subject_id = ? ORDER BY id', id);
}

test('killed between Init and its answer: after restart the Init is not sent again and CheckOrder settles the payment', async () => {
  const c = await s.request('POST', '/v1/public/payments', { key: shop.key, body: { amount: 31_000, method: 'cards' } });
  assert.equal(c.status, 201, c.text);
  const id = c.body.payment.id as string;
  await s.running.close();

  const child = await spawnServer(['--db', s.dbPath, '--no-demo', '--acquirer-timeout', '120', '--acquirer-sync-after', String(SYNC_AFTER_S), '--log-level', 'warn', '--webhook-allow', '127.0.0.1/32']);
  try {
    fake.next('Init', 'lose');
    fake.notify = false;
    const r = await fetch(`${child.url}/pay/${id}/method`, { method: 'POST', body: new URLSearchParams({ method: 'cards' }), redirect: 'manual' });
    assert.equal(r.status, 303);
    for (let i = 0; i < 400 && fake.calls('Init').length === 0; i++) await new Promise((res) => setTimeout(res, 25));
    assert.equal(fake.calls('Init').length, 1, 'the bank got the Init');
    assert.deepEqual(await requests(id), [{ operation: 'Init', state: 'sent' }], 'recorded as sent before the bytes left');
    child.proc.kill('SIGKILL');
    assert.equal(await child.exited, 'SIGKILL');
  } finally {
    child.proc.kill('SIGKILL');
  }
  // Meanwhile the payer pays at the bank, whose notification finds nobody.
  const bank = fake.last();
  bank.status = 'CONFIRMED';

  time.advance(Math.max(0, Date.now() - time.now()));
  await s.restart();
  // No PostgreSQL node is sole (others may share the database): the killed node's claim on the job that sent
  // the request lapses after --job-lease, and only then does the job run here. A SQLite server voids it at start.
  if (s.store.engine === 'postgres') time.advance(defaultConfig().jobLeaseSeconds * 1000);
  await settled(s);
  assert.deepEqual(await requests(id), [{ operation: 'Init', state: 'unknown' }]);
  assert.equal((await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).body.status, 'processing');
  time.advance(SYNC_AFTER_S * 1000);
  await settled(s);
  assert.deepEqual((await requests(id)).map((r) => `${r.operation}:${r.state}`), ['Init:unknown', 'CheckOrder:answered']);
  assert.equal(fake.calls('Init').length, 1, 'the Init was never sent twice');
  const p = (await s.request('GET', `/v1/public/payments/${id}`, { key: shop.key })).body;
  assert.equal(p.status, 'succeeded');
  fake.notify = true;
});
