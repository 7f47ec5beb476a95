import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestResponse, type TestServer } from '../helpers/server';
import { fakeTime, type FakeTime } from '../helpers/fake-time';
import { makeUser, postLogin, TEST_PASSWORD } from '../helpers/cabinet';
import { LOCK_MS } from '../../src/web/cabinet/users';

// A slowed or locked sign-in answers 429 with Retry-After: the whole seconds, rounded up, that the lock or the
// wait still lasts on the server's clock, and the page says the same number. The clock is moved, never slept on.
// Run on both engines (the counters live in the database).

let s: TestServer;
let time: FakeTime;
before(async () => {
  time = fakeTime();
  s = await startTestServer({}, { realNow: time.now });
});
after(() => s.close());

/** The Retry-After of a 429 answer, checked against the seconds its page states. */
function retryAfter(r: TestResponse, what: string): number {
  assert.equal(r.status, 429, `${what}: ${r.status}`);
  const header = Number(r.headers['retry-after']);
  const stated = /role="alert">[^<]*?(\d+) (?:с|s)\.</.exec(r.text);
  assert.ok(stated, `${what}: the page states a time`);
  assert.equal(Number(stated[1]), header, `${what}: the page and Retry-After agree`);
  return header;
}

test('the lockout answered Retry-After: 1 while the lock lasted longer', async () => {
  const email = 'lockout@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const wrong = () => postLogin(s, { email, password: 'wrong password!' });
  const right = () => postLogin(s, { email, password: TEST_PASSWORD });
  for (let i = 0; i < 3; i++) assert.equal((await wrong()).status, 401);
  // Past the slowing (at most a minute between attempts) up to the tenth failure, which locks the email.
  for (let failures = 4; failures < 10; failures++) {
    time.advance(60_000);
    assert.equal((await wrong()).status, 401, `failure ${failures}`);
  }
  time.advance(60_000);
  const lockedAt = time.now();
  assert.equal(retryAfter(await wrong(), 'the locking attempt'), LOCK_MS / 1000);
  const expectAt = async (elapsed_ms: number, what: string): Promise<void> => {
    time.advance(lockedAt + elapsed_ms - time.now());
    const remaining_ms = LOCK_MS - elapsed_ms;
    assert.equal(retryAfter(await right(), what), Math.ceil(remaining_ms / 1000), `${what}: ${remaining_ms} ms remain`);
  };
  await expectAt(1, 'a millisecond in');
  await expectAt(300_000, 'five minutes in');
  await expectAt(300_500, 'half a second later');
  await expectAt(LOCK_MS - 61_000, 'a minute and a second before the end');
  await expectAt(LOCK_MS - 1500, 'a second and a half before the end');
  await expectAt(LOCK_MS - 1, 'a millisecond before the end');
  time.advance(1);
  assert.equal((await right()).status, 303, 'the lock is over when Retry-After said');
});

test('a slowed sign-in says the wait that is left, rounded up to whole seconds', async () => {
  const email = 'slowed@shop.example';
  await makeUser(s, s.demo.merchantId, email);
  const wrong = () => postLogin(s, { email, password: 'wrong password!' });
  for (let i = 0; i < 3; i++) assert.equal((await wrong()).status, 401);
  assert.equal(retryAfter(await wrong(), 'after three failures'), 1);
  time.advance(1000);
  assert.equal((await wrong()).status, 401, 'the fourth failure, once the wait is over');
  // The fourth failure asks for 2 s.
  assert.equal(retryAfter(await wrong(), 'at once'), 2);
  time.advance(500);
  assert.equal(retryAfter(await wrong(), 'after 0.5 s'), 2);
  time.advance(1000);
  assert.equal(retryAfter(await wrong(), 'after 1.5 s'), 1);
  time.advance(500);
  assert.equal((await wrong()).status, 401, 'after 2 s the next attempt is checked');
});
