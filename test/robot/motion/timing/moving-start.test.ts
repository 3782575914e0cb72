import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { JerkProfile, newKinState, sampleProfile } from '../../../../robot/motion/timing/profile.js';
import { restToRest } from '../../../../robot/motion/timing/rest-to-rest.js';
import { movingToRest, stopFrom } from '../../../../robot/motion/timing/moving-start.js';
import { endViolation, loadCases, profileViolation } from './helpers.js';
import { referenceDuration } from './moving-start-reference.js';

/** Ruckig's rule: |a0| > A, or v0 beyond ±V (unless a0 already carries it past the other limit),
 * or a0 that would carry v past ±V. */
const needsBrake = (v0: number, a0: number, V: number, A: number, J: number): boolean => {
  const rise = (a0 * a0) / (2 * J);
  return (
    Math.abs(a0) > A ||
    (v0 > V && v0 - rise > -V) ||
    (a0 > 0 && v0 + rise > V) ||
    (v0 < -V && v0 + rise < V) ||
    (a0 < 0 && v0 - rise < -V)
  );
};

test('2,000 fixture cases: durations match the numeric reference to 1e-9 relative; every profile is valid', () => {
  const c = loadCases('moving-start-reference.csv');
  assert.equal(c.count, 2000);
  const prof = new JerkProfile();
  let braking = 0;
  for (let i = 0; i < c.count; i++) {
    const [d, V, A, J, v0, a0] = [c.d[i], c.vmax[i], c.amax[i], c.jmax[i], c.v0[i], c.a0[i]];
    const what = `case ${c.ids[i]}: d ${d}, V ${V}, A ${A}, J ${J}, v0 ${v0}, a0 ${a0}`;
    assert.equal(movingToRest(d, v0, a0, V, A, J, prof), 'ok', what);
    const rel = Math.abs(prof.duration - c.duration[i]) / c.duration[i];
    assert.ok(rel <= 1e-9, `${what}: duration ${prof.duration} vs reference ${c.duration[i]}`);
    assert.equal(prof.brakeSegments > 0, needsBrake(v0, a0, V, A, J), `${what}: brake`);
    if (prof.brakeSegments > 0) braking++;
    const bad =
      profileViolation(prof, { V, A, J }, prof.brakeSegments) ||
      endViolation(prof, d, 1e-9 * (1 + Math.abs(d) + (v0 * v0) / A));
    assert.equal(bad, '', `${what}: ${bad}`);
  }
  assert.ok(braking > 400, `the fixture should exercise braking often, got ${braking}`);
});

test('targeted cases vs the numeric reference: braking, v0 beyond V, a0 opposite to v0, overshoot and return', () => {
  const cases: [d: number, v0: number, a0: number, V: number, A: number, J: number, why: string][] = [
    [1, 3, 0, 1, 2, 10, 'v0 three times V toward the target'],
    [-1, 3, 0, 1, 2, 10, 'v0 beyond V away from the target'],
    [0.2, 0.9, 1.9, 1, 2, 10, 'acceleration would carry v past V'],
    [0.5, 0.5, 4, 1, 2, 10, 'a0 beyond A'],
    [0.5, 0.5, -4, 1, 2, 10, 'a0 beyond A, opposite to v0'],
    [2, -0.8, 1.5, 1, 2, 10, 'moving away, accelerating back'],
    [-2, 0.8, -1.5, 1, 2, 10, 'mirror of the previous'],
    [0.01, 1, 0, 1, 2, 10, 'target far inside the stopping distance: overshoot and come back'],
    [0, 0.5, 0.5, 1, 2, 10, 'return to the start'],
    [0.3, 0, -1.9, 1, 2, 5, 'at rest with acceleration against the target'],
    [5, 0.2, 0, 1, 2, 10, 'long move with cruise'],
  ];
  const prof = new JerkProfile();
  for (const [d, v0, a0, V, A, J, why] of cases) {
    const what = `${why}: d ${d}, v0 ${v0}, a0 ${a0}, V ${V}, A ${A}, J ${J}`;
    assert.equal(movingToRest(d, v0, a0, V, A, J, prof), 'ok', what);
    const ref = referenceDuration(d, v0, a0, V, A, J);
    assert.ok(Math.abs(prof.duration - ref) <= 1e-9 * ref, `${what}: ${prof.duration} vs reference ${ref}`);
    const bad = profileViolation(prof, { V, A, J }, prof.brakeSegments) || endViolation(prof, d, 1e-9);
    assert.equal(bad, '', `${what}: ${bad}`);
  }
});

