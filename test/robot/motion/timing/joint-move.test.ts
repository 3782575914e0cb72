import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../../robot/common/prng.js';
import { planJointMove, sampleJointMove, type RateLimits } from '../../../../robot/motion/timing/joint-move.js';
import { endViolation, loadCases, profileViolation } from './helpers.js';

test('6-joint oracle (Ruckig cases grouped by six): synchronised duration = slowest joint, 1e-9 relative', () => {
  const c = loadCases('ruckig-6dof-sync.csv');
  assert.equal(c.joints, 6);
  for (let i = 0; i < c.count; i++) {
    const o = i * 6;
    const limits: RateLimits[] = [];
    for (let j = 0; j < 6; j++)
      limits.push({ velocity: c.vmax[o + j], acceleration: c.amax[o + j], jerk: c.jmax[o + j] });
    const r = planJointMove(new Float64Array(6), c.d.subarray(o, o + 6), limits);
    assert.ok(r.ok, `case ${c.ids[i]}`);
    assert.ok(
      Math.abs(r.move.duration - c.duration[i]) <= 1e-9 * c.duration[i],
      `case ${c.ids[i]}: ${r.move.duration} vs ${c.duration[i]}`,
    );
  }
});

test('property (seed 31, 500 moves of 6 joints): all joints end together at the goal, limits hold', () => {
  const r = new Prng(31);
  const q = new Float64Array(6),
    qd = new Float64Array(6),
    qdd = new Float64Array(6);
  for (let i = 0; i < 500; i++) {
    const q0 = Array.from({ length: 6 }, () => r.uniform(-3, 3));
    // Some joints do not move at all; the rest move anywhere within ±3 rad.
    const q1 = q0.map((x) => (r.next() < 0.15 ? x : r.uniform(-3, 3)));
    const limits = q0.map(() => ({
      velocity: r.uniform(0.2, 3),
      acceleration: r.uniform(0.5, 10),
      jerk: r.uniform(2, 100),
    }));
    const what = `seed 31 move ${i}: q0 ${q0}, q1 ${q1}, limits ${JSON.stringify(limits)}`;
    const res = planJointMove(q0, q1, limits);
    assert.ok(res.ok, what);
    const { move } = res;
    for (let j = 0; j < 6; j++) {
      const p = move.profiles[j];
      assert.ok(
        Math.abs(p.duration - move.duration) <= 1e-12 * move.duration,
        `${what}: joint ${j} ends at ${p.duration}, move at ${move.duration}`,
      );
      const lim = { V: limits[j].velocity, A: limits[j].acceleration, J: limits[j].jerk };
      const bad = profileViolation(p, lim) || endViolation(p, q1[j] - q0[j], 1e-9);
      assert.equal(bad, '', `${what}: joint ${j}: ${bad}`);
    }
    sampleJointMove(move, move.duration, q, qd, qdd);
    assert.deepEqual(Array.from(q), q1, `${what}: final positions`);
    assert.deepEqual(
      Array.from(qd).concat(Array.from(qdd)).map(Math.abs),
      new Array(12).fill(0),
      `${what}: final rates`,
    );
    sampleJointMove(move, 0, q);
    assert.deepEqual(Array.from(q), q0, `${what}: start positions`);
  }
});

test("go home by hand: two joints, the shorter one is re-timed to the longer one's 8 s", () => {
  // Joint 0: d = 10, V 2, A 1, J 1 → 8 s (ACC0_ACC1_VEL); joint 1: d = 1, same limits → 1 + √5 < 8 s alone.
  const lim = { velocity: 2, acceleration: 1, jerk: 1 };
  const r = planJointMove([0, 0], [10, -1], [lim, lim]);
  assert.ok(r.ok);
  assert.ok(Math.abs(r.move.duration - 8) < 1e-12);
  const q = new Float64Array(2),
    qd = new Float64Array(2);
  sampleJointMove(r.move, 4, q, qd);
  // Half way in time both joints are half way (symmetric profiles).
  assert.ok(Math.abs(q[0] - 5) < 1e-12 && Math.abs(q[1] + 0.5) < 1e-12, `${q}`);
  assert.ok(qd[1] < 0 && Math.abs(qd[1]) < 2);
});

test('bad requests name the joint and the rule', () => {
  const lim = { velocity: 1, acceleration: 1, jerk: 1 };
  const a = planJointMove([0, 0], [1], [lim, lim]);
  assert.ok(!a.ok && a.code === 'invalid_input' && /lengths must match/.test(a.message), JSON.stringify(a));
  const b = planJointMove([0, 0], [1, NaN], [lim, lim]);
  assert.ok(!b.ok && b.code === 'invalid_input' && b.joint === 1 && /joint 1/.test(b.message), JSON.stringify(b));
  const c = planJointMove([0, 0], [1, 1], [lim, { ...lim, jerk: 0 }]);
  assert.ok(!c.ok && c.code === 'invalid_limits' && c.joint === 1 && /jerk 0/.test(c.message), JSON.stringify(c));
});
