import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { newKinState, sampleProfile } from '../../../../robot/motion/timing/profile.js';
import { type JointPath, progressLimits, timePath } from '../../../../robot/motion/timing/path-scaling.js';
import { limitRatios } from '../../../../robot/motion/timing/limit-ratios.js';
import { randomLimits, randomPath } from './paths.js';

const tcp = { linear: 0.08, angular: 0.5 };

test('progress limits by hand: straight 2-joint path', () => {
  // q(s) = s·(1, −0.5): q' = (1, 0.5), q'' = 0; L = 0.2 m, θ = 0.1 rad.
  const n = 11;
  const q = new Float64Array(2 * n);
  for (let k = 0; k < n; k++) [q[2 * k], q[2 * k + 1]] = [k / 10, -k / 20];
  const path: JointPath = { joints: 2, samples: n, q, length: 0.2, rotation: 0.1 };
  const limits = [
    { velocity: 0.5, acceleration: 2, jerk: 10 },
    { velocity: 0.5, acceleration: 1, jerk: 4 },
  ];
  const s = Float64Array.from({ length: n }, (_, k) => k / 10);
  const lim = progressLimits(path, s, limits, tcp);
  // v_s = min(0.08/0.2, 0.5/0.1, 0.5/1, 0.5/0.5, ∞) = 0.4; a_s = min(0.5·2/1, 0.5·1/0.5) = 1; j_s = min(10/1, 4/0.5) = 8.
  assert.ok(
    Math.abs(lim.velocity - 0.4) < 1e-12 && Math.abs(lim.acceleration - 1) < 1e-12 && Math.abs(lim.jerk - 8) < 1e-12,
    JSON.stringify(lim),
  );
  const r = timePath(path, limits, tcp);
  assert.ok(r.ok);
  // Each timestamp is where the progress profile reaches s_k.
  const st = newKinState();
  for (let k = 0; k < n; k++) {
    sampleProfile(r.segment.profile, r.segment.t[k] / r.segment.alpha, st);
    assert.ok(Math.abs(st.p - k / 10) < 1e-12, `sample ${k}: s = ${st.p}`);
  }
  assert.equal(r.segment.t[0], 0);
  assert.equal(r.segment.t[n - 1], r.segment.duration);
});

test('progress limits by hand: curvature keeps half the acceleration budget', () => {
  // One joint, q(s) = 0.5 s² on 101 samples: q'' = 1 → v_s = sqrt(0.5·a / 1) = sqrt(0.5) with a = 1;
  // the largest forward difference is (1 − 0.99²)/2 / 0.01 = 0.995 → a_s = 0.5/0.995, j_s = 10/0.995.
  const n = 101;
  const q = Float64Array.from({ length: n }, (_, k) => 0.5 * (k / 100) ** 2);
  const lim = progressLimits(
    { joints: 1, samples: n, q, length: 0, rotation: 0 },
    Float64Array.from({ length: n }, (_, k) => k / 100),
    [{ velocity: 10, acceleration: 1, jerk: 10 }],
    tcp,
  );
  assert.ok(Math.abs(lim.velocity - Math.sqrt(0.5)) < 1e-9, `${lim.velocity}`);
  assert.ok(
    Math.abs(lim.acceleration - 0.5 / 0.995) < 1e-12 && Math.abs(lim.jerk - 10 / 0.995) < 1e-12,
    JSON.stringify(lim),
  );
});

test('property (seed 41, 300 paths): timestamps rise strictly, ends at rest, finite differences within limits after α', () => {
  const r = new Prng(41);
  let stretched = 0;
  for (let i = 0; i < 300; i++) {
    const joints = 1 + r.int(7);
    const path = randomPath(r, joints, 2 + r.int(200), r.next() < 0.7);
    const limits = randomLimits(r, joints);
    const what = `seed 41 path ${i} (${joints} joints, ${path.samples} samples)`;
    const res = timePath(path, limits, tcp);
    assert.ok(res.ok, what);
    const seg = res.segment;
    for (let k = 1; k < path.samples; k++)
      assert.ok(seg.t[k] > seg.t[k - 1], `${what}: t[${k}] = ${seg.t[k]} ≤ t[${k - 1}]`);
    assert.equal(seg.t[0], 0, what);
    assert.equal(seg.t[path.samples - 1], seg.duration, what);
    // The progress profile starts and ends at rest.
    const st = newKinState();
    for (const t of [0, seg.profile.duration]) {
      sampleProfile(seg.profile, t, st);
      assert.ok(st.v === 0 && st.a === 0, `${what}: not at rest at t = ${t}`);
    }
    const after = limitRatios(seg.t, path.q, path.samples, joints, limits);
    const worst = Math.max(after.velocity, after.acceleration, after.jerk);
    assert.ok(worst <= 1, `${what}: ratios after α = ${seg.alpha}: ${JSON.stringify(after)}`);
    const m = Math.max(seg.ratios.velocity, Math.sqrt(seg.ratios.acceleration), Math.cbrt(seg.ratios.jerk));
    assert.equal(seg.alpha, m > 1 ? 1.001 * m : 1, `${what}: α from ratios ${JSON.stringify(seg.ratios)}`);
    if (seg.alpha > 1) stretched++;
  }
  assert.ok(stretched > 10, `some paths should need the stretch, got ${stretched}`);
});

test('a path whose joints do not move takes no time', () => {
  const q = new Float64Array([0.3, -1, 0.3, -1, 0.3, -1]);
  const r = timePath({ joints: 2, samples: 3, q, length: 0, rotation: 0 }, randomLimits(new Prng(1), 2), tcp);
  assert.ok(r.ok && r.segment.duration === 0 && r.segment.t.every((t) => t === 0));
});

test('bad paths and limits name the field, the rule and the value', () => {
  const limits = randomLimits(new Prng(2), 2);
  const base = (): JointPath => ({ joints: 2, samples: 3, q: new Float64Array(6), length: 0.1, rotation: 0 });
  const cases: [JointPath, typeof limits, typeof tcp, RegExp][] = [
    [{ ...base(), samples: 1, q: new Float64Array(2) }, limits, tcp, /path.samples must be an integer ≥ 2, got 1/],
    [{ ...base(), q: new Float64Array(5) }, limits, tcp, /path.q must hold samples × joints = 6 values, got 5/],
    [{ ...base(), q: new Float64Array([0, 0, NaN, 0, 0, 0]) }, limits, tcp, /path.q\[1\]\[0\] must be finite, got NaN/],
    [
      { ...base(), s: new Float64Array([0, 1, 1]) },
      limits,
      tcp,
      /path.s must increase strictly, got s\[2\] = 1 after 1/,
    ],
    [{ ...base(), s: new Float64Array([0, 0.5, 0.9]) }, limits, tcp, /path.s must run from 0 to 1/],
    [{ ...base(), length: -1 }, limits, tcp, /path.length must be finite and ≥ 0, got -1/],
    [base(), [limits[0]], tcp, /need limits for 2 joints, got 1/],
    [
      base(),
      [limits[0], { ...limits[1], acceleration: 0 }],
      tcp,
      /joint 1 acceleration limit must be finite and > 0, got 0/,
    ],
    [base(), limits, { linear: 0, angular: 1 }, /TCP limits must be > 0/],
  ];
  for (const [path, lim, t, re] of cases) {
    const r = timePath(path, lim, t);
    assert.ok(!r.ok && re.test(r.message), `${re}: ${JSON.stringify(r)}`);
  }
});