test('from rest it reproduces the Ruckig oracle (all 10,000 cases, 1e-9 relative)', () => {
  const c = loadCases('ruckig-1dof-rest2rest.csv');
  const prof = new JerkProfile();
  for (let i = 0; i < c.count; i++) {
    movingToRest(c.d[i], 0, 0, c.vmax[i], c.amax[i], c.jmax[i], prof);
    assert.ok(
      Math.abs(prof.duration - c.duration[i]) <= 1e-9 * c.duration[i],
      `case ${c.ids[i]}: ${prof.duration} vs ${c.duration[i]}`,
    );
  }
});

test('Bellman check on Ruckig profiles: from any state of an optimal profile the rest takes the remaining time', () => {
  // Tails of time-optimal profiles are time-optimal. Tolerance: 1e-9 relative plus the time a
  // position rounding error δp can cost near rest (closing a gap δp takes ~2·cbrt(δp/J)).
  const c = loadCases('ruckig-1dof-rest2rest.csv');
  const r = new Prng(5);
  const full = new JerkProfile(),
    tail = new JerkProfile();
  const s = newKinState();
  for (let i = 0; i < c.count; i += 3) {
    const [d, V, A, J] = [c.d[i], c.vmax[i], c.amax[i], c.jmax[i]];
    restToRest(d, V, A, J, full);
    const t = r.uniform(0, full.duration);
    sampleProfile(full, t, s);
    movingToRest(d - s.p, s.v, s.a, V, A, J, tail);
    const tol = 1e-9 * full.duration + 4 * Math.cbrt((4 * Number.EPSILON * (Math.abs(d) + 1)) / J);
    const what = `case ${c.ids[i]} at t = ${t}: state (${s.p}, ${s.v}, ${s.a})`;
    assert.ok(
      Math.abs(tail.duration - (full.duration - t)) <= tol,
      `${what}: ${tail.duration} vs ${full.duration - t}`,
    );
  }
});

test('dynamic-programming check (seed 23, 4000 trials): no admissible detour reaches the target sooner', () => {
  // For the minimum time T(x): T(x0) ≤ τ + T(x(τ)) for every admissible control on [0, τ]
  // (verification theorem). Random jerk prefixes (arbitrary values in [−J, J], not just the
  // bang-bang shapes the solver builds) within the limits must never beat the solver's time.
  const r = new Prng(23);
  const direct = new JerkProfile(),
    rest = new JerkProfile();
  let trials = 0;
  while (trials < 4000) {
    const V = 10 ** r.uniform(-1, 1),
      A = 10 ** r.uniform(-1, 1),
      J = 10 ** r.uniform(-0.5, 2);
    let p = 0,
      v = r.uniform(-1, 1) * V,
      a = r.uniform(-1, 1) * A;
    if (needsBrake(v, a, V, A, J)) continue;
    const d = r.uniform(-3, 3) * V;
    movingToRest(d, v, a, V, A, J, direct);
    let tau = 0,
      ok = true;
    for (let k = 0, arcs = 1 + r.int(3); k < arcs && ok; k++) {
      const j = r.next() < 0.5 ? (r.next() < 0.5 ? -J : J) : r.uniform(-J, J);
      const dt = r.next() * 0.3 * direct.duration;
      for (let i = 1; i <= 20 && ok; i++) {
        const h = dt / 20;
        p += h * (v + h * (0.5 * a + (h * j) / 6));
        v += h * (a + 0.5 * h * j);
        a += h * j;
        ok = Math.abs(a) <= A && Math.abs(v) <= V && !needsBrake(v, a, V, A, J);
      }
      tau += dt;
    }
    if (!ok) continue;
    trials++;
    movingToRest(d - p, v, a, V, A, J, rest);
    assert.ok(
      direct.duration <= tau + rest.duration + 1e-9 * direct.duration,
      `seed 23 trial ${trials}: d ${d}, V ${V}, A ${A}, J ${J}: direct ${direct.duration} > detour ${tau} + ${rest.duration}`,
    );
  }
});

