import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { choleskySolve, choleskySolve6 } from '../../../robot/kinematics/cholesky.js';

/** Row-major 6×6 M·Mᵀ + λI from a seeded random M (SPD for λ > 0). */
function spd(rng: Prng, lambda: number): Float64Array {
  const m = Float64Array.from({ length: 36 }, () => rng.uniform(-1, 1));
  const a = new Float64Array(36);
  for (let r = 0; r < 6; r++) {
    for (let c = 0; c < 6; c++) {
      let s = 0;
      for (let i = 0; i < 6; i++) s += m[r * 6 + i] * m[c * 6 + i];
      a[r * 6 + c] = s + (r === c ? lambda : 0);
    }
  }
  return a;
}

test('by hand: [[4, 2], [2, 3]]·x = [2, 1] gives x = [0.5, 0]; a 6×6 diagonal system', () => {
  const b = Float64Array.from([2, 1]);
  assert.equal(choleskySolve(Float64Array.from([4, 2, 2, 3]), b, 2), true);
  assert.deepEqual(Array.from(b), [0.5, 0]);
  const a = new Float64Array(36);
  for (let i = 0; i < 6; i++) a[i * 6 + i] = (i + 1) ** 2;
  const x = Float64Array.from([1, 4, 9, 16, 25, 36]);
  assert.equal(choleskySolve6(a, x), true);
  assert.deepEqual(Array.from(x), [1, 1, 1, 1, 1, 1]);
});

test("property (seed 31, 2,000 systems): choleskySolve6 gives choleskySolve's bits and solves A·x = b", () => {
  const rng = new Prng(31);
  for (let c = 0; c < 2000; c++) {
    const a = spd(rng, 10 ** rng.uniform(-8, 1));
    const b = Float64Array.from({ length: 6 }, () => rng.uniform(-1, 1));
    const generic = b.slice(),
      unrolled = b.slice();
    assert.equal(choleskySolve(a.slice(), generic, 6), true, `seed 31 system ${c}`);
    assert.equal(choleskySolve6(a, unrolled), true, `seed 31 system ${c}`);
    for (let i = 0; i < 6; i++)
      assert.ok(Object.is(generic[i], unrolled[i]), `seed 31 system ${c} x[${i}]: ${unrolled[i]} vs ${generic[i]}`);
    // Residual relative to the scale of A·x and b (A is read, not written, by choleskySolve6).
    for (let r = 0; r < 6; r++) {
      let s = 0,
        scale = Math.abs(b[r]);
      for (let i = 0; i < 6; i++) {
        s += a[r * 6 + i] * unrolled[i];
        scale += Math.abs(a[r * 6 + i] * unrolled[i]);
      }
      assert.ok(Math.abs(s - b[r]) <= 1e-9 * scale, `seed 31 system ${c} row ${r}: residual ${s - b[r]}`);
    }
  }
});

test('not positive definite (seed 32): both refuse, at whichever pivot fails', () => {
  const rng = new Prng(32);
  for (let c = 0; c < 200; c++) {
    const a = spd(rng, 0.1);
    // Make pivot p fail: a_pp well below what the earlier columns take out of it.
    const p = rng.int(6);
    a[p * 6 + p] = -rng.uniform(0, 1);
    const b = Float64Array.from({ length: 6 }, () => rng.uniform(-1, 1));
    assert.equal(choleskySolve(a.slice(), b.slice(), 6), false, `seed 32 case ${c} pivot ${p}`);
    assert.equal(choleskySolve6(a, b.slice()), false, `seed 32 case ${c} pivot ${p}`);
  }
  const nan = new Float64Array(36);
  nan[0] = NaN;
  assert.equal(choleskySolve6(nan, new Float64Array(6)), false);
});
