import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { JerkProfile, newKinState, sampleProfile } from '../../../../robot/motion/timing/profile.js';
import { restToRest, restToRestInTime } from '../../../../robot/motion/timing/rest-to-rest.js';
import { endViolation, loadCases, profileViolation } from './helpers.js';

test('all 10,000 Ruckig oracle cases: duration to 1e-9 relative, phases t0..t6 and limits class', () => {
  const c = loadCases('ruckig-1dof-rest2rest.csv');
  assert.equal(c.count, 10_000);
  const prof = new JerkProfile();
  let worst = 0;
  for (let i = 0; i < c.count; i++) {
    const what = `case ${c.ids[i]} (d ${c.d[i]}, V ${c.vmax[i]}, A ${c.amax[i]}, J ${c.jmax[i]})`;
    assert.equal(restToRest(c.d[i], c.vmax[i], c.amax[i], c.jmax[i], prof), 'ok', what);
    const T = c.duration[i];
    const rel = Math.abs(prof.duration - T) / T;
    worst = Math.max(worst, rel);
    assert.ok(rel <= 1e-9, `${what}: duration ${prof.duration} vs Ruckig ${T}`);
    for (let k = 0; k < 7; k++) {
      const ref = c.phases![i * 7 + k];
      assert.ok(Math.abs(prof.dur[k] - ref) <= 1e-9 * T, `${what}: t${k} = ${prof.dur[k]} vs Ruckig ${ref}`);
    }
    assert.equal(prof.limits, c.limits![i], what);
    assert.equal(prof.direction, c.d[i] < 0 ? -1 : 1, what);
    assert.ok(prof.endError <= 1e-12 * (1 + Math.abs(c.d[i])), `${what}: end error ${prof.endError}`);
  }
  assert.ok(worst < 1e-13, `closed form should agree to rounding, worst ${worst}`);
});

// Hand-computed: J = 1 everywhere so tj = A (or sqrt(V)); see the derivations beside each case.
const hand: {
  name: string;
  d: number;
  V: number;
  A: number;
  J: number;
  T: number;
  phases: number[];
  limits: string;
}[] = [
  // A reached (tj = 1, ta = V/A − tj = 1), cruise (10 − V·(2tj + ta) = 4) / V = 2.
  { name: 'ACC0_ACC1_VEL', d: 10, V: 2, A: 1, J: 1, T: 8, phases: [1, 1, 1, 2, 1, 1, 1], limits: 'ACC0_ACC1_VEL' },
  // V·J = 1 < A² → tj = sqrt(V/J) = 1, no plateau; cruise (10 − 2)/1 = 8.
  { name: 'VEL', d: 10, V: 1, A: 10, J: 1, T: 12, phases: [1, 0, 1, 8, 1, 0, 1], limits: 'VEL' },
  // (1 + ta)(2 + ta) = 10 → ta = (−3 + √41)/2; T = 4 + 2ta = 1 + √41.
  {
    name: 'ACC0_ACC1',
    d: 10,
    V: 100,
    A: 1,
    J: 1,
    T: 1 + Math.sqrt(41),
    phases: [1, (Math.sqrt(41) - 3) / 2, 1, 0, 1, (Math.sqrt(41) - 3) / 2, 1],
    limits: 'ACC0_ACC1',
  },
  // d = 2 J tj³ → tj = cbrt(1/2); the two −J ramps merge into t2 = 2tj.
  {
    name: 'NONE',
    d: 1,
    V: 10,
    A: 10,
    J: 1,
    T: 4 * Math.cbrt(0.5),
    phases: [Math.cbrt(0.5), 0, 2 * Math.cbrt(0.5), 0, 0, 0, Math.cbrt(0.5)],
    limits: 'NONE',
  },
  { name: 'negative distance', d: -10, V: 2, A: 1, J: 1, T: 8, phases: [1, 1, 1, 2, 1, 1, 1], limits: 'ACC0_ACC1_VEL' },
  { name: 'zero distance', d: 0, V: 1, A: 1, J: 1, T: 0, phases: [0, 0, 0, 0, 0, 0, 0], limits: 'NONE' },
];

for (const h of hand) {
  test(`hand-computed ${h.name}: duration ${h.T.toFixed(4)} s and phases`, () => {
    const prof = new JerkProfile();
    assert.equal(restToRest(h.d, h.V, h.A, h.J, prof), 'ok');
    assert.ok(Math.abs(prof.duration - h.T) < 1e-12, `duration ${prof.duration} vs ${h.T}`);
    h.phases.forEach((x, k) => assert.ok(Math.abs(prof.dur[k] - x) < 1e-12, `t${k} ${prof.dur[k]} vs ${x}`));
    assert.equal(prof.limits, h.limits);
  });
}

test('sampling the ACC0_ACC1_VEL case: states at phase ends by hand', () => {
  const prof = new JerkProfile();
  restToRest(-10, 2, 1, 1, prof);
  const s = newKinState();
  // After t0 = 1 at jerk −1: p = −1/6, v = −1/2, a = −1, j = −1 (still inside phase 0 just before).
  sampleProfile(prof, 1 - 1e-15, s);
  assert.ok(
    Math.abs(s.p + 1 / 6) < 1e-12 && Math.abs(s.v + 0.5) < 1e-12 && Math.abs(s.a + 1) < 1e-12,
    JSON.stringify(s),
  );
  assert.equal(s.j, -1);
  // Middle of the cruise (t = 4): half way, at −V, no acceleration.
  sampleProfile(prof, 4, s);
  assert.ok(Math.abs(s.p + 5) < 1e-12 && Math.abs(s.v + 2) < 1e-12 && Math.abs(s.a) < 1e-15, JSON.stringify(s));
  assert.equal(s.j, 0);
  // Before the start and after the end: at rest at 0 and at d exactly.
  assert.deepEqual(sampleProfile(prof, -1, s), { p: 0, v: 0, a: 0, j: 0 });
  assert.deepEqual(sampleProfile(prof, 99, s), { p: -10, v: 0, a: 0, j: 0 });
});

