import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { openSse } from '../helpers/sse-client';
import { createPayment } from '../helpers/payments';
import { revokeKey } from '../../src/money/shops/store';
import { STREAM_TOKEN_TTL_S } from '../../src/platform/auth/stream-token';

// Real time is injected so expiry is tested by moving it, not by waiting.
let realNow = Date.now();
let s: TestServer;
before(async () => {
  s = await startTestServer({}, { realNow: () => realNow });
});
after(async () => {
  await s.close();
});

async function streamToken(key: string): Promise<{ token: string; expires_at: string; stream_url: string }> {
  const r = await s.request('POST', '/v1/public/events/token', { key });
  assert.equal(r.status, 201, r.text);
  return r.body;
}

function tokenPath(token: string): string {
  return `/v1/public/events?token=${encodeURIComponent(token)}`;
}

test('a stream token opens the key\'s event stream without the key, for any origin, and carries no key', async () => {
  const shop = await s.newShop();
  const t = await streamToken(shop.key);
  assert.match(t.token, /^est_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  assert.equal(Date.parse(t.expires_at), Math.floor(realNow / 1000) * 1000 + STREAM_TOKEN_TTL_S * 1000);
  assert.equal(t.stream_url, `${s.url}${tokenPath(t.token)}`);
  assert.ok(!t.stream_url.includes(shop.key) && !t.token.includes(shop.key.slice(8)), 'the key is nowhere in the URL');

  const sse = await openSse(s.url, null, undefined, new URL(t.stream_url).pathname + new URL(t.stream_url).search);
  try {
    assert.equal(sse.status, 200);
    assert.match(String(sse.headers['content-type']), /^text\/event-stream/);
    assert.equal(sse.headers['access-control-allow-origin'], '*');
    const c = await createPayment(s, { amount: 10000 }, shop.key);
    const other = await s.newShop();
    await createPayment(s, { amount: 20000 }, other.key);
    const [ev] = await sse.waitEvents(1);
    assert.equal(ev.event, 'payment.created');
    assert.equal(JSON.parse(ev.data!).payload.id, c.payment.id);
  } finally {
    sse.close();
  }
  // The token never reaches the log (the access log writes the path without its query).
  assert.ok(!s.logs.some((l) => l.includes(t.token)), 'token in the log');
});

test('the token opens nothing but the stream: other routes and the Authorization header refuse it', async () => {
  const shop = await s.newShop();
  const { token } = await streamToken(shop.key);
  const list = await s.request('GET', `/v1/public/payments?token=${encodeURIComponent(token)}`, { key: null });
  assert.equal(list.status, 401);
  const asBearer = await s.request('GET', '/v1/public/payments', { key: token });
  assert.equal(asBearer.status, 401);
  assert.equal(asBearer.body.error.message, 'Cannot authenticate: the API key is malformed');
  const mint = await s.request('POST', '/v1/public/events/token', { key: null, headers: { authorization: `Bearer ${token}` } });
  assert.equal(mint.status, 401);
});

test('a forged, altered, expired or revoked-key token is 401; a restart voids every token (SQLite; a cluster\'s nodes share theirs)', async () => {
  const shop = await s.newShop();
  const { token } = await streamToken(shop.key);
  const refuse = async (tok: string, message: RegExp) => {
    // A token taken by mistake opens a stream that never ends: the request fails in time instead of hanging.
    const r = await s.request('GET', tokenPath(tok), { key: null, timeoutMs: 10_000 });
    assert.equal(r.status, 401, tok);
    assert.equal(r.body.error.code, 'unauthorized');
    assert.match(r.body.error.message, message);
  };
  const [payload, sig] = token.slice(4).split('.');
  // Another key's id (or a later expiry) under the same signature is a forgery.
  const other = await s.newShop();
  const forged = Buffer.from(Buffer.from(payload, 'base64url').toString().replace(/^[^.]+/, other.keyId)).toString('base64url');
  await refuse(`est_${forged}.${sig}`, /not valid here/);
  const later = Buffer.from(Buffer.from(payload, 'base64url').toString().replace(/\d+$/, (n) => String(Number(n) + 3600))).toString('base64url');
  await refuse(`est_${later}.${sig}`, /not valid here/);
  // Alter the signature's first character: all six of its bits count. Overwriting the last characters (which
  // carry two unused bits) with a constant leaves a signature that already ends so (1 in 1024) valid, and its
  // stream open: the request would never end.
  await refuse(`est_${payload}.${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`, /not valid here/);
  // The same signature spelled otherwise: the last character's two unused bits flipped decode to the same bytes,
  // and only the spelling issued is taken.
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const respelled = sig.slice(0, -1) + ALPHABET[ALPHABET.indexOf(sig.at(-1)!) ^ 1];
  assert.ok(respelled !== sig && Buffer.from(respelled, 'base64url').equals(Buffer.from(sig, 'base64url')));
  await refuse(`est_${payload}.${respelled}`, /not valid here/);
  await refuse('est_nonsense', /malformed/);

  realNow += (STREAM_TOKEN_TTL_S - 1) * 1000;
  const sse = await openSse(s.url, null, undefined, tokenPath(token));
  assert.equal(sse.status, 200, 'valid until its expiry');
  sse.close();
  realNow += 1000;
  await refuse(token, /expired at .*; ask for a new one/);

  const fresh = (await streamToken(shop.key)).token;
  await revokeKey(s.store, shop.keyId, Date.now());
  await refuse(fresh, /key of the stream token is unknown or revoked/);

  const again = await s.newShop();
  const beforeRestart = (await streamToken(again.key)).token;
  await s.restart();
  if (s.store.engine === 'postgres') {
    // Nodes of a cluster sign with a secret derived from their shared master key: a token from before a restart
    // (or from another node) stays valid until it expires.
    const kept = await openSse(s.url, null, undefined, tokenPath(beforeRestart));
    assert.equal(kept.status, 200);
    kept.close();
  } else await refuse(beforeRestart, /not valid here/);
  const after = await openSse(s.url, null, undefined, tokenPath((await streamToken(again.key)).token));
  assert.equal(after.status, 200, 'a token issued after the restart works');
  after.close();
});
