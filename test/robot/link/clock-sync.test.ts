import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClockSync } from '../../../robot/link/clock-sync.js';
import { Prng } from '../../../robot/common/prng.js';

test('symmetric round trip recovers the offset exactly (hand-computed)', () => {
  // Controller clock = daemon + 100. Heartbeat leaves at 10, 5 ms each way, 2 ms in the controller.
  const c = new ClockSync();
  assert.equal(c.estimate(10), null);
  assert.ok(c.addRoundTrip(10, 110.005, 110.007, 10.012));
  const e = c.estimate(10.012)!;
  assert.ok(Math.abs(e.offset - 100) < 1e-9);
  assert.ok(Math.abs(e.uncertainty! - 0.005) < 1e-9);
  assert.equal(e.source, 'round_trip');
});

test('asymmetric delays: error within delay/2, best sample wins (seeded property, 500 cases)', () => {
  const r = new Prng(21);
  for (let k = 0; k < 500; k++) {
    const offset = r.uniform(-1e6, 1e6);
    const c = new ClockSync(30);
    let best = Infinity;
    let t = r.uniform(0, 1000);
    for (let i = 0; i < 20; i++) {
      const up = r.uniform(0, 0.05);
      const down = r.uniform(0, 0.05);
      const hold = r.uniform(0, 0.01);
      const t1 = t;
      const t2 = t1 + up + offset;
      const t3 = t2 + hold;
      const t4 = t1 + up + hold + down;
      c.addRoundTrip(t1, t2, t3, t4);
      best = Math.min(best, up + down);
      t = t4 + 0.1;
    }
    const e = c.estimate(t)!;
    assert.ok(
      Math.abs(e.offset - offset) <= e.uncertainty! + 1e-6,
      `case ${k} (seed 21): error ${e.offset - offset} > ${e.uncertainty}`,
    );
    assert.ok(
      Math.abs(e.uncertainty! - best / 2) < 1e-6,
      `case ${k}: uncertainty ${e.uncertainty} vs best ${best / 2}`,
    );
  }
});

test('one-way samples: largest controller − daemon, biased by the least delay; old samples expire', () => {
  const c = new ClockSync(10);
  c.addOneWay(104.97, 5); // offset 100, delays 30, 10, 20 ms
  c.addOneWay(105.99, 6);
  c.addOneWay(106.98, 7);
  const e = c.estimate(7)!;
  assert.equal(e.source, 'one_way');
  assert.equal(e.uncertainty, null);
  assert.ok(Math.abs(e.offset - 99.99) < 1e-9, `${e.offset}`);
  assert.equal(c.estimate(30), null);
  c.addRoundTrip(40, 140.01, 140.01, 40.02);
  assert.equal(c.estimate(40.02)!.source, 'round_trip');
  c.reset();
  assert.equal(c.estimate(40.02), null);
});

test('inconsistent round trips are refused', () => {
  const c = new ClockSync();
  assert.equal(c.addRoundTrip(10, 5, 4, 11), false);
  assert.equal(c.addRoundTrip(10, 5, 6, 9), false);
  assert.equal(c.addRoundTrip(10, 5, 7, 10.5), false);
  assert.equal(c.addRoundTrip(Number.NaN, 5, 6, 11), false);
  assert.equal(c.estimate(11), null);
});
