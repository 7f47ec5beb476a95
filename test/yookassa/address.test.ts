import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { sbpBody } from '../helpers/payouts';
import { yookassaSuite, expectStatus, type FakeYookassa } from '../helpers/yookassa';
import type { TestServer } from '../helpers/server';

// The provider's address is the operator's decision: a private one (here the fake on 127.0.0.1) is called
// only in a range the server opened with --webhook-allow. Otherwise nothing is sent and the payout waits.

const suite = yookassaSuite({ webhookAllow: [] });
let s: TestServer;
let fake: FakeYookassa;
before(async () => void ({ s, fake } = await suite.ready));

test('a refused provider address: nothing sent, the request unknown with the reason, the payout pending', async () => {
  const c = await suite.api('POST', '/v1/public/payouts', sbpBody(10_000));
  expectStatus(c, 201);
  const id = c.body.payout.id as string;
  await suite.pass();
  assert.equal(fake.received.length, 0, 'nothing reached the provider');
  const rows = await s.store.all<{ state: string; answer: string }>('SELECT state, answer FROM bank_requests WHERE subject_id = ?', id);
  assert.equal(rows[0].state, 'unknown');
  assert.match(rows[0].answer, /the provider address is refused/);
  assert.equal((await suite.api('GET', `/v1/public/payouts/${id}`)).body.status, 'pending');
  assert.ok(s.logs.some((l) => l.includes('YooKassa request not sent: the provider address is refused')));
});
