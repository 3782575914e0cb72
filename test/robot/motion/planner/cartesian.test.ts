import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { forwardKinematics } from '../../../../robot/kinematics/forward.js';
import { quat, quatFromTransform } from '../../../../robot/math/quaternion.js';
import { createPlanner, type PoseTarget } from '../../../../robot/motion/planner/planner.js';
import { planBenchCases } from '../../../../daemon/bench/plan-bench.js';
import { robot } from '../../kinematics/robots.js';
import { endsAtTargets, models, ok, referencesViolation } from './checks.js';

const UR5E = robot('ur5e');
const START = [0.3, -1.2, 1.5, -1.9, -1.57, 0.2];
const ACCEPT = { position: 0.002, rotation: Math.PI / 180 };

/** The UR5e TCP at START (tool pointing down) and a target at an offset with that orientation. */
function startPose(): { p: number[]; q: number[]; at: (dx: number, dy: number, dz: number) => PoseTarget } {
  const T = forwardKinematics(models(UR5E).arms[0].chain, START, new Float64Array(12));
  const p = [T[3], T[7], T[11]];
  const q = Array.from(quatFromTransform(quat(), T));
  return { p, q, at: (dx, dy, dz) => ({ position: [p[0] + dx, p[1] + dy, p[2] + dz], orientation: q }) };
}

test('UR5e 10 cm line: the TCP follows the line, starts at the measured joints and ends at rest on the target', () => {
  const planner = createPlanner(UR5E);
  const m = models(UR5E);
  const { p, at } = startPose();
  const target = at(0.1, 0, 0);
  const plan = ok(planner.planCartesian({ measured: { ur5e: START }, targets: { ur5e: [target] } }), 'line');
  assert.equal(referencesViolation(plan, m, planner.hold, { ur5e: START }), '');
  assert.equal(endsAtTargets(plan, m, { ur5e: target }, ACCEPT), '');
  // 0.1 m at 0.08 m/s is at least 1.25 s; jerk-limited progress adds the ramps.
  assert.ok(plan.duration >= 1.25 && plan.duration < 2.5, `${plan.duration} s`);
  assert.deepEqual([plan.summary.kind, plan.summary.steps, plan.summary.stepEnds.length], ['cartesian', 1, 1]);
  assert.equal(plan.summary.stepEnds[0], plan.duration);
  assert.equal(plan.summary.pathSamples, 125);
  assert.ok(plan.summary.finalError[0].position < 1e-6, JSON.stringify(plan.summary.finalError));
  // Between IK samples the references follow a spline in joint space: within 1 mm of the line.
  const ref = plan.arms[0];
  const T = new Float64Array(12);
  for (let i = 0; i < ref.count; i++) {
    forwardKinematics(m.arms[0].chain, ref.q.subarray(i * 6, i * 6 + 6), T);
    const off = Math.hypot(T[7] - p[1], T[11] - p[2]);
    assert.ok(
      off < 1e-3 && T[3] >= p[0] - 1e-4 && T[3] <= p[0] + 0.1 + 1e-4,
      `tick ${i}: ${off * 1000} mm off the line at x − x0 = ${T[3] - p[0]}`,
    );
  }
  // The controller gets joint names and the rate.
  assert.deepEqual(ref.joints, ['shoulder_pan', 'shoulder_lift', 'elbow', 'wrist_1', 'wrist_2', 'wrist_3']);
  assert.equal(ref.rate, 100);
});

