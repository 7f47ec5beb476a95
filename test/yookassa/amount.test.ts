import { test } from 'node:test';
import assert from 'node:assert/strict';
import { kopecksOf, rublesOf } from '../../src/banks/yookassa/protocol';

// Kopecks ⇄ the provider's "rubles.kk" strings, exactly (string arithmetic, no floating point).

test('kopecks to rubles strings and back, exactly', () => {
  const cases: Array<[number, string]> = [
    [1, '0.01'],
    [10, '0.10'],
    [99, '0.99'],
    [100, '1.00'],
    [123456789, '1234567.89'],
    [10 ** 12, '10000000000.00'],
  ];
  for (const [k, s] of cases) {
    assert.equal(rublesOf(k), s);
    assert.equal(kopecksOf(s), k);
  }
});

test('the provider forms without two decimals read exactly; anything else is unreadable', () => {
  assert.equal(kopecksOf('1'), 100);
  assert.equal(kopecksOf('1.5'), 150);
  assert.equal(kopecksOf('0.07'), 7);
  for (const bad of ['', '1.001', '-1.00', '1e3', '01.00', ' 1.00', '1,00', 1.0, null, undefined, '99999999999999999.00']) {
    assert.equal(kopecksOf(bad), undefined, String(bad));
  }
  assert.throws(() => rublesOf(1.5));
  assert.throws(() => rublesOf(-1));
});
