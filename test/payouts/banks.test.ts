import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { SBP_BANKS } from '../../src/money/sbp/directory';

let s: TestServer;
before(async () => {
  s = await startTestServer();
});
after(() => s.close());

test('GET /v1/public/banks/sbp lists the bundled directory sorted by name in Russian collation, for any key', async () => {
  const k = await s.newKey(s.demo.shopId, 'test', '');
  const r = await s.request('GET', '/v1/public/banks/sbp', { key: k.key });
  assert.equal(r.status, 200);
  assert.ok(r.body.items.length >= 200);
  assert.equal(r.body.items.length, new Set(r.body.items.map((b: any) => b.member_id)).size);
  const names = r.body.items.map((b: any) => b.name);
  assert.deepEqual(names, [...names].sort(new Intl.Collator('ru').compare));
  assert.ok(r.body.items.every((b: any) => /^[0-9]{12}$/.test(b.member_id) && b.name && b.name_en));
  assert.deepEqual(r.body.items.find((b: any) => b.member_id === '100000000004'), { member_id: '100000000004', name: 'Т-Банк', name_en: 'T-Bank' });
  assert.equal(r.body.items.length, SBP_BANKS.length);
  assert.equal((await s.request('GET', '/v1/public/banks/sbp', { key: null })).status, 401);
});