function randomLimits(r: Prng): { d: number; V: number; A: number; J: number } {
  // Log-uniform over 6 decades of distance and 3 of each limit, both signs.
  const d = (r.next() < 0.5 ? -1 : 1) * 10 ** r.uniform(-4, 2);
  return { d, V: 10 ** r.uniform(-1.5, 1.5), A: 10 ** r.uniform(-1.5, 1.5), J: 10 ** r.uniform(-1, 2) };
}

test('property (seed 11, 3000 cases): limits hold, continuity, monotone time and position, ends at rest at d', () => {
  const r = new Prng(11);
  const prof = new JerkProfile();
  const s = newKinState();
  for (let i = 0; i < 3000; i++) {
    const { d, V, A, J } = randomLimits(r);
    const what = `seed 11 case ${i}: d ${d}, V ${V}, A ${A}, J ${J}`;
    assert.equal(restToRest(d, V, A, J, prof), 'ok', what);
    const bad = profileViolation(prof, { V, A, J }) || endViolation(prof, d, 1e-12 * (1 + Math.abs(d)));
    assert.equal(bad, '', `${what}: ${bad}`);
    // Position moves monotonically toward d (never overshoots).
    let prev = 0;
    for (let k = 1; k <= 50; k++) {
      sampleProfile(prof, (prof.duration * k) / 50, s);
      assert.ok(Math.sign(d) * (s.p - prev) >= -1e-12 * Math.abs(d), `${what}: position goes back at step ${k}`);
      prev = s.p;
    }
  }
});

test('fixed duration (seed 12, 2000 cases): ends exactly at T and at d, limits hold, below minimum is refused', () => {
  const r = new Prng(12);
  const prof = new JerkProfile();
  for (let i = 0; i < 2000; i++) {
    const { d, V, A, J } = randomLimits(r);
    restToRest(d, V, A, J, prof);
    const tMin = prof.duration;
    const T = tMin * (i % 5 === 0 ? 1 + 1e-9 : 10 ** r.uniform(0, 1.5));
    const what = `seed 12 case ${i}: d ${d}, V ${V}, A ${A}, J ${J}, T ${T} (min ${tMin})`;
    assert.equal(restToRestInTime(d, V, A, J, T, prof), 'ok', what);
    assert.ok(Math.abs(prof.duration - T) <= 1e-12 * T, `${what}: duration ${prof.duration}`);
    const bad = profileViolation(prof, { V, A, J }) || endViolation(prof, d, 1e-9 * (1 + Math.abs(d)));
    assert.equal(bad, '', `${what}: ${bad}`);
    assert.equal(restToRestInTime(d, V, A, J, tMin * 0.999, prof), 'infeasible_duration', what);
  }
});

test('fixed duration by hand: d = 10, V = 2, A = 1, J = 1 stretched from 8 s to 12 s and 40 s', () => {
  const prof = new JerkProfile();
  // 12 s: vp/A + A/J + d/vp = 12 → vp² − 11 vp + 10 = 0 → vp = 1 (plateau-free boundary vp = A²/J).
  assert.equal(restToRestInTime(10, 2, 1, 1, 12, prof), 'ok');
  assert.deepEqual(
    Array.from(prof.dur.subarray(0, 7)).map((x) => +x.toFixed(12)),
    [1, 0, 1, 8, 1, 0, 1],
  );
  // 40 s: 2u + 10/u² = 40 with u = sqrt(vp/J): u ≈ 0.5031 (no plateau), cruise 40 − 4u.
  assert.equal(restToRestInTime(10, 2, 1, 1, 40, prof), 'ok');
  const u = prof.dur[0];
  assert.ok(Math.abs(2 * u + 10 / (u * u) - 40) < 1e-9, `u = ${u}`);
  assert.equal(prof.dur[1], 0);
  assert.ok(Math.abs(prof.dur[3] - (40 - 4 * u)) < 1e-12);
  // Nothing to move: holds for the whole duration.
  assert.equal(restToRestInTime(0, 2, 1, 1, 3, prof), 'ok');
  assert.equal(prof.duration, 3);
});

test('bad inputs return result codes', () => {
  const prof = new JerkProfile();
  assert.equal(restToRest(NaN, 1, 1, 1, prof), 'invalid_input');
  assert.equal(restToRest(Infinity, 1, 1, 1, prof), 'invalid_input');
  for (const [V, A, J] of [
    [0, 1, 1],
    [1, -1, 1],
    [1, 1, Infinity],
    [NaN, 1, 1],
  ]) {
    assert.equal(restToRest(1, V, A, J, prof), 'invalid_limits', `V ${V} A ${A} J ${J}`);
  }
  assert.equal(restToRestInTime(1, 1, 1, 1, NaN, prof), 'invalid_input');
});
