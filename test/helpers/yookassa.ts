import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from './server';
import { fakeTime, type FakeTime } from './fake-time';
import type { Config } from '../../src/platform/config';
import { putShopPayoutProvider } from '../../src/money/bank-port/store';
import { post } from '../../src/money/ledger/ledger';
import { MasterKey } from '../../src/platform/secrets/at-rest';
import { secretLabel } from '../../src/banks/yookassa/settings';
import { FakeYookassa } from './fake-yookassa';
import { settled } from './bank-requests';
export { settled } from './bank-requests';

export { FakeYookassa } from './fake-yookassa';
export type { Behaviour, FakePayout } from './fake-yookassa';

/** Give a shop YooKassa as its payout provider, the secret sealed, as `kopek shop payouts` does. */
export async function giveYookassa(s: TestServer, shopId: string, g: { agentId: string; secret: string; apiUrl: string }): Promise<void> {
  const secret = new MasterKey(s.dbPath).encrypt(g.secret, secretLabel(shopId));
  await s.store.write(async (tx) => putShopPayoutProvider(tx, { shop_id: shopId, provider: 'yookassa', agent_id: g.agentId, secret, api_url: g.apiUrl }, Date.now()));
}

let funding = 0;

/** Put `amount` into a live shop's available balance (a payment the acquirer settled, as the ledger books it). */
export async function fundLive(s: TestServer, shop: TestShop, amount: number): Promise<void> {
  funding++;
  await s.store.write(async (tx) => {
    await post(tx, { merchantId: shop.merchantId, shopId: shop.shopId, mode: 'live' }, 'payment_succeeded', `funding-${funding}`, amount, Date.now(), 1_000_000_000 + funding);
  });
}


/** What a YooKassa test file works with: its fake provider, server, live shop, and the real time it moves. */
export interface YookassaSuite {
  time: FakeTime;
  s: TestServer;
  fake: FakeYookassa;
  shop: TestShop;
  gateway: { agentId: string; secret: string };
  /** Move (fake) real time and run what became due, until every request it led to has its answer. */
  pass(seconds?: number): Promise<void>;
  /** A request with the shop's live key. */
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }>;
  /** Resolves with the suite once its `before` made everything. */
  ready: Promise<YookassaSuite>;
}

/**
 * A test file's own fake YooKassa, a server whose real time the test moves, and a live shop (live enabled, no
 * acquirer) whose payout provider is the fake, funded with `funds`: made in a `before`, closed in an `after`.
 */
export function yookassaSuite(config: Partial<Config> = {}, funds = 100_000_000): YookassaSuite {
  const time = fakeTime();
  const suite = { time, gateway: { agentId: '505050', secret: 'live_sEcReT-yookassa-key-7f3a' } } as YookassaSuite;
  let made!: (v: YookassaSuite) => void;
  suite.ready = new Promise((r) => (made = r));
  before(async () => {
    suite.fake = await new FakeYookassa(suite.gateway.agentId, suite.gateway.secret).start();
    suite.s = await startTestServer({ acquirerSyncAfterSeconds: 60, ...config }, { realNow: time.now });
    const sh = await suite.s.newShop({ mode: 'live', acquirer: false });
    await giveYookassa(suite.s, sh.shopId, { ...suite.gateway, apiUrl: suite.fake.apiUrl });
    await suite.s.store.write(async (tx) => {
      await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', sh.merchantId);
    });
    await fundLive(suite.s, sh, funds);
    suite.shop = sh;
    suite.fake.notifyUrl = `${suite.s.url}/v1/callbacks/yookassa/${sh.shopId}`;
    made(suite);
  });
  after(async () => {
    await suite.s.close();
    await suite.fake.close();
  });
  suite.pass = async (seconds = 0) => {
    time.advance(seconds * 1000);
    await settled(suite.s);
  };
  suite.api = async (method, path, body) => {
    const r = await suite.s.request(method, path, { key: suite.shop.key, body });
    return { status: r.status, body: r.body, text: r.text };
  };
  return suite;
}

/** Assert a response status, showing the body when it differs. */
export function expectStatus(r: { status: number; text: string }, status: number): void {
  assert.equal(r.status, status, r.text);
}
