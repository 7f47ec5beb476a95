import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server';
import { createPayment, getPage, getPayment, postForm } from '../helpers/pay-page';
import { liveTBankShop } from '../helpers/tbank';

// Regressions: the buyer's "Cancel payment" was a one-click POST right under "Other ways to pay"; now it leads
// to a confirmation step and only that step's "Yes, cancel" (confirm=yes) cancels. A card payment took three
// clicks to reach the card form (Bank card → Continue → form); a test card payment now shows the form on its
// first screen and the form's POST opens the session and pays.

let s: TestServer;
before(async () => {
  // The test bank never answers on its own: only the buyer's forms move a payment.
  s = await startTestServer({ simDelaySeconds: 3600 });
});
after(() => s.close());

const EXP = '12/' + String(new Date().getUTCFullYear() + 2).slice(2);
const CARD = { number: '4111 1111 1111 1111', exp: EXP, cvc: '123' };

/** Every POST form of a page, by its action. */
function postActions(html: string): string[] {
  return [...html.matchAll(/<form method="post" action="([^"]+)"/g)].map((m) => m[1]);
}

test('a POST /pay/{id}/cancel without the confirmation cancels nothing: it leads to the "Yes, cancel" step', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  const unconfirmed: Array<Record<string, string>> = [{}, { confirm: 'no' }, { confirm: '' }];
  for (const fields of unconfirmed) {
    const r = await postForm(s, `/pay/${id}/cancel?lang=en`, fields);
    assert.equal(r.status, 303, JSON.stringify(fields));
    assert.equal(r.headers.location, `/pay/${id}?cancel=ask&lang=en`);
    assert.equal((await getPayment(s, id)).status, 'pending', `${JSON.stringify(fields)} cancelled the payment`);
  }
  const step = await getPage(s, `/pay/${id}?cancel=ask&lang=en`);
  assert.equal(step.status, 200);
  assert.match(step.text, /<h2>Cancel this payment\?<\/h2>/);
  assert.match(step.text, new RegExp(`<form method="post" action="/pay/${id}/cancel\\?lang=en">\\s*<input type="hidden" name="confirm" value="yes">\\s*<button class="btn danger" type="submit">Yes, cancel</button>`));
  assert.match(step.text, new RegExp(`<a class="btn secondary" href="/pay/${id}\\?lang=en">Back</a>`));
  assert.equal((await getPayment(s, id)).status, 'pending', 'showing the step changed nothing');
  const yes = await postForm(s, `/pay/${id}/cancel?lang=en`, { confirm: 'yes' });
  assert.equal(yes.status, 303);
  assert.equal((await getPayment(s, id)).status, 'cancelled');
  assert.match((await getPage(s, `/pay/${id}?lang=en`)).text, /data-final="cancelled"[\s\S]*Payment cancelled/);
  // Once final, the step is not offered again and a late POST changes nothing.
  assert.doesNotMatch((await getPage(s, `/pay/${id}?cancel=ask&lang=en`)).text, /Yes, cancel/);
  assert.equal((await postForm(s, `/pay/${id}/cancel`, {})).status, 303);
});

test('no screen of a pending payment cancels in one click: each "Cancel payment" is a link to the step, whose Back returns to that screen', async () => {
  const any = await createPayment(s, { amount: 10000 });
  const fixed = await createPayment(s, { amount: 10000, method: 'sbp' });
  const screens: Array<[string, string, string]> = [
    [`/pay/${any.id}?lang=en`, 'any', 'Choose how to pay'],
    [`/pay/${any.id}?method=sbp&lang=en`, 'sbp', 'Pay by SBP'],
    [`/pay/${any.id}?method=cards&lang=en`, 'cards', 'Pay by card'],
    [`/pay/${fixed.id}?lang=en`, 'sbp', 'Pay by SBP'],
  ];
  for (const [path, from, heading] of screens) {
    const id = path.split('/')[2].split('?')[0];
    const r = await getPage(s, path);
    assert.ok(!postActions(r.text).some((a) => a.includes('/cancel')), `${path} has a cancel form`);
    const link = new RegExp(`<a class="btn quiet" href="(/pay/${id}\\?method=${from}&amp;cancel=ask&amp;lang=en)">Cancel payment</a>`).exec(r.text);
    assert.ok(link, `${path}: the link to the confirmation step`);
    const step = await getPage(s, link[1].replace(/&amp;/g, '&'));
    assert.match(step.text, /Cancel this payment\?/);
    const back = /<a class="btn secondary" href="([^"]+)">Back<\/a>/.exec(step.text)!;
    assert.match((await getPage(s, back[1].replace(/&amp;/g, '&'))).text, new RegExp(`<h2>${heading}</h2>`), `Back from ${path}`);
  }
  assert.equal((await getPayment(s, any.id)).status, 'pending');
  assert.equal((await getPayment(s, fixed.id)).status, 'pending');
});

