import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import {
  compose,
  fromAxisAngle,
  fromXyzRpy,
  identity,
  invert,
  rotationAngle,
  rotationVector,
  rotationX,
  rotationZ,
  transformPoint,
} from '../../../robot/math/transform.js';
import { vec3 } from '../../../robot/math/vec3.js';

const close = (a: ArrayLike<number>, b: ArrayLike<number>, tol: number, msg: string): void => {
  assert.equal(a.length, b.length, msg);
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${msg}: [${i}] ${a[i]} vs ${b[i]}`);
};

function randomUnit(r: Prng): number[] {
  const v = [r.normal(), r.normal(), r.normal()];
  const n = Math.hypot(v[0], v[1], v[2]);
  return v.map((x) => x / n);
}

test('fromXyzRpy: URDF order R = Rz(yaw)·Ry(pitch)·Rx(roll), hand-computed quarter turns', () => {
  // roll π/2 alone maps y to z.
  const t = fromXyzRpy([1, 2, 3], [Math.PI / 2, 0, 0]);
  close(transformPoint(vec3(), t, [0, 1, 0]), [1, 2, 4], 1e-15, 'roll');
  // yaw π/2 after pitch π/2: x → (pitch) −z → (yaw) −z.
  const u = fromXyzRpy([0, 0, 0], [0, Math.PI / 2, Math.PI / 2]);
  close(transformPoint(vec3(), u, [1, 0, 0]), [0, 0, -1], 1e-15, 'pitch then yaw, x');
  close(transformPoint(vec3(), u, [0, 1, 0]), [-1, 0, 0], 1e-15, 'pitch then yaw, y');
  // Matches the explicit product.
  const rx = rotationX(new Float64Array(12), 0.3);
  const ry = fromAxisAngle(new Float64Array(12), [0, 1, 0], -0.7);
  const rz = rotationZ(new Float64Array(12), 1.9);
  const p = compose(new Float64Array(12), rz, compose(new Float64Array(12), ry, rx));
  close(fromXyzRpy([0, 0, 0], [0.3, -0.7, 1.9]), p, 1e-15, 'rpy vs product');
});

test('compose with the inverse gives the identity (seed 11, 200 random transforms)', () => {
  const r = new Prng(11);
  for (let k = 0; k < 200; k++) {
    const t = fromXyzRpy(
      [r.uniform(-1, 1), r.uniform(-1, 1), r.uniform(-1, 1)],
      [r.uniform(-4, 4), r.uniform(-4, 4), r.uniform(-4, 4)],
    );
    close(compose(new Float64Array(12), t, invert(new Float64Array(12), t)), identity(), 1e-14, `case ${k}`);
  }
});

test('rotationVector inverts fromAxisAngle for angles in (0, π], including tiny and near-π (seed 5)', () => {
  const r = new Prng(5);
  const angles = [1e-12, 1e-8, 1e-4, 0.5, 2, Math.PI - 1e-3, Math.PI - 1e-7, Math.PI - 1e-10, Math.PI];
  for (const angle of angles) {
    for (let k = 0; k < 20; k++) {
      const axis = randomUnit(r);
      const v = rotationVector(vec3(), fromAxisAngle(new Float64Array(12), axis, angle));
      const got = Math.hypot(v[0], v[1], v[2]);
      assert.ok(Math.abs(got - angle) < 1e-9, `angle ${angle} axis ${axis}: |v| = ${got}`);
      // At π the axis sign is arbitrary; compare up to sign there.
      const dot = (v[0] * axis[0] + v[1] * axis[1] + v[2] * axis[2]) / got;
      const tol = angle > 1e-9 ? 1e-6 : 1e-3;
      assert.ok(
        angle >= Math.PI - 1e-9 ? Math.abs(Math.abs(dot) - 1) < tol : Math.abs(dot - 1) < tol,
        `angle ${angle}: axis dot ${dot}`,
      );
      assert.ok(
        Math.abs(rotationAngle(fromAxisAngle(new Float64Array(12), axis, angle)) - angle) < 1e-9,
        `rotationAngle ${angle}`,
      );
    }
  }
  close(rotationVector(vec3(), identity()), [0, 0, 0], 0, 'identity');
});