test('a chunk with a held step: the arm stays still for that step, and step ends are at rest on each target', () => {
  const planner = createPlanner(UR5E);
  const m = models(UR5E);
  const { at } = startPose();
  const targets = [at(0.03, 0, 0), null, at(0.03, 0.03, 0), at(0.03, 0.03, 0.03)];
  const plan = ok(planner.planCartesian({ measured: { ur5e: START }, targets: { ur5e: targets } }), 'chunk');
  assert.equal(referencesViolation(plan, m, planner.hold, { ur5e: START }), '');
  const ends = plan.summary.stepEnds;
  assert.equal(ends.length, 4);
  assert.equal(ends[1], ends[0], 'a held step of a single arm takes no time');
  const ref = plan.arms[0];
  const T = new Float64Array(12);
  [0, 2, 3].forEach((k) => {
    const tick = Math.min(ref.count - 1, Math.round(ends[k] * ref.rate));
    forwardKinematics(m.arms[0].chain, ref.q.subarray(tick * 6, tick * 6 + 6), T);
    const t = targets[k] as PoseTarget;
    const d = Math.hypot(T[3] - t.position[0], T[7] - t.position[1], T[11] - t.position[2]);
    // The step ends between ticks; jerk-limited arrival moves < 0.1 mm within 5 ms of it.
    assert.ok(d < ACCEPT.position + 1e-4, `step ${k}: ${d * 1000} mm from its target at tick ${tick}`);
    for (let j = 0; j < 6; j++)
      assert.ok(
        Math.abs(ref.dq[tick * 6 + j]) < 0.02,
        `step ${k} joint ${j} still moving at ${ref.dq[tick * 6 + j]} rad/s`,
      );
  });
});

test('property (seed 81; UR5e, Panda, YAM; 30 chunks of 10 poses each): every plan is ok, within limits, at rest on the last target', () => {
  for (const name of ['ur5e', 'panda', 'yam']) {
    const description = robot(name);
    const planner = createPlanner(description);
    const m = models(description);
    const cases = planBenchCases(description, { cases: 30, poses: 10, step: 0.05, rng: new Prng(81) });
    assert.equal(cases.length, 30);
    let planned = 0;
    for (const [i, c] of cases.entries()) {
      const what = `seed 81 ${name} chunk ${i}: ${JSON.stringify(c)}`;
      const r = planner.planCartesian(c);
      // Random chunks may cross singular regions (IK branch switch, unreachable); never anything else.
      if (!r.ok) {
        assert.ok(['joint-jump', 'unreachable'].includes(r.code), `${what}: ${r.code}: ${r.message}`);
        continue;
      }
      planned++;
      assert.equal(referencesViolation(r, m, planner.hold, c.measured as Record<string, number[]>), '', what);
      const targets = c.targets[name] as PoseTarget[];
      assert.equal(endsAtTargets(r, m, { [name]: targets[targets.length - 1] }, ACCEPT), '', what);
      assert.ok(
        r.summary.stepEnds.every((t, k) => k === 0 || t >= r.summary.stepEnds[k - 1]),
        `${what}: step ends`,
      );
      assert.equal(r.summary.stepEnds[9], r.duration, what);
    }
    assert.ok(planned >= 27, `${name}: only ${planned} of 30 planned`);
  }
});

test('collisions along a path are refused with the link, sample and distance, never returned as ok', () => {
  const planner = createPlanner(UR5E);
  const { p, at } = startPose();
  // Down to 2 cm above the table: the target itself is above the table, the wrist capsule (r = 4 cm) is not.
  const table = planner.planCartesian({ measured: { ur5e: START }, targets: { ur5e: [at(0, 0, 0.02 - p[2])] } });
  assert.ok(!table.ok && table.code === 'table', JSON.stringify(table));
  assert.equal(table.link, 'wrist_3');
  assert.ok(table.sample! > 0 && table.distance! > 0 && table.distance! < 0.02, JSON.stringify(table));
  assert.match(
    table.message,
    /^safety check of the references refused the plan: arm "ur5e" link "wrist_3" at sample \d+: \d+\.\d mm below the table plane$/,
  );
  // 5 cm above the table is clear.
  ok(
    planner.planCartesian({ measured: { ur5e: START }, targets: { ur5e: [at(0, 0, 0.05 - p[2])] } }),
    '5 cm above the table',
  );
  // Folding the elbow from upright: the upper arm and the wrist collide.
  const upright = [0, -1.57, 0, -1.57, 0, 0];
  const self = planner.planJoint({ measured: { ur5e: upright }, goal: { ur5e: [0, -1.57, 3, -1.57, 0, 0] } });
  assert.ok(!self.ok && self.code === 'self-collision', JSON.stringify(self));
  assert.deepEqual(self.links, ['upper_arm', 'wrist_1']);
  assert.ok(self.distance! <= 0 && self.sample! > 0);
  assert.match(self.message, /links "upper_arm" and "wrist_1" collide at sample \d+ \(distance -?\d+\.\d mm\)/);
});
