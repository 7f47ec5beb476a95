import { t, type Lang, type TextKey } from './i18n';

// The page's plain script, under the response's CSP nonce; each part acts only when its element is present: the status poller
// (`data-poll`), the redirect timer (`data-redirect`), the card checks (as plan.ts checkCard) and the test card buttons.
const CLIENT = `
var b = document.body;
if (b.dataset.poll) {
  var started = Date.now(), delay = 1000;
  var tick = function () {
    fetch(b.dataset.poll, { cache: 'no-store', credentials: 'omit' }).then(function (r) { return r.ok ? r.json() : null; }).then(function (s) {
      if (s && (s.final || s.status !== b.dataset.status || s.step !== b.dataset.step)) { location.replace(b.dataset.next); return; }
      delay = 1000; next();
    }, function () { delay = Math.min(delay * 2, 10000); next(); });
  };
  var next = function () { if (Date.now() - started < 3600000) setTimeout(tick, delay); };
  next();
}
if (b.dataset.redirect) setTimeout(function () { location.replace(b.dataset.redirect); }, Number(b.dataset.redirectMs || 0));
var f = document.getElementById('card-form');
if (f) {
  var num = f.elements.number, exp = f.elements.exp, cvc = f.elements.cvc, holder = f.elements.holder;
  var digits = function (s) { return s.replace(/[\\s-]/g, ''); };
  var isAmex = function (d) { return /^3[47]/.test(d); };
  var luhn = function (d) {
    var sum = 0, dbl = false;
    for (var i = d.length - 1; i >= 0; i--) { var x = +d[i]; if (dbl) { x *= 2; if (x > 9) x -= 9; } sum += x; dbl = !dbl; }
    return sum % 10 === 0;
  };
  var rules = {
    number: function () { var d = digits(num.value); return !/^\\d{15,19}$/.test(d) ? 'card_number_length' : !luhn(d) ? 'card_number_luhn' : ''; },
    exp: function () {
      var m = /^\\s*(\\d{2})\\s*\\/\\s*(\\d{2}|\\d{4})\\s*$/.exec(exp.value);
      if (!m || +m[1] < 1 || +m[1] > 12) return 'card_exp_format';
      var y = m[2].length === 2 ? 2000 + +m[2] : +m[2];
      return Date.UTC(y, +m[1], 1) <= Date.now() ? 'card_exp_past' : '';
    },
    cvc: function () { var n = isAmex(digits(num.value)) ? 4 : 3; return new RegExp('^\\\\d{' + n + '}$').test(cvc.value.trim()) ? '' : 'card_cvc_' + n; },
    holder: function () { var h = holder.value.trim(); return h.length > 64 || !/^[A-Za-z .'-]*$/.test(h) ? 'card_holder_invalid' : ''; }
  };
  var show = function (name) {
    var reason = rules[name](), input = f.elements[name], out = document.getElementById(name + '-err');
    out.textContent = reason ? M[reason] : '';
    if (reason) input.setAttribute('aria-invalid', 'true'); else input.removeAttribute('aria-invalid');
    return reason;
  };
  num.addEventListener('input', function () {
    var d = digits(num.value).replace(/\\D/g, '').slice(0, 19), out = '';
    var groups = isAmex(d) ? [4, 6, 5] : [4, 4, 4, 4, 3];
    for (var i = 0, at = 0; i < groups.length && at < d.length; i++) { out += (i ? ' ' : '') + d.slice(at, at + groups[i]); at += groups[i]; }
    num.value = out;
  });
  exp.addEventListener('input', function (e) {
    var d = exp.value.replace(/\\D/g, '').slice(0, 4);
    exp.value = d.length > 2 || (d.length === 2 && e.inputType !== 'deleteContentBackward') ? d.slice(0, 2) + '/' + d.slice(2) : d;
  });
  // Errors clear while typing, not on blur: a message vanishing on blur would move the button under the pointer.
  ['number', 'exp', 'cvc', 'holder'].forEach(function (n) {
    var el = f.elements[n];
    el.addEventListener('blur', function () { if (el.value) show(n); });
    el.addEventListener('input', function () { if (el.getAttribute('aria-invalid')) show(n); });
  });
  f.addEventListener('submit', function (e) {
    var first = null;
    ['number', 'exp', 'cvc', 'holder'].forEach(function (n) { if (show(n) && !first) first = f.elements[n]; });
    if (first) { e.preventDefault(); first.focus(); }
  });
  document.querySelectorAll('[data-card]').forEach(function (btn) {
    btn.addEventListener('click', function () {
      num.value = btn.dataset.card; num.dispatchEvent(new Event('input'));
      if (!exp.value) exp.value = '12/' + String(new Date().getFullYear() + 3).slice(2);
      if (!cvc.value) cvc.value = isAmex(btn.dataset.card) ? '1234' : '123';
      ['number', 'exp', 'cvc'].forEach(show);
      f.querySelector('button[type=submit]').focus();
    });
  });
}
`;

const MESSAGES: TextKey[] = ['card_number_length', 'card_number_luhn', 'card_exp_format', 'card_exp_past', 'card_cvc_3', 'card_cvc_4', 'card_holder_invalid'];

/** The client script with its messages in `lang`; safe to inline (no `</script>` can occur). */
export function clientScript(lang: Lang): string {
  const m: Record<string, string> = {};
  for (const k of MESSAGES) m[k] = t(lang, k);
  const json = JSON.stringify(m).replace(/</g, '\\u003c');
  return `(function (M) {${CLIENT}})(${json});`;
}