test('property (seed 21, 3000 cases): limits after the brake, continuity, ends at rest at d', () => {
  const r = new Prng(21);
  const prof = new JerkProfile();
  for (let i = 0; i < 3000; i++) {
    const V = 10 ** r.uniform(-1, 1),
      A = 10 ** r.uniform(-1, 1),
      J = 10 ** r.uniform(-0.5, 2);
    const d = r.uniform(-3, 3) * V,
      v0 = r.uniform(-2, 2) * V,
      a0 = r.uniform(-2, 2) * A;
    const what = `seed 21 case ${i}: d ${d}, v0 ${v0}, a0 ${a0}, V ${V}, A ${A}, J ${J}`;
    assert.equal(movingToRest(d, v0, a0, V, A, J, prof), 'ok', what);
    const scale = 1 + Math.abs(d) + (v0 * v0) / A + Math.abs(a0 * a0 * a0) / (J * J);
    const bad = profileViolation(prof, { V, A, J }, prof.brakeSegments) || endViolation(prof, d, 1e-9 * scale);
    assert.equal(bad, '', `${what}: ${bad}`);
    assert.equal(prof.brakeSegments > 0, needsBrake(v0, a0, V, A, J), `${what}: brake`);
    // The brake ends inside ±V unless the acceleration ramp alone spans the band (A²/2J > 2V).
    const vb = prof.v[prof.brakeSegments];
    assert.ok(Math.abs(vb) <= V * (1 + 1e-9) || A * A > 4 * J * V, `${what}: brake ends at v = ${vb}`);
  }
});

test('stop by hand: (v0 = 1, a0 = 0), A = 10, J = 1 stops after 2 s at p = 1; brake from v0 = 2 > V = 1', () => {
  const prof = new JerkProfile();
  // −J for 1 s (v = 1/2, a = −1, p = 5/6), +J for 1 s (p += 1/2 − 1/2 + 1/6).
  assert.equal(stopFrom(1, 0, 2, 10, 1, prof), 'ok');
  assert.ok(
    Math.abs(prof.duration - 2) < 1e-12 && Math.abs(prof.p[prof.count] - 1) < 1e-12,
    `${prof.duration} ${prof.p[prof.count]}`,
  );
  assert.equal(movingToRest(1, 1, 0, 2, 10, 1, prof), 'ok');
  assert.ok(Math.abs(prof.duration - 2) < 1e-12, `moving to the stop point is the stop: ${prof.duration}`);
  // Brake: −J until v = V: 2 − t²/2 = 1 at t = √2 (a = −√2); then +J for √2 s ends at rest,
  // p = (2√2 − √2/3) + (√2 − √2 + √2/3) = 2√2.
  assert.equal(stopFrom(2, 0, 1, 10, 1, prof), 'ok');
  assert.equal(prof.brakeSegments, 1);
  const r2 = Math.SQRT2;
  assert.ok(Math.abs(prof.dur[0] - r2) < 1e-12 && Math.abs(prof.v[1] - 1) < 1e-12 && Math.abs(prof.a[1] + r2) < 1e-12);
  // The braked state is rounded: an ulp off the stop curve costs ~√(ulp/J) ≈ 2e-8 s of extra stop.
  assert.ok(Math.abs(prof.duration - 2 * r2) < 1e-7 && Math.abs(prof.p[prof.count] - 2 * r2) < 1e-12);
});

