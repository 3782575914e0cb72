import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import {
  fromPose,
  quat,
  quatAngle,
  quatFromTransform,
  quatMultiply,
  quatNorm,
  slerp,
} from '../../../robot/math/quaternion.js';
import { fromAxisAngle } from '../../../robot/math/transform.js';

function randomQuat(r: Prng): Float64Array {
  const q = quat(r.normal(), r.normal(), r.normal(), r.normal());
  const n = quatNorm(q);
  return q.map((x) => x / n);
}

function axisAngleQuat(axis: number[], angle: number): Float64Array {
  const s = Math.sin(angle / 2);
  return quat(axis[0] * s, axis[1] * s, axis[2] * s, Math.cos(angle / 2));
}

test('slerp hits both ends and moves at a constant angular rate about one axis', () => {
  const a = axisAngleQuat([0, 0, 1], 0.2);
  const b = axisAngleQuat([0, 0, 1], 1.4);
  for (const t of [0, 0.25, 0.5, 0.75, 1]) {
    const q = slerp(quat(), a, b, t);
    const expected = axisAngleQuat([0, 0, 1], 0.2 + 1.2 * t);
    assert.ok(quatAngle(q, expected) < 1e-12, `t=${t}: ${quatAngle(q, expected)}`);
  }
});

test('slerp takes the short arc when the quaternions have a negative dot product', () => {
  const a = axisAngleQuat([1, 0, 0], 0);
  // 300° about x is −60°: written with w < 0 so the raw dot product is negative.
  const b = axisAngleQuat([1, 0, 0], (300 * Math.PI) / 180);
  assert.ok(b[3] < 0);
  const mid = slerp(quat(), a, b, 0.5);
  assert.ok(quatAngle(mid, axisAngleQuat([1, 0, 0], (-30 * Math.PI) / 180)) < 1e-12, 'midpoint is −30°, not 150°');
  // Total travel equals the rotation angle between the ends (60°), never 300°.
  assert.ok(Math.abs(quatAngle(a, b) - Math.PI / 3) < 1e-12);
});

test('slerp of nearly coincident quaternions (nlerp branch) stays unit, monotone and on the arc', () => {
  const r = new Prng(3);
  for (const gap of [0, 1e-15, 1e-9, 1e-6, 1e-3, 0.03]) {
    for (let k = 0; k < 20; k++) {
      const a = randomQuat(r);
      const axis = [r.normal(), r.normal(), r.normal()];
      const n = Math.hypot(axis[0], axis[1], axis[2]);
      const d = axisAngleQuat(
        axis.map((x) => x / n),
        gap,
      );
      const b = quatMultiply(quat(), d, a);
      // Also the −b representation of the same end.
      for (const end of [b, b.map((x) => -x)]) {
        let previous = 0;
        for (const t of [0, 0.1, 0.5, 0.9, 1]) {
          const q = slerp(quat(), a, end, t);
          assert.ok(Math.abs(quatNorm(q) - 1) < 1e-15, `gap ${gap} t ${t}: norm ${quatNorm(q)}`);
          const travelled = quatAngle(a, q);
          assert.ok(Math.abs(travelled - t * gap) < 1e-9, `gap ${gap} t ${t}: travelled ${travelled}`);
          assert.ok(travelled >= previous - 1e-15, `gap ${gap}: not monotone at t ${t}`);
          previous = travelled;
        }
      }
    }
  }
});

test('quatFromTransform inverts fromPose, w ≥ 0, for random rotations and the 180° cases (seed 9)', () => {
  const r = new Prng(9);
  const cases = Array.from({ length: 300 }, () => randomQuat(r));
  cases.push(quat(1, 0, 0, 0), quat(0, 1, 0, 0), quat(0, 0, 1, 0), quat(Math.SQRT1_2, Math.SQRT1_2, 0, 0));
  for (const q of cases) {
    const back = quatFromTransform(quat(), fromPose([0, 0, 0], q));
    assert.ok(back[3] >= 0);
    assert.ok(quatAngle(q, back) < 1e-7, `${Array.from(q)} → ${Array.from(back)}`);
  }
  // Agrees with the axis–angle matrix.
  const t = fromAxisAngle(new Float64Array(12), [0, 1, 0], 2.5);
  assert.ok(quatAngle(quatFromTransform(quat(), t), axisAngleQuat([0, 1, 0], 2.5)) < 1e-12);
});
