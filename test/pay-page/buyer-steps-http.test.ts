import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, getPage, getPayment, postForm } from '../helpers/pay-page';

// The buyer's steps on the hosted page as a browser sends them: what the page shows of a payment, how a method
// is chosen and changed before the session opens, and which forms are refused because another site sent them.

let s: TestServer;
before(async () => {
  s = await startTestServer({ simDelaySeconds: 3600 });
});
after(() => s.close());

test('the page shows the payment\'s description, escaped (the buyer never saw "Teapot, cast iron")', async () => {
  const { id } = await createPayment(s, { amount: 459000, description: 'Teapot, cast iron <b>&</b>' });
  const r = await getPage(s, `/pay/${id}`);
  assert.match(r.text, /<p class="desc">Teapot, cast iron &lt;b&gt;&amp;&lt;\/b&gt;<\/p>/);
  const none = await createPayment(s, { amount: 100 });
  assert.doesNotMatch((await getPage(s, `/pay/${none.id}`)).text, /class="desc"/, 'no empty line without a description');
});

test('a fixed method shows its pay step ("Pay by SBP"; a card payment its card form), not a method list of one, and no way to another method', async () => {
  for (const [method, heading] of [['sbp', 'Pay by SBP'], ['cards', 'Pay by card'], ['tpay', 'Pay with T-Pay'], ['bankpay', 'Pay from a bank wallet']]) {
    const { id } = await createPayment(s, { amount: 10000, method });
    const r = await getPage(s, `/pay/${id}?lang=en`);
    const button = method === 'cards' ? '<form id="card-form"' : `name="method" value="${method}">Continue</button>`;
    assert.match(r.text, new RegExp(`<h2>${heading}</h2>[\\s\\S]*${button}`), method);
    assert.doesNotMatch(r.text, /class="methods"|Choose how to pay|Other ways to pay/, method);
    // Asking for another method in the address changes neither the screen nor the payment.
    assert.match((await getPage(s, `/pay/${id}?lang=en&method=any`)).text, new RegExp(`<h2>${heading}</h2>`));
    assert.equal((await getPayment(s, id)).status, 'pending');
  }
});

test('after choosing a method the buyer can go back to the others while no session is open (there was no way back)', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  const list = await getPage(s, `/pay/${id}?lang=en`);
  assert.match(list.text, /<form method="get" action="\/pay\/[^"]+">[\s\S]*value="sbp"[\s\S]*value="cards"/, 'choosing is a GET');
  const step = await getPage(s, `/pay/${id}?lang=en&method=cards`);
  assert.match(step.text, /<h2>Pay by card<\/h2>/);
  assert.match(step.text, new RegExp(`href="/pay/${id}\\?method=any&amp;lang=en">Other ways to pay</a>`));
  assert.match((await getPage(s, `/pay/${id}?lang=en&method=any`)).text, /Choose how to pay/);
  assert.deepEqual([(await getPayment(s, id)).status, (await getPayment(s, id)).method], ['pending', 'any'], 'looking at steps changed nothing');
  // A method chosen through the API (pending, not fixed) is shown as its pay step, with the way back too.
  const chosen = await createPayment(s, { amount: 10000 });
  assert.equal((await s.request('POST', `/v1/test/payments/${chosen.id}/simulate`, { body: { action: 'choose_method', method: 'cards' } })).status, 200);
  const shown = await getPage(s, `/pay/${chosen.id}?lang=en`);
  assert.match(shown.text, /<h2>Pay by card<\/h2>[\s\S]*Other ways to pay/);
  assert.equal((await postForm(s, `/pay/${chosen.id}/method`, { method: 'sbp' })).status, 303);
  const p = await getPayment(s, chosen.id);
  assert.deepEqual([p.status, p.method], ['processing', 'sbp'], 'the buyer switched to SBP and its session opened');
});

test('a form another site sends to the hosted page (POST /pay/{id}/cancel auto-submitted) is refused with a page and changes nothing', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  const foreign: Array<Record<string, string>> = [
    { origin: 'https://evil.example' },
    { origin: 'http://127.0.0.1:1' },
    { 'sec-fetch-site': 'cross-site' },
    { 'sec-fetch-site': 'same-site', origin: s.url },
  ];
  for (const path of ['cancel', 'method', 'card', '3ds', 'bank']) {
    for (const headers of foreign) {
      const r = await postForm(s, `/pay/${id}/${path}?lang=en`, { method: 'sbp', action: 'approve', code: '123456' }, headers);
      assert.equal(r.status, 403, `${path} ${JSON.stringify(headers)}`);
      assert.match(String(r.headers['content-type']), /^text\/html/);
      assert.match(r.text, /This form came from another site[\s\S]*Nothing was changed[\s\S]*Open the payment page/);
    }
  }
  const p = await getPayment(s, id);
  assert.deepEqual([p.status, p.method], ['pending', 'any']);
  // The page's own forms: Sec-Fetch-Site same-origin (its Origin is "null" under no-referrer), or the server's own Origin.
  assert.equal((await postForm(s, `/pay/${id}/method`, { method: 'cards' }, { 'sec-fetch-site': 'same-origin', origin: 'null' })).status, 303);
  assert.equal((await getPayment(s, id)).status, 'processing');
  const other = await createPayment(s, { amount: 10000 });
  assert.equal((await postForm(s, `/pay/${other.id}/cancel`, { confirm: 'yes' }, { origin: s.url })).status, 303);
  assert.equal((await getPayment(s, other.id)).status, 'cancelled');
});
