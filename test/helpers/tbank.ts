import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer, type TestShop } from './server';
import { fakeTime, type FakeTime } from './fake-time';
import type { Config } from '../../src/platform/config';
import { putShopAcquirer } from '../../src/money/bank-port/store';
import { MasterKey } from '../../src/platform/secrets/at-rest';
import { tbankAcquirer } from '../../src/banks/tbank/settings';
import { FakeTBank } from '../tbank/fake-tbank';
import { settled } from './bank-requests';
export { settled } from './bank-requests';

/** The terminal every helper-made live shop uses at the shared fake T-Bank. */
export const HELPER_TERMINAL = { terminalKey: '1700000000HELPER', password: 'helper-terminal-password' };

let shared: Promise<FakeTBank> | null = null;

/** One fake T-Bank per test process, for tests that need a live shop but not the acquirer itself. */
export function sharedFakeTBank(): Promise<FakeTBank> {
  shared ??= new FakeTBank({ [HELPER_TERMINAL.terminalKey]: HELPER_TERMINAL.password }).start({ unref: true });
  return shared;
}

/** Give a shop a T-Bank acquirer at `apiUrl` (default: the shared fake), as `kopek shop acquirer` does. */
export async function giveTBankAcquirer(s: TestServer, shopId: string, t: { terminalKey: string; password: string; apiUrl?: string } = HELPER_TERMINAL): Promise<void> {
  const apiUrl = t.apiUrl ?? (await sharedFakeTBank()).apiUrl;
  const row = tbankAcquirer(new MasterKey(s.dbPath), shopId, { terminalKey: t.terminalKey, password: t.password, apiUrl }, Date.now());
  await s.store.write(async (tx) => putShopAcquirer(tx, row));
}

/** A live-enabled shop with a T-Bank acquirer (the merchant activated live mode). */
export async function liveTBankShop(s: TestServer, t?: { terminalKey: string; password: string; apiUrl?: string }): Promise<TestShop> {
  const sh = await s.newShop({ mode: 'live', acquirer: false });
  await giveTBankAcquirer(s, sh.shopId, t);
  await s.store.write(async (tx) => {
    await tx.run('UPDATE merchants SET live_enabled = 1 WHERE id = ?', sh.merchantId);
  });
  return sh;
}


/** What a T-Bank test file works with: its fake bank, server, live shop, and the real time it moves. */
export interface TBankSuite {
  time: FakeTime;
  s: TestServer;
  fake: FakeTBank;
  shop: TestShop;
  /** Move (fake) real time and run what became due, until every bank request it led to has its answer. */
  pass(seconds?: number): Promise<void>;
  /** GET with the shop's live key, asserting 200; the body. */
  get(path: string): Promise<any>;
  /** Resolves with the suite once its `before` made everything (node:test may start a file's own hooks meanwhile). */
  ready: Promise<TBankSuite>;
}

/**
 * A test file's own terminal at a fake T-Bank, a server whose real time the test moves, and a live shop
 * with that acquirer: made in a `before` and closed in an `after` that this registers.
 */
export function tbankSuite(terminal: { terminalKey: string; password: string }, config: Partial<Config> = {}): TBankSuite {
  const time = fakeTime();
  const suite = { time } as TBankSuite;
  let made!: (v: TBankSuite) => void;
  suite.ready = new Promise((r) => (made = r));
  before(async () => {
    suite.fake = await new FakeTBank({ [terminal.terminalKey]: terminal.password }).start();
    suite.s = await startTestServer({ acquirerSyncAfterSeconds: 60, ...config }, { realNow: time.now });
    suite.shop = await liveTBankShop(suite.s, { ...terminal, apiUrl: suite.fake.apiUrl });
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
  suite.get = async (path) => {
    const r = await suite.s.request('GET', path, { key: suite.shop.key });
    assert.equal(r.status, 200, r.text);
    return r.body;
  };
  return suite;
}
