import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { columnRates, newColumnRates } from '../../../robot/math/divided-differences.js';

test('by hand: uneven times, exact for a cubic (v, a, j at the ends of the differences)', () => {
  // q = 2 + t − 3t² + 5t³ on t = 0, 0.1, 0.3, 0.35: f[t0,t1] = 1 − 3·0.1 + 5·0.01 = 0.75 …
  const t = [0, 0.1, 0.3, 0.35];
  const q = t.map((x) => 2 + x - 3 * x * x + 5 * x ** 3);
  const r = columnRates(t, q, 1, 0, 4, newColumnRates());
  assert.ok(Number.isNaN(r.velocity[0]) && Number.isNaN(r.acceleration[0]) && Number.isNaN(r.jerk[0]));
  // f[0, 0.1] = 1 − 3(0 + 0.1) + 5(0 + 0 + 0.01) = 0.75.
  assert.ok(
    Math.abs(r.velocity[1] - 0.75) < 1e-12 && Number.isNaN(r.acceleration[1]) && Number.isNaN(r.jerk[1]),
    String(r.velocity[1]),
  );
  // 2·f[0, 0.1, 0.3] = 2·(−3 + 5·(0 + 0.1 + 0.3)) = −2.
  assert.ok(Math.abs(r.acceleration[2] + 2) < 1e-12 && Number.isNaN(r.jerk[2]), String(r.acceleration[2]));
  // 6·f[t0..t3] = 6·5 = 30 whatever the spacing; velocity f[0.3, 0.35], acceleration 2·(−3 + 5·0.75).
  assert.ok(Math.abs(r.jerk[3] - 30) < 1e-9, String(r.jerk[3]));
  assert.ok(Math.abs(r.acceleration[3] - 2 * (-3 + 5 * 0.75)) < 1e-12);
  const v = (q[3] - q[2]) / 0.05;
  assert.ok(Math.abs(r.velocity[3] - v) < 1e-12);
});

test('column j of row-major samples with a stride; the buffers grow and are reused', () => {
  const t = [0, 1, 2, 3];
  const q = [0, 0, 1, 1, 2, 4, 3, 9]; // column 0 = t, column 1 = t²
  const r = newColumnRates();
  columnRates(t, q, 2, 1, 4, r);
  assert.deepEqual([r.velocity[3], r.acceleration[3], r.jerk[3]], [5, 2, 0]);
  const buffer = r.velocity;
  columnRates(t, q, 2, 0, 4, r);
  assert.equal(r.velocity, buffer);
  assert.deepEqual([r.velocity[3], r.acceleration[3], r.jerk[3]], [1, 0, 0]);
  // Fewer samples than the buffers hold: entries past count are not read, the first count are right.
  columnRates(t, q, 2, 1, 2, r);
  assert.ok(r.velocity[1] === 1 && Number.isNaN(r.acceleration[1]));
});

test('property (seed 72, 200 sequences): every entry equals the divided differences computed from scratch', () => {
  const rng = new Prng(72);
  // Newton's divided difference f[t_i, …, t_k] by its recursive definition.
  const dd = (t: number[], q: number[], i: number, k: number): number =>
    i === k ? q[i] : (dd(t, q, i + 1, k) - dd(t, q, i, k - 1)) / (t[k] - t[i]);
  const r = newColumnRates();
  for (let c = 0; c < 200; c++) {
    const count = 1 + rng.int(30);
    const t = [rng.uniform(-1, 1)];
    for (let k = 1; k < count; k++) t.push(t[k - 1] + rng.uniform(0.001, 0.1));
    const q = t.map(() => rng.uniform(-2, 2));
    columnRates(t, q, 1, 0, count, r);
    for (let k = 0; k < count; k++) {
      const want = [
        k >= 1 ? dd(t, q, k - 1, k) : NaN,
        k >= 2 ? 2 * dd(t, q, k - 2, k) : NaN,
        k >= 3 ? 6 * dd(t, q, k - 3, k) : NaN,
      ];
      const got = [r.velocity[k], r.acceleration[k], r.jerk[k]];
      for (let d = 0; d < 3; d++) {
        const what = `seed 72 sequence ${c} sample ${k} derivative ${d + 1}: ${got[d]} vs ${want[d]}`;
        if (Number.isNaN(want[d])) assert.ok(Number.isNaN(got[d]), what);
        else assert.ok(Math.abs(got[d] - want[d]) <= 1e-9 * (1 + Math.abs(want[d])), what);
      }
    }
  }
});

test('property (seed 71, 300 curves): never above the true peak of |v|, |a|, |j| over the span', () => {
  const rng = new Prng(71);
  const r = newColumnRates();
  for (let c = 0; c < 300; c++) {
    const A = rng.uniform(0.1, 2),
      w = rng.uniform(0.5, 8),
      ph = rng.uniform(0, 6.3);
    const t = [0];
    for (let k = 1; k < 4; k++) t.push(t[k - 1] + rng.uniform(0.001, 0.2));
    const q = t.map((x) => A * Math.sin(w * x + ph));
    columnRates(t, q, 1, 0, 4, r);
    // Peaks of |A w^n sin^(n)(w t + ph)| over [t0, t3], sampled finely (plus rounding slack).
    const peak = [0, 0, 0];
    for (let i = 0; i <= 2000; i++) {
      const x = w * (t[0] + ((t[3] - t[0]) * i) / 2000) + ph;
      peak[0] = Math.max(peak[0], Math.abs(A * w * Math.cos(x)));
      peak[1] = Math.max(peak[1], Math.abs(A * w * w * Math.sin(x)));
      peak[2] = Math.max(peak[2], Math.abs(A * w ** 3 * Math.cos(x)));
    }
    const what = `seed 71 curve ${c}: A ${A}, w ${w}, ph ${ph}, t ${t.join(',')}`;
    assert.ok(Math.abs(r.velocity[3]) <= peak[0] * (1 + 1e-6) + 1e-9, `${what}: v ${r.velocity[3]} > ${peak[0]}`);
    assert.ok(
      Math.abs(r.acceleration[3]) <= peak[1] * (1 + 1e-6) + 1e-7,
      `${what}: a ${r.acceleration[3]} > ${peak[1]}`,
    );
    assert.ok(Math.abs(r.jerk[3]) <= peak[2] * (1 + 1e-4) + 1e-3, `${what}: j ${r.jerk[3]} > ${peak[2]}`);
  }
});
