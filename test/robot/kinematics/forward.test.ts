import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Prng } from '../../../robot/common/prng.js';
import { fixturePath } from '../../fixtures.js';
import { quat, quatAngle, quatFromTransform } from '../../../robot/math/quaternion.js';
import { compose, invert, rotationVector } from '../../../robot/math/transform.js';
import { vec3 } from '../../../robot/math/vec3.js';
import { forwardKinematics, geometricJacobian } from '../../../robot/kinematics/forward.js';
import { parseIkCases } from '../../../daemon/bench/ik-cases.js';
import { chainOf } from './robots.js';

const fk = (name: string, q: number[], options?: { flangeOnly?: boolean }): Float64Array => {
  const chain = chainOf(name, options);
  return forwardKinematics(chain, q, new Float64Array(12));
};

function assertPose(t: Float64Array, rows: number[][], tol: number, msg: string): void {
  for (let i = 0; i < 3; i++) {
    for (let j = 0; j < 4; j++)
      assert.ok(
        Math.abs(t[4 * i + j] - rows[i][j]) <= tol,
        `${msg}: T[${i}][${j}] = ${t[4 * i + j]}, expected ${rows[i][j]}`,
      );
  }
}

test('UR5e hand-computed poses: q = 0 and the upright pose', () => {
  // q = 0: the published check (-0.8172, -0.2329, 0.0628); flange z along world −y.
  assertPose(
    fk('ur5e', [0, 0, 0, 0, 0, 0]),
    [
      [1, 0, 0, -0.8172],
      [0, 0, -1, -0.2329],
      [0, 1, 0, 0.0628],
    ],
    1e-12,
    'q = 0',
  );
  // q = (0, −π/2, 0, −π/2, 0, 0): upper arm and forearm vertical; flange at the top, z along −y.
  assertPose(
    fk('ur5e', [0, -Math.PI / 2, 0, -Math.PI / 2, 0, 0]),
    [
      [-1, 0, 0, 0],
      [0, 0, -1, -0.2329],
      [0, -1, 0, 1.0794],
    ],
    1e-12,
    'upright',
  );
  // Base rotation by π/2 turns the q = 0 pose about z.
  assertPose(
    fk('ur5e', [Math.PI / 2, 0, 0, 0, 0, 0]),
    [
      [0, 0, 1, 0.2329],
      [1, 0, 0, -0.8172],
      [0, 1, 0, 0.0628],
    ],
    1e-12,
    'base π/2',
  );
});

test('Panda hand-computed poses: q = 0 and an elbow-bent pose (flange frame)', () => {
  assertPose(
    fk('panda', [0, 0, 0, 0, 0, 0, 0]),
    [
      [1, 0, 0, 0.088],
      [0, -1, 0, 0],
      [0, 0, -1, 0.926],
    ],
    1e-12,
    'q = 0',
  );
  // q4 = −π/2, q6 = π/2: forearm horizontal along +x, flange pointing down.
  // x = 0.0825 + 0.384 + 0.088 = 0.5545, z = 0.333 + 0.316 + 0.0825 − 0.107 = 0.6245.
  assertPose(
    fk('panda', [0, 0, 0, -Math.PI / 2, 0, Math.PI / 2, 0]),
    [
      [1, 0, 0, 0.5545],
      [0, -1, 0, 0],
      [0, 0, -1, 0.6245],
    ],
    1e-12,
    'elbow bent',
  );
});

test('YAM q = 0: folded rest pose, flange forward (published MuJoCo model), TCP 0.1347 m further', () => {
  assertPose(
    fk('yam', [0, 0, 0, 0, 0, 0], { flangeOnly: true }),
    [
      [0, 0, 1, 0.1103],
      [1, 0, 0, 0],
      [0, 1, 0, 0.164],
    ],
    1e-12,
    'flange',
  );
  // TCP = flange · Trans(0, 0, 0.1347) · Rz(−π/2): approach (z) forward, x pointing down.
  assertPose(
    fk('yam', [0, 0, 0, 0, 0, 0]),
    [
      [0, 0, 1, 0.245],
      [0, 1, 0, 0],
      [-1, 0, 0, 0.164],
    ],
    1e-12,
    'tcp',
  );
});

test('UR5e FK reproduces all 10,000 oracle poses', () => {
  const parsed = parseIkCases(readFileSync(fixturePath('oracles/ik-ur5e.csv'), 'utf8'));
  assert.ok(parsed.ok);
  const chain = chainOf('ur5e');
  const t = new Float64Array(12);
  const qt = quat();
  let worstP = 0,
    worstR = 0;
  for (const c of parsed.cases) {
    forwardKinematics(chain, c.truth, t);
    const dp = Math.hypot(t[3] - c.target[3], t[7] - c.target[7], t[11] - c.target[11]);
    const dr = quatAngle(quatFromTransform(qt, t), quatFromTransform(quat(), c.target));
    worstP = Math.max(worstP, dp);
    worstR = Math.max(worstR, dr);
    assert.ok(dp < 1e-12 && dr < 1e-7, `case ${c.id}: position error ${dp} m, rotation ${dr} rad`);
  }
  assert.ok(worstP < 1e-12, `worst position error ${worstP}`);
});

for (const name of ['ur5e', 'panda', 'yam']) {
  test(`${name}: geometric Jacobian matches central finite differences (seed 13, 200 configurations)`, () => {
    const chain = chainOf(name);
    const r = new Prng(13);
    const n = chain.dof;
    const frames = new Float64Array((n + 1) * 12);
    const tcp = new Float64Array(12);
    const J = new Float64Array(6 * n);
    const plus = new Float64Array(12),
      minus = new Float64Array(12),
      rel = new Float64Array(12),
      w = vec3();
    const h = 1e-6;
    for (let k = 0; k < 200; k++) {
      const q = Array.from({ length: n }, (_, i) =>
        r.uniform(Math.max(chain.lower[i], -4), Math.min(chain.upper[i], 4)),
      );
      forwardKinematics(chain, q, tcp, frames);
      geometricJacobian(chain, frames, tcp, J);
      for (let i = 0; i < n; i++) {
        const qp = q.slice(),
          qm = q.slice();
        qp[i] += h;
        qm[i] -= h;
        forwardKinematics(chain, qp, plus);
        forwardKinematics(chain, qm, minus);
        // ω from R(q+h)·R(q−h)ᵀ, in the base frame.
        rotationVector(w, compose(rel, plus, invert(rel, minus)));
        const fd = [
          (plus[3] - minus[3]) / (2 * h),
          (plus[7] - minus[7]) / (2 * h),
          (plus[11] - minus[11]) / (2 * h),
          w[0] / (2 * h),
          w[1] / (2 * h),
          w[2] / (2 * h),
        ];
        for (let row = 0; row < 6; row++) {
          assert.ok(
            Math.abs(J[row * n + i] - fd[row]) < 1e-7,
            `config ${k} q=[${q}] joint ${i} row ${row}: J ${J[row * n + i]} vs FD ${fd[row]}`,
          );
        }
      }
    }
  });
}
