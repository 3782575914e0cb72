import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { loadSetup } from '../../../robot/description/loader.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { capsulesApart } from '../../../robot/safety/link-capsules.js';
import { segmentDistance } from '../../../robot/safety/segment-distance.js';
import { robotSafety, setupSafety, type ArmSafetyModel } from '../../../robot/safety/trajectory-check.js';
import { robot } from '../kinematics/robots.js';

/** Places an arm's capsules at random joints within its limits (continuous joints: one turn). */
function placeRandom(arm: ArmSafetyModel, rng: Prng): void {
  const c = arm.chain;
  const q = Array.from({ length: c.dof }, (_, j) =>
    rng.uniform(Math.max(c.lower[j], -Math.PI), Math.min(c.upper[j], Math.PI)),
  );
  const frames = new Float64Array((c.dof + 1) * 12);
  forwardKinematics(c, q, new Float64Array(12), frames);
  arm.capsules.place(frames);
}

test('by hand: UR5e capsules at q = 0, the half-lengths and the centre bound', () => {
  const [arm] = robotSafety(robot('ur5e')).arms;
  const c = arm.capsules;
  // upper_arm: axis (0, 0, 0.138) → (−0.425, 0, 0.138); wrist_1: 0.1133 m long.
  const upper = c.links.indexOf('upper_arm'),
    wrist1 = c.links.indexOf('wrist_1');
  assert.ok(Math.abs(c.halfLength[upper] - 0.2125) < 1e-15 && Math.abs(c.halfLength[wrist1] - 0.05665) < 1e-15);
  placeRandom(arm, new Prng(1));
  const d =
    segmentDistance(c.world, upper * 6, upper * 6 + 3, c.world, wrist1 * 6, wrist1 * 6 + 3) -
    c.radius[upper] -
    c.radius[wrist1];
  // Never proven apart by more than the true distance; never for an infinite gap (no minimum yet).
  assert.equal(capsulesApart(c, upper, c, wrist1, d), false);
  assert.equal(capsulesApart(c, upper, c, wrist1, Infinity), false);
});

test('collinear capsules: the bound is exact, so only the slack separates proof from contact', () => {
  const [arm] = robotSafety(robot('ur5e')).arms;
  const c = arm.capsules;
  // Two capsules laid on the x axis by hand: 0.1 m gap between their end caps' surfaces.
  const i = 0,
    j = 1,
    hi = c.halfLength[i],
    hj = c.halfLength[j],
    ri = c.radius[i],
    rj = c.radius[j];
  const w = c.world;
  w.set([-hi, 0, 0, hi, 0, 0], i * 6);
  const start = hi + ri + 0.1 + rj;
  w.set([start, 0, 0, start + 2 * hj, 0, 0], j * 6);
  assert.equal(capsulesApart(c, i, c, j, 0.099), true);
  assert.equal(capsulesApart(c, i, c, j, 0.1), false);
  assert.equal(capsulesApart(c, i, c, j, 0.1 - 2e-9), true);
});

test('property (seed 41, 3,000 poses of UR5e, panda and two YAMs): proven apart ⇒ farther than the gap', () => {
  const rng = new Prng(41);
  const dual = loadSetup('dual-yam');
  assert.ok(dual.ok);
  const models = [robotSafety(robot('ur5e')).arms, robotSafety(robot('panda')).arms, setupSafety(dual.value).arms];
  let proven = 0;
  for (let c = 0; c < 3000; c++) {
    const arms = models[c % models.length];
    for (const arm of arms) placeRandom(arm, rng);
    const a = arms[0].capsules,
      b = arms[arms.length - 1].capsules;
    const i = rng.int(a.count),
      j = rng.int(b.count);
    const d = segmentDistance(a.world, i * 6, i * 6 + 3, b.world, j * 6, j * 6 + 3) - a.radius[i] - b.radius[j];
    // Gaps around the true distance and well below it.
    for (const gap of [d, d - 1e-6, d - 0.05, d * rng.next(), -1]) {
      if (!capsulesApart(a, i, b, j, gap)) continue;
      proven++;
      assert.ok(d > gap, `seed 41 pose ${c} capsules ${i}, ${j}: proven apart by more than ${gap}, distance ${d}`);
    }
  }
  assert.ok(proven > 3000, `the bound proves something (${proven} of 15,000)`);
});
