import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../daemon/util/prng.js';
import { newSampleRates, ratesAt } from '../../../robot/math/divided-differences.js';

test('by hand: uneven times, exact for a cubic (v, a, j at the ends of the differences)', () => {
  // q = 2 + t − 3t² + 5t³ on t = 0, 0.1, 0.3, 0.35: f[t0,t1] = 1 − 3·0.1 + 5·0.01 = 0.75 …
  const t = [0, 0.1, 0.3, 0.35];
  const q = t.map((x) => 2 + x - 3 * x * x + 5 * x ** 3);
  const r = newSampleRates();
  ratesAt(t, q, 1, 0, 0, r);
  assert.ok(Number.isNaN(r.velocity) && Number.isNaN(r.acceleration) && Number.isNaN(r.jerk));
  ratesAt(t, q, 1, 0, 1, r);
  // f[0, 0.1] = 1 − 3(0 + 0.1) + 5(0 + 0 + 0.01) = 0.75.
  assert.ok(Math.abs(r.velocity - 0.75) < 1e-12 && Number.isNaN(r.acceleration), JSON.stringify(r));
  ratesAt(t, q, 1, 0, 2, r);
  // 2·f[0, 0.1, 0.3] = 2·(−3 + 5·(0 + 0.1 + 0.3)) = −2.
  assert.ok(Math.abs(r.acceleration + 2) < 1e-12 && Number.isNaN(r.jerk), JSON.stringify(r));
  ratesAt(t, q, 1, 0, 3, r);
  // 6·f[t0..t3] = 6·5 = 30 whatever the spacing; velocity f[0.3, 0.35], acceleration 2·(−3 + 5·0.75).
  assert.ok(Math.abs(r.jerk - 30) < 1e-9, JSON.stringify(r));
  assert.ok(Math.abs(r.acceleration - 2 * (-3 + 5 * 0.75)) < 1e-12);
  const v = (q[3] - q[2]) / 0.05;
  assert.ok(Math.abs(r.velocity - v) < 1e-12);
});

test('column j of row-major samples with a stride', () => {
  const t = [0, 1, 2, 3];
  const q = [0, 0, 1, 1, 2, 4, 3, 9]; // column 0 = t, column 1 = t²
  const r = ratesAt(t, q, 2, 1, 3, newSampleRates());
  assert.deepEqual([r.velocity, r.acceleration, r.jerk], [5, 2, 0]);
  ratesAt(t, q, 2, 0, 3, r);
  assert.deepEqual([r.velocity, r.acceleration, r.jerk], [1, 0, 0]);
});

test('property (seed 71, 300 curves): never above the true peak of |v|, |a|, |j| over the span', () => {
  const rng = new Prng(71);
  const r = newSampleRates();
  for (let c = 0; c < 300; c++) {
    const A = rng.uniform(0.1, 2), w = rng.uniform(0.5, 8), ph = rng.uniform(0, 6.3);
    const t = [0];
    for (let k = 1; k < 4; k++) t.push(t[k - 1] + rng.uniform(0.001, 0.2));
    const q = t.map((x) => A * Math.sin(w * x + ph));
    ratesAt(t, q, 1, 0, 3, r);
    // Peaks of |A w^n sin^(n)(w t + ph)| over [t0, t3], sampled finely (plus rounding slack).
    const peak = [0, 0, 0];
    for (let i = 0; i <= 2000; i++) {
      const x = w * (t[0] + ((t[3] - t[0]) * i) / 2000) + ph;
      peak[0] = Math.max(peak[0], Math.abs(A * w * Math.cos(x)));
      peak[1] = Math.max(peak[1], Math.abs(A * w * w * Math.sin(x)));
      peak[2] = Math.max(peak[2], Math.abs(A * w ** 3 * Math.cos(x)));
    }
    const what = `seed 71 curve ${c}: A ${A}, w ${w}, ph ${ph}, t ${t.join(',')}`;
    assert.ok(Math.abs(r.velocity) <= peak[0] * (1 + 1e-6) + 1e-9, `${what}: v ${r.velocity} > ${peak[0]}`);
    assert.ok(Math.abs(r.acceleration) <= peak[1] * (1 + 1e-6) + 1e-7, `${what}: a ${r.acceleration} > ${peak[1]}`);
    assert.ok(Math.abs(r.jerk) <= peak[2] * (1 + 1e-4) + 1e-3, `${what}: j ${r.jerk} > ${peak[2]}`);
  }
});
