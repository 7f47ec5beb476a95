import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import type { TestServer, TestShop } from '../helpers/server';
import { spawnServer } from '../helpers/child-server';
import { readOwn } from '../helpers/own-read';
import { cardBody, sbpBody } from '../helpers/payouts';
import { settled, yookassaSuite, type FakeYookassa } from '../helpers/yookassa';
import { defaultConfig } from '../../src/platform/config';

// A crash between sending a payout and recording its answer: `kopek serve` is killed (SIGKILL) while the
// provider holds the POST it has already acted on. On restart the request is found sent without an answer:
// an SBP payout's check repeats the POST under the same Idempotence-Key (the provider answers the payout it
// made, never a second one); a card payout, whose number died with the process, is never sent again: the
// provider's notification (kopek's payout id in metadata) settles it.

const SYNC_AFTER_S = 60;
const suite = yookassaSuite({ acquirerSyncAfterSeconds: SYNC_AFTER_S });
const { time } = suite;
let s: TestServer;
let fake: FakeYookassa;
let shop: TestShop;
before(async () => void ({ s, fake, shop } = await suite.ready));

async function requests(id: string): Promise<string[]> {
  const rows = await readOwn<{ operation: string; state: string }>(s.dbPath, 'SELECT operation, state FROM bank_requests WHERE subject_id = ? ORDER BY id', id);
  return rows.map((r) => `${r.operation}:${r.state}`);
}

/** Create a payout in a child server, kill it once the provider got the POST (which it acts on, unanswered). */
async function killedAfterPost(body: Record<string, unknown>): Promise<string> {
  await s.running.close();
  const child = await spawnServer(['--db', s.dbPath, '--no-demo', '--acquirer-timeout', '120', '--acquirer-sync-after', String(SYNC_AFTER_S), '--log-level', 'warn', '--webhook-allow', '127.0.0.1/32']);
  let id = '';
  try {
    fake.next('POST', 'lose');
    const before0 = fake.calls('POST').length;
    const r = await fetch(`${child.url}/v1/public/payouts`, { method: 'POST', headers: { Authorization: `Bearer ${shop.key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(r.status, 201, await r.clone().text());
    id = ((await r.json()) as { payout: { id: string } }).payout.id;
    for (let i = 0; i < 400 && fake.calls('POST').length === before0; i++) await new Promise((res) => setTimeout(res, 25));
    assert.equal(fake.calls('POST').length, before0 + 1, 'the provider got the POST');
    assert.deepEqual(await requests(id), ['CreatePayout:sent'], 'recorded as sent before the bytes left');
    child.proc.kill('SIGKILL');
    assert.equal(await child.exited, 'SIGKILL');
  } finally {
    child.proc.kill('SIGKILL');
  }
  fake.release();
  time.advance(Math.max(0, Date.now() - time.now()));
  await s.restart();
  // No PostgreSQL node is sole (others may share the database): the killed node's claim on the job that sent
  // the request lapses after --job-lease, and only then does the job run here. A SQLite server voids it at start.
  if (s.store.engine === 'postgres') time.advance(defaultConfig().jobLeaseSeconds * 1000);
  fake.notifyUrl = `${s.url}/v1/callbacks/yookassa/${shop.shopId}`;
  await settled(s);
  return id;
}

async function payout(id: string): Promise<{ status: string; bank_ref: string }> {
  return (await s.request('GET', `/v1/public/payouts/${id}`, { key: shop.key })).body;
}

test('killed between the SBP POST and its answer: the check repeats it under the same key and the provider pays once', async () => {
  const id = await killedAfterPost(sbpBody(31_000));
  assert.deepEqual(await requests(id), ['CreatePayout:unknown']);
  assert.equal((await payout(id)).status, 'pending');
  time.advance(SYNC_AFTER_S * 1000);
  await settled(s);
  assert.deepEqual(await requests(id), ['CreatePayout:unknown', 'CreatePayout:answered']);
  const made = [...fake.payouts.values()].filter((p) => p.metadata.payout_id === id);
  assert.equal(made.length, 1, 'one payout at the provider');
  assert.equal(fake.calls('POST').filter((r) => r.key === id).length, 2);
  await fake.settle(made[0].id, 'succeeded');
  await settled(s);
  assert.deepEqual(await payout(id).then((p) => [p.status, p.bank_ref]), ['succeeded', made[0].id]);
});

test('killed between the card POST and its answer: never sent again without its number; the notification settles it', async () => {
  const id = await killedAfterPost(cardBody(32_000));
  time.advance(SYNC_AFTER_S * 1000);
  await settled(s);
  time.advance(SYNC_AFTER_S * 4000);
  await settled(s);
  assert.equal(fake.calls('POST').filter((r) => r.key === id).length, 1, 'never sent again');
  assert.deepEqual(await payout(id).then((p) => [p.status, p.bank_ref]), ['pending', ''], 'pending for the operator');
  const po = fake.byPayoutId(id)!;
  await fake.settle(po.id, 'succeeded');
  await settled(s);
  assert.deepEqual(await payout(id).then((p) => [p.status, p.bank_ref]), ['succeeded', po.id]);
});
