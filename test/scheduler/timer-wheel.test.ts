import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TimerWheel, type TimerHandle } from '../../src/scheduler/timer-wheel';

/** A wheel on a fake clock that starts at `start`. */
function fakeWheel(start = 1_700_000_000_000, opts: { tickMs?: number; wheelSize?: number } = {}) {
  const clock = { now: start };
  const wheel = new TimerWheel<string>({ now: () => clock.now, ...opts });
  const fired: Array<[string, number]> = [];
  const advanceTo = (t: number): void => {
    clock.now = t;
    wheel.advance((v, due) => fired.push([v, due]));
  };
  return { clock, wheel, fired, advanceTo };
}

test('fires each timer once its due time is reached, not before', () => {
  const { wheel, fired, advanceTo } = fakeWheel(1000);
  wheel.add(1010, 'a');
  wheel.add(1500, 'b');
  advanceTo(1009);
  assert.deepEqual(fired, []);
  advanceTo(1010);
  assert.deepEqual(fired, [['a', 1010]]);
  advanceTo(1499);
  assert.equal(fired.length, 1);
  advanceTo(1500);
  assert.deepEqual(fired.map((f) => f[0]), ['a', 'b']);
  assert.equal(wheel.size, 0);
});

test('fires in due order across levels, including timers days away', () => {
  const { wheel, fired, advanceTo } = fakeWheel(0, { wheelSize: 8 });
  const dues = [5, 3, 70, 64, 9, 600, 100_000, 86_400_000 * 3, 1, 2, 63];
  for (const d of dues) wheel.add(d, String(d));
  // Step through time in uneven strides, as a real timer would wake.
  for (let t = 0; t <= 86_400_000 * 3; t += t < 1000 ? 7 : 3_600_000) advanceTo(t);
  advanceTo(86_400_000 * 3);
  assert.deepEqual(fired.map((f) => f[1]), [...dues].sort((a, b) => a - b));
});

test('nextDue points at the earliest bucket, so one timer can sleep until then', () => {
  const { wheel, advanceTo, fired } = fakeWheel(0, { wheelSize: 4 });
  assert.equal(wheel.nextDue(), Infinity);
  wheel.add(1000, 'x');
  const first = wheel.nextDue();
  assert.ok(first > 0 && first <= 1000, `nextDue ${first}`);
  // Waking at each nextDue reaches the timer in a few wakes (one per level), never by ticking every ms.
  let wakes = 0;
  while (fired.length === 0 && wakes < 20) {
    advanceTo(wheel.nextDue());
    wakes++;
  }
  assert.deepEqual(fired, [['x', 1000]]);
  assert.ok(wakes <= 5, `took ${wakes} wakes`);
});

test('cancel removes a timer in O(1) and reports whether it was still pending', () => {
  const { wheel, fired, advanceTo } = fakeWheel(0);
  const a = wheel.add(10, 'a');
  const b = wheel.add(10, 'b');
  const c = wheel.add(10, 'c');
  assert.equal(wheel.cancel(b), true);
  assert.equal(wheel.cancel(b), false);
  assert.equal(wheel.size, 2);
  advanceTo(10);
  assert.deepEqual(fired.map((f) => f[0]), ['a', 'c']);
  assert.equal(wheel.cancel(a), false, 'a fired timer cannot be cancelled');
  void c;
});

test('a bucket emptied by cancels does not wake the owner', () => {
  const { wheel } = fakeWheel(0);
  const e = wheel.add(50, 'gone');
  wheel.add(400, 'kept');
  wheel.cancel(e);
  assert.equal(wheel.nextDue(), 400);
});

test('a timer added in the past fires on the next advance, before later ones', () => {
  const { wheel, fired, advanceTo } = fakeWheel(5000);
  wheel.add(5001, 'later');
  wheel.add(10, 'past');
  assert.equal(wheel.nextDue(), 5000);
  advanceTo(5001);
  assert.deepEqual(fired.map((f) => f[0]), ['past', 'later']);
});

test('timers added by a firing callback that are already due fire in the same advance', () => {
  const clock = { now: 0 };
  const wheel = new TimerWheel<number>({ now: () => clock.now });
  const seen: number[] = [];
  wheel.add(10, 1);
  clock.now = 100;
  wheel.advance((v) => {
    seen.push(v);
    if (v < 3) wheel.add(10 + v, v + 1);
  });
  assert.deepEqual(seen, [1, 2, 3]);
});

test('matches a sorted list on 5,000 random timers with random cancels (tick 1 and tick 10)', () => {
  for (const tickMs of [1, 10]) {
    let seed = 42;
    const rnd = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed % n;
    };
    const { wheel, fired, advanceTo } = fakeWheel(0, { tickMs, wheelSize: 16 });
    const entries: TimerHandle[] = [];
    const expected = new Map<string, number>();
    for (let i = 0; i < 5000; i++) {
      const due = rnd(2_000_000);
      entries.push(wheel.add(due, `t${i}`));
      expected.set(`t${i}`, due);
    }
    for (let i = 0; i < 1000; i++) {
      const k = rnd(5000);
      if (wheel.cancel(entries[k])) expected.delete(`t${k}`);
    }
    let now = 0;
    while (wheel.size > 0) {
      now = Math.max(now + 1, Math.min(wheel.nextDue(), now + rnd(50_000)));
      advanceTo(now);
      for (const [v, due] of fired.splice(0)) {
        const want = expected.get(v)!;
        assert.ok(due >= want && due < want + tickMs, `timer ${v} due ${want} reported due ${due}`);
        assert.ok(want <= now, `timer ${v} due ${want} fired early at ${now}`);
        assert.ok(now - want < 50_000 + tickMs, `timer ${v} due ${want} fired late at ${now}`);
        expected.delete(v);
      }
    }
    assert.equal(expected.size, 0, `never fired: ${[...expected.keys()].slice(0, 5).join(', ')}`);
  }
});