test('the confirmation step speaks Russian by default and English on request; the language switch keeps the step', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  const ru = await getPage(s, `/pay/${id}?method=cards&cancel=ask`);
  assert.match(ru.text, /<html lang="ru">[\s\S]*<h2>Отказаться от оплаты\?<\/h2>[\s\S]*Да, отказаться[\s\S]*>Назад<\/a>/);
  assert.match(ru.text, new RegExp(`href="/pay/${id}\\?method=cards&amp;cancel=ask&amp;lang=en" lang="en" hreflang="en">English</a>`));
  const en = await getPage(s, `/pay/${id}?method=cards&cancel=ask&lang=en`);
  assert.match(en.text, /<html lang="en">[\s\S]*Cancel this payment\?[\s\S]*Yes, cancel/);
  assert.match(en.text, new RegExp(`<a class="btn secondary" href="/pay/${id}\\?method=cards&amp;lang=en">Back</a>`));
  // A value the page does not know is dropped, not echoed into its links.
  const odd = await getPage(s, `/pay/${id}?method=%22%3E&cancel=ask&lang=en`);
  assert.match(odd.text, new RegExp(`<a class="btn secondary" href="/pay/${id}\\?lang=en">Back</a>`));
});

test('a card payment shows the card form on its first screen; a card that passes opens the session and pays in the one POST', async () => {
  const { id } = await createPayment(s, { amount: 10000, method: 'cards' });
  const first = await getPage(s, `/pay/${id}?lang=en`);
  assert.match(first.text, /<h2>Pay by card<\/h2>[\s\S]*<form id="card-form" method="post" action="\/pay\/[^"]+\/card\?lang=en"/);
  assert.doesNotMatch(first.text, />Continue</, 'no extra step before the form');
  assert.doesNotMatch(first.text, /Other ways to pay/, 'the method was fixed');
  assert.match(first.text, /Test cards/, 'the test controls are there');
  assert.equal((await getPayment(s, id)).status, 'pending', 'showing the form opened nothing');
  const r = await postForm(s, `/pay/${id}/card?lang=en`, { ...CARD, holder: 'Ivan Petrov' });
  assert.equal(r.status, 303);
  const p = await getPayment(s, id);
  assert.deepEqual([p.status, p.method, p.customer_card_mask, p.customer_card_holder], ['succeeded', 'cards', '411111******1111', 'IVAN PETROV']);
});

test('a card that fails the checks on the first screen opens no session: the form comes back with the reasons and the ways off it', async () => {
  const { id } = await createPayment(s, { amount: 10000 });
  const form = await getPage(s, `/pay/${id}?method=cards&lang=en`);
  assert.match(form.text, /id="card-form"[\s\S]*Other ways to pay[\s\S]*Cancel payment/, '"Bank card" on an any payment shows the form at once');
  const r = await postForm(s, `/pay/${id}/card?lang=en`, { ...CARD, number: '4111 1111 1111 1112' });
  assert.equal(r.status, 400);
  assert.match(r.text, /Check the card number: it has a typo[\s\S]*Other ways to pay[\s\S]*Cancel payment/);
  const p = await getPayment(s, id);
  assert.deepEqual([p.status, p.method, p.processing_until], ['pending', 'any', null]);
  // The test card that asks for 3-D Secure: the session opens, the challenge follows, the code pays.
  assert.equal((await postForm(s, `/pay/${id}/card?lang=en`, { ...CARD, number: '2200000000000038' })).status, 303);
  assert.equal((await getPayment(s, id)).status, 'processing');
  assert.match((await getPage(s, `/pay/${id}?lang=en`)).text, /3-D Secure check/);
  assert.equal((await postForm(s, `/pay/${id}/3ds?lang=en`, { code: '123456' })).status, 303);
  assert.equal((await getPayment(s, id)).status, 'succeeded');
});

test('a card form posted for a payment fixed to another method, or for a live one, reads nothing and changes nothing', async () => {
  const sbp = await createPayment(s, { amount: 10000, method: 'sbp' });
  assert.equal((await postForm(s, `/pay/${sbp.id}/card`, CARD)).status, 303);
  const p = await getPayment(s, sbp.id);
  assert.deepEqual([p.status, p.method], ['pending', 'sbp']);

  const live = await liveTBankShop(s);
  const lp = await createPayment(s, { amount: 10000, method: 'cards' }, live.key);
  const page = await getPage(s, `/pay/${lp.id}?lang=en`);
  assert.doesNotMatch(page.text, /id="card-form"/, "a live buyer enters the card on the acquirer's page");
  assert.match(page.text, /name="method" value="cards">Continue<\/button>/);
  assert.equal((await postForm(s, `/pay/${lp.id}/card`, CARD)).status, 303);
  assert.equal((await getPayment(s, lp.id, live.key)).status, 'pending');
});
