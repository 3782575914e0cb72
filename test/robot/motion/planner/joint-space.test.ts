import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { forwardKinematics } from '../../../../robot/kinematics/forward.js';
import { quat, quatFromTransform } from '../../../../robot/math/quaternion.js';
import { createPlanner } from '../../../../robot/motion/planner/planner.js';
import { JerkProfile } from '../../../../robot/motion/timing/profile.js';
import { stopFrom } from '../../../../robot/motion/timing/moving-start.js';
import { robot } from '../../kinematics/robots.js';
import { models, ok, referencesViolation } from './checks.js';

const UR5E = robot('ur5e');
const START = [0.3, -1.2, 1.5, -1.9, -1.57, 0.2];

function row(a: Float64Array, i: number, n: number): number[] {
  return Array.from(a.subarray(i * n, (i + 1) * n));
}

test('joint move by hand: 3 rad at π rad/s, 8 rad/s², 80 rad/s³ takes 3/π + π/8 + 8/80 s; all joints end together', () => {
  const planner = createPlanner(UR5E);
  const goal = [...START];
  goal[0] += 3;
  goal[5] -= 0.5;
  const plan = ok(planner.planJoint({ measured: { ur5e: START }, goal: { ur5e: goal } }), 'move');
  assert.ok(Math.abs(plan.duration - (3 / Math.PI + Math.PI / 8 + 0.1)) < 1e-12, `${plan.duration}`);
  assert.equal(referencesViolation(plan, models(UR5E), planner.hold, { ur5e: START }), '');
  const ref = plan.arms[0];
  const end = Math.ceil(plan.duration * ref.rate - 1e-9);
  assert.deepEqual(row(ref.q, end, 6), goal, 'exactly at the goal from the first tick at or past the end');
  // Joint 5 (0.5 rad) is re-timed to the slow joint: still moving on the tick before the end.
  assert.ok(Math.abs(ref.q[(end - 1) * 6 + 5] - goal[5]) > 0 && Math.abs(ref.q[(end - 1) * 6] - goal[0]) > 0);
  assert.deepEqual([plan.summary.kind, plan.summary.steps, plan.summary.pathSamples], ['joint', 0, 0]);
});

test('property (seed 83, 60 joint moves, one or two arms): synchronised, within limits, exactly at the goal at rest', () => {
  const r = new Prng(83);
  for (const name of ['ur5e', 'panda']) {
    const description = robot(name);
    const planner = createPlanner(description);
    const m = models(description);
    const chain = m.arms[0].chain;
    const mid = name === 'ur5e' ? START : [0, -0.785, 0, -2.356, 0, 1.571, 0.785];
    let planned = 0;
    for (let c = 0; c < 30; c++) {
      const clampTo = (x: number, j: number): number =>
        Math.min(chain.upper[j] - 1e-3, Math.max(chain.lower[j] + 1e-3, x));
      const q0 = mid.map((x, j) => clampTo(x + r.uniform(-0.3, 0.3), j));
      const q1 = mid.map((x, j) => clampTo(x + r.uniform(-0.3, 0.3), j));
      const what = `seed 83 ${name} move ${c}: ${JSON.stringify({ q0, q1 })}`;
      const plan = planner.planJoint({ measured: { [name]: q0 }, goal: { [name]: q1 } });
      if (!plan.ok) {
        assert.ok(['self-collision', 'workspace', 'table'].includes(plan.code), `${what}: ${plan.message}`);
        continue;
      }
      planned++;
      assert.equal(referencesViolation(plan, m, planner.hold, { [name]: q0 }), '', what);
      const ref = plan.arms[0];
      const n = chain.dof;
      const end = Math.ceil(plan.duration * ref.rate - 1e-9);
      assert.deepEqual(row(ref.q, ref.count - 1, n), q1, `${what}: final q`);
      // Synchronised: every joint with a displacement is still short of its goal one tick before the end.
      for (let j = 0; j < n; j++)
        if (q1[j] !== q0[j] && end > 0)
          assert.notEqual(ref.q[(end - 1) * n + j], q1[j], `${what}: joint ${j} done early`);
    }
    assert.ok(planned >= 20, `${name}: ${planned} of 30 planned`);
  }
});

