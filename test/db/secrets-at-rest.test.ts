import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server';
import { runCli } from '../helpers/cli';
import { createShop, getShop } from '../../src/money/shops/store';
import { addEndpoint, validSecrets } from '../../src/money/webhooks/store';

let s: TestServer;
before(async () => {
  // A umask that would leave every new file readable by all: the database must not be.
  process.umask(0o022);
  s = await startTestServer();
});
after(() => s.close());

/** Every byte of the database, its WAL and its shared memory. */
function databaseBytes(): string {
  return readdirSync(s.dir)
    .filter((f) => /^kopek\.db(-wal|-shm)?$/.test(f))
    .map((f) => readFileSync(join(s.dir, f)).toString('latin1'))
    .join('');
}

/** Every row of the tables that hold shop and endpoint secrets, as text. */
async function secretRows(): Promise<string> {
  const rows = [
    ...(await s.store.all('SELECT * FROM shops')),
    ...(await s.store.all('SELECT * FROM webhook_secrets')),
    ...(await s.store.all('SELECT * FROM webhook_endpoints')),
  ];
  return JSON.stringify(rows);
}

test('world-readable secrets: the database, its WAL and backups are 0600, and no whs_ or thm_ secret is stored in clear', async () => {
  const shop = await createShop(s.store, s.demo.merchantId, 'Sealed shop', undefined, Date.now());
  const ep = await addEndpoint(s.store, { shopId: shop.id, url: 'https://receiver.example/hooks' }, Date.now());
  await s.request('POST', '/v1/public/payments', { body: { amount: 10_000 } });
  const pg = s.store.engine === 'postgres';
  // A SQLite file and its WAL are read as bytes; a PostgreSQL database as every row of the tables that hold secrets.
  if (!pg) {
    for (const f of ['kopek.db', 'kopek.db-wal', 'kopek.db-shm']) {
      assert.equal(statSync(join(s.dir, f)).mode & 0o777, 0o600, f);
    }
  }
  const bytes = pg ? await secretRows() : databaseBytes();
  for (const plain of [shop.signing_secret, shop.webhook_secret, ep.secret]) {
    assert.match(plain, /^(thm|whs)_/);
    assert.ok(!bytes.includes(plain), `${plain.slice(0, 8)}… is stored in clear`);
  }
  assert.ok(!/(?:whs|thm)_[A-Za-z0-9_-]{20}/.test(bytes), 'no secret of any shop in clear');
  // They stay usable: the code that signs and verifies reads them back.
  assert.equal((await getShop(s.store, shop.id))!.signing_secret, shop.signing_secret);
  assert.deepEqual(await validSecrets(s.store, ep.endpoint.id, Date.now()), [ep.secret]);
  if (pg) return; // a PostgreSQL database is backed up with PostgreSQL's own tools
  const copy = join(s.dir, 'copy.db');
  const b = await runCli(['backup', copy, '--db', s.dbPath]);
  assert.equal(b.code, 0, b.err);
  assert.equal(statSync(copy).mode & 0o777, 0o600);
  assert.ok(!readFileSync(copy).toString('latin1').includes(shop.webhook_secret));
});

test('secrets a database holds in clear (an older version) are sealed when the server starts, and still verify', async () => {
  const shop = await createShop(s.store, s.demo.merchantId, 'Legacy shop', undefined, Date.now());
  await s.store.write((tx) => tx.run('UPDATE shops SET signing_secret = ?, webhook_secret = ? WHERE id = ?', shop.signing_secret, shop.webhook_secret, shop.id));
  assert.equal((await getShop(s.store, shop.id))!.signing_secret, shop.signing_secret, 'a secret in clear still reads');
  await s.restart();
  const row = (await s.store.get<{ signing_secret: string; webhook_secret: string }>('SELECT signing_secret, webhook_secret FROM shops WHERE id = ?', shop.id))!;
  assert.match(row.signing_secret, /^enc:v1:/);
  assert.match(row.webhook_secret, /^enc:v1:/);
  assert.equal((await getShop(s.store, shop.id))!.signing_secret, shop.signing_secret);
});