test('brakes by hand: acceleration beyond A, velocity beyond V with a plateau at −A, forced overshoot', () => {
  const prof = new JerkProfile();
  const cases: [v0: number, a0: number, V: number, A: number, J: number, dur: number[], v: number, a: number][] = [
    // a0 = 4 > A = 2: −J for 0.2 s (v = −2.4), then hold a = A for 0.7 s until v = −V.
    [-3, 4, 1, 2, 10, [0.2, 0.7], -1, 2],
    // v0 = 3 > V: −J for 0.1 s to a = −A (v = 2.95), then hold −A for 1.95 s until v = V.
    [3, 0, 1, 1, 10, [0.1, 1.95], 1, -1],
    // v0 + a0²/2J = 1.0805 > V: −J until v is back at V, t = (1.9 + √1.61)/10, a = −√1.61.
    [0.9, 1.9, 1, 2, 10, [(1.9 + Math.sqrt(1.61)) / 10], 1, -Math.sqrt(1.61)],
  ];
  for (const [v0, a0, V, A, J, dur, v, a] of cases) {
    const what = `v0 ${v0}, a0 ${a0}, V ${V}, A ${A}, J ${J}`;
    assert.equal(stopFrom(v0, a0, V, A, J, prof), 'ok', what);
    assert.equal(prof.brakeSegments, dur.length, what);
    for (let k = 0; k < dur.length; k++) assert.ok(Math.abs(prof.dur[k] - dur[k]) < 1e-12, `${what}: ${prof.dur[k]}`);
    const n = dur.length;
    assert.ok(
      Math.abs(prof.v[n] - v) < 1e-12 && Math.abs(prof.a[n] - a) < 1e-12,
      `${what}: ${prof.v[n]}, ${prof.a[n]}`,
    );
  }
});

test('property (seed 22, 2000 cases): stops are rest-to-rest at their own end and no moving-start profile is shorter', () => {
  const r = new Prng(22);
  const stop = new JerkProfile(),
    move = new JerkProfile();
  for (let i = 0; i < 2000; i++) {
    const V = 10 ** r.uniform(-1, 1),
      A = 10 ** r.uniform(-1, 1),
      J = 10 ** r.uniform(-0.5, 2);
    const v0 = r.uniform(-2, 2) * V,
      a0 = r.uniform(-2, 2) * A;
    const what = `seed 22 case ${i}: v0 ${v0}, a0 ${a0}, V ${V}, A ${A}, J ${J}`;
    assert.equal(stopFrom(v0, a0, V, A, J, stop), 'ok', what);
    const bad = profileViolation(stop, { V, A, J }, stop.brakeSegments) || endViolation(stop, stop.p[stop.count], 0);
    assert.equal(bad, '', `${what}: ${bad}`);
    movingToRest(r.uniform(-3, 3) * V, v0, a0, V, A, J, move);
    assert.ok(
      move.duration >= stop.duration * (1 - 1e-12),
      `${what}: a move (${move.duration}) beat the stop (${stop.duration})`,
    );
  }
});

test('bad inputs return result codes', () => {
  const prof = new JerkProfile();
  assert.equal(movingToRest(NaN, 0, 0, 1, 1, 1, prof), 'invalid_input');
  assert.equal(movingToRest(1, Infinity, 0, 1, 1, 1, prof), 'invalid_input');
  assert.equal(movingToRest(1, 0, 0, 1, 0, 1, prof), 'invalid_limits');
  assert.equal(stopFrom(0, NaN, 1, 1, 1, prof), 'invalid_input');
  assert.equal(stopFrom(0, 0, 1, 1, -2, prof), 'invalid_limits');
});
