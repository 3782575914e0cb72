import { test } from 'node:test';
import assert from 'node:assert/strict';
import { limitRatios, stretchFactor } from '../../../../robot/motion/timing/limit-ratios.js';

test('finite differences by hand: q = t³ at 0.1 s steps has third difference 6 and the right ratios', () => {
  const t = Float64Array.from({ length: 11 }, (_, k) => k / 10);
  const q = t.map((x) => x ** 3);
  // Largest: velocity on the last interval (1 − 0.729)/0.1 = 2.71 (differences ending at sample 10);
  // acceleration 2·f[0.8, 0.9, 1] = 2·(0.8 + 0.9 + 1) = 5.4;
  // jerk 6 everywhere. With limits v 1, a 2, j 3: r_v = 2.71, r_a = 2.7, r_j = 2.
  const r = limitRatios(t, q, 11, 1, [{ velocity: 1, acceleration: 2, jerk: 3 }]);
  assert.ok(
    Math.abs(r.velocity - 2.71) < 1e-9 && Math.abs(r.acceleration - 2.7) < 1e-9 && Math.abs(r.jerk - 2) < 1e-9,
    JSON.stringify(r),
  );
  assert.deepEqual([r.joint, r.sample], [0, 10]);
  assert.ok(Math.abs(stretchFactor(r) - 1.001 * 2.71) < 1e-9);
  // Within every limit: no stretch at all.
  assert.equal(stretchFactor(limitRatios(t, q, 11, 1, [{ velocity: 3, acceleration: 6, jerk: 7 }])), 1);
});