test('stop from a moving state: each joint on its own fastest stop, then held; within limits when the state is', () => {
  const planner = createPlanner(UR5E);
  const m = models(UR5E);
  const r = new Prng(84);
  for (let c = 0; c < 40; c++) {
    const lim = UR5E.joints.map((j) => j.limits);
    const dq = lim.map((l) => r.uniform(-0.9, 0.9) * l.velocity * 0.3);
    const ddq = lim.map((l) => r.uniform(-0.9, 0.9) * l.acceleration);
    const q = START.map((x) => x + r.uniform(-0.2, 0.2));
    const what = `seed 84 stop ${c}: ${JSON.stringify({ q, dq, ddq })}`;
    const plan = ok(planner.planStop({ state: { ur5e: { q, dq, ddq } } }), what);
    assert.equal(referencesViolation(plan, m, planner.hold, { ur5e: q }), '', what);
    const ref = plan.arms[0];
    assert.deepEqual([row(ref.dq, 0, 6), row(ref.ddq, 0, 6)], [dq, ddq], `${what}: starts from the state`);
    let longest = 0;
    for (let j = 0; j < 6; j++) {
      const prof = new JerkProfile();
      assert.equal(stopFrom(dq[j], ddq[j], lim[j].velocity, lim[j].acceleration, lim[j].jerk, prof), 'ok');
      longest = Math.max(longest, prof.duration);
      // At rest from its own stop time on (not the slowest joint's).
      const from = Math.ceil(prof.duration * ref.rate - 1e-9);
      for (let i = from; i < ref.count; i++)
        assert.ok(
          ref.dq[i * 6 + j] === 0 && ref.q[i * 6 + j] === ref.q[(ref.count - 1) * 6 + j],
          `${what}: joint ${j} moves at tick ${i}`,
        );
      if (from > 1)
        assert.notEqual(ref.dq[(from - 1) * 6 + j], 0, `${what}: joint ${j} stops before its own stop time`);
    }
    assert.equal(plan.duration, longest, what);
    assert.equal(plan.summary.kind, 'stop');
  }
});

test('aborting a Cartesian move at any tick: the sent prefix plus the stop from its reference state keeps every limit', () => {
  const planner = createPlanner(UR5E);
  const m = models(UR5E);
  const T = forwardKinematics(m.arms[0].chain, START, new Float64Array(12));
  const target = {
    position: [T[3] + 0.1, T[7] + 0.05, T[11] - 0.03],
    orientation: Array.from(quatFromTransform(quat(), T)),
  };
  const move = ok(planner.planCartesian({ measured: { ur5e: START }, targets: { ur5e: [target] } }), 'move');
  const ref = move.arms[0];
  for (let k = 1; k < ref.count; k += 7) {
    const state = { q: row(ref.q, k, 6), dq: row(ref.dq, k, 6), ddq: row(ref.ddq, k, 6) };
    const stop = ok(planner.planStop({ state: { ur5e: state } }), `abort at tick ${k}`);
    // Stitch: ticks 0..k−1 of the move, then the stop (its tick 0 is the move's tick k).
    const count = k + stop.arms[0].count;
    const q = new Float64Array(count * 6);
    q.set(ref.q.subarray(0, k * 6));
    q.set(stop.arms[0].q, k * 6);
    const t = Float64Array.from({ length: count }, (_, i) => i / 100);
    const dq = new Float64Array(count * 6),
      ddq = new Float64Array(count * 6);
    dq.set(ref.dq.subarray(0, k * 6));
    dq.set(stop.arms[0].dq, k * 6);
    ddq.set(ref.ddq.subarray(0, k * 6));
    ddq.set(stop.arms[0].ddq, k * 6);
    const stitched = { ...stop, arms: [{ ...stop.arms[0], count, t, q, dq, ddq }] };
    assert.equal(referencesViolation(stitched, m, planner.hold, { ur5e: START }), '', `abort at tick ${k}`);
  }
});

test('re-target from a moving state ends exactly at the new goal; a state beyond the limits is refused, not sent', () => {
  const planner = createPlanner(UR5E);
  const goal = START.map((x, j) => x + (j === 1 ? -0.2 : 0.1));
  const plan = ok(
    planner.planStop({ state: { ur5e: { q: START, dq: [0.5, -0.3, 0.2, 0, 0.1, -0.4] } }, goal: { ur5e: goal } }),
    're-target',
  );
  assert.equal(referencesViolation(plan, models(UR5E), planner.hold, { ur5e: START }), '');
  assert.deepEqual(row(plan.arms[0].q, plan.arms[0].count - 1, 6), goal);
  // 4 rad/s on a π rad/s joint: the first reference (the state, sent as dq) already exceeds the velocity limit.
  const fast = planner.planStop({ state: { ur5e: { q: START, dq: [4, 0, 0, 0, 0, 0] } } });
  assert.ok(
    !fast.ok && fast.code === 'joint-velocity' && fast.joint === 'shoulder_pan' && fast.sample === 0,
    JSON.stringify(fast),
  );
  assert.match(fast.message, /sample 0: velocity \(the sent dq\) 4\.00000 exceeds the limit 3\.14159/);
});
