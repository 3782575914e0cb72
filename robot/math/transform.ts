// Rigid transforms as Float64Array(12): the top three rows of a row-major homogeneous 4×4,
// [r00 r01 r02 px, r10 r11 r12 py, r20 r21 r22 pz]; R(i,j) = t[4i+j], p_i = t[4i+3].
import type { Vec3, Vec3Like } from './vec3.js';

export type Transform = Float64Array;

export function identity(out: Transform = new Float64Array(12)): Transform {
  out.fill(0);
  out[0] = 1;
  out[5] = 1;
  out[10] = 1;
  return out;
}

/** out = a · b (out may alias a or b). */
export function compose(out: Transform, a: Transform, b: Transform): Transform {
  const a00 = a[0],
    a01 = a[1],
    a02 = a[2],
    a03 = a[3];
  const a10 = a[4],
    a11 = a[5],
    a12 = a[6],
    a13 = a[7];
  const a20 = a[8],
    a21 = a[9],
    a22 = a[10],
    a23 = a[11];
  const b00 = b[0],
    b01 = b[1],
    b02 = b[2],
    b03 = b[3];
  const b10 = b[4],
    b11 = b[5],
    b12 = b[6],
    b13 = b[7];
  const b20 = b[8],
    b21 = b[9],
    b22 = b[10],
    b23 = b[11];
  out[0] = a00 * b00 + a01 * b10 + a02 * b20;
  out[1] = a00 * b01 + a01 * b11 + a02 * b21;
  out[2] = a00 * b02 + a01 * b12 + a02 * b22;
  out[3] = a00 * b03 + a01 * b13 + a02 * b23 + a03;
  out[4] = a10 * b00 + a11 * b10 + a12 * b20;
  out[5] = a10 * b01 + a11 * b11 + a12 * b21;
  out[6] = a10 * b02 + a11 * b12 + a12 * b22;
  out[7] = a10 * b03 + a11 * b13 + a12 * b23 + a13;
  out[8] = a20 * b00 + a21 * b10 + a22 * b20;
  out[9] = a20 * b01 + a21 * b11 + a22 * b21;
  out[10] = a20 * b02 + a21 * b12 + a22 * b22;
  out[11] = a20 * b03 + a21 * b13 + a22 * b23 + a23;
  return out;
}

/** Inverse of a rigid transform: [Rᵀ, −Rᵀp]. */
export function invert(out: Transform, a: Transform): Transform {
  const r00 = a[0],
    r01 = a[1],
    r02 = a[2],
    px = a[3];
  const r10 = a[4],
    r11 = a[5],
    r12 = a[6],
    py = a[7];
  const r20 = a[8],
    r21 = a[9],
    r22 = a[10],
    pz = a[11];
  out[0] = r00;
  out[1] = r10;
  out[2] = r20;
  out[4] = r01;
  out[5] = r11;
  out[6] = r21;
  out[8] = r02;
  out[9] = r12;
  out[10] = r22;
  out[3] = -(r00 * px + r10 * py + r20 * pz);
  out[7] = -(r01 * px + r11 * py + r21 * pz);
  out[11] = -(r02 * px + r12 * py + r22 * pz);
  return out;
}

/** out = T · p (a point). */
export function transformPoint(out: Vec3, t: Transform, p: Vec3Like): Vec3 {
  const x = p[0],
    y = p[1],
    z = p[2];
  out[0] = t[0] * x + t[1] * y + t[2] * z + t[3];
  out[1] = t[4] * x + t[5] * y + t[6] * z + t[7];
  out[2] = t[8] * x + t[9] * y + t[10] * z + t[11];
  return out;
}

export function translation(out: Transform, x: number, y: number, z: number): Transform {
  identity(out);
  out[3] = x;
  out[7] = y;
  out[11] = z;
  return out;
}

/** Rotation about x by `angle` (rad), no translation. */
export function rotationX(out: Transform, angle: number): Transform {
  identity(out);
  const c = Math.cos(angle),
    s = Math.sin(angle);
  out[5] = c;
  out[6] = -s;
  out[9] = s;
  out[10] = c;
  return out;
}

/** Rotation about z by `angle` (rad), no translation. */
export function rotationZ(out: Transform, angle: number): Transform {
  identity(out);
  const c = Math.cos(angle),
    s = Math.sin(angle);
  out[0] = c;
  out[1] = -s;
  out[4] = s;
  out[5] = c;
  return out;
}

/**
 * URDF origin: translation xyz, rotation R = Rz(yaw)·Ry(pitch)·Rx(roll) (fixed-axis roll, pitch, yaw).
 */
export function fromXyzRpy(xyz: Vec3Like, rpy: Vec3Like, out: Transform = new Float64Array(12)): Transform {
  const cr = Math.cos(rpy[0]),
    sr = Math.sin(rpy[0]);
  const cp = Math.cos(rpy[1]),
    sp = Math.sin(rpy[1]);
  const cy = Math.cos(rpy[2]),
    sy = Math.sin(rpy[2]);
  out[0] = cy * cp;
  out[1] = cy * sp * sr - sy * cr;
  out[2] = cy * sp * cr + sy * sr;
  out[3] = xyz[0];
  out[4] = sy * cp;
  out[5] = sy * sp * sr + cy * cr;
  out[6] = sy * sp * cr - cy * sr;
  out[7] = xyz[1];
  out[8] = -sp;
  out[9] = cp * sr;
  out[10] = cp * cr;
  out[11] = xyz[2];
  return out;
}

/** Rotation about the unit `axis` by `angle` (Rodrigues), no translation. */
export function fromAxisAngle(out: Transform, axis: Vec3Like, angle: number): Transform {
  const x = axis[0],
    y = axis[1],
    z = axis[2];
  const c = Math.cos(angle),
    s = Math.sin(angle),
    k = 1 - c;
  out[0] = c + x * x * k;
  out[1] = x * y * k - z * s;
  out[2] = x * z * k + y * s;
  out[3] = 0;
  out[4] = y * x * k + z * s;
  out[5] = c + y * y * k;
  out[6] = y * z * k - x * s;
  out[7] = 0;
  out[8] = z * x * k - y * s;
  out[9] = z * y * k + x * s;
  out[10] = c + z * z * k;
  out[11] = 0;
  return out;
}

/**
 * Rotation vector (axis·angle, angle in [0, π]) of the rotation part: the log map.
 * Stable near 0 (first-order) and near π (axis from the symmetric part).
 */
export function rotationVector(out: Vec3, t: Transform): Vec3 {
  const vx = 0.5 * (t[9] - t[6]);
  const vy = 0.5 * (t[2] - t[8]);
  const vz = 0.5 * (t[4] - t[1]);
  const s = Math.sqrt(vx * vx + vy * vy + vz * vz);
  const c = Math.max(-1, Math.min(1, 0.5 * (t[0] + t[5] + t[10] - 1)));
  if (s > 1e-7 || c > 0) {
    const angle = Math.atan2(s, c);
    const k = s > 1e-300 ? angle / s : 1;
    out[0] = vx * k;
    out[1] = vy * k;
    out[2] = vz * k;
    return out;
  }
  // Angle ≈ π: R ≈ 2uuᵀ − I, so u_i² = (R_ii + 1)/2; take the largest for precision.
  const angle = Math.atan2(s, c);
  const d0 = t[0],
    d1 = t[5],
    d2 = t[10];
  let ux: number, uy: number, uz: number;
  if (d0 >= d1 && d0 >= d2) {
    ux = Math.sqrt(Math.max(0, (d0 + 1) / 2));
    uy = (t[1] + t[4]) / (4 * ux);
    uz = (t[2] + t[8]) / (4 * ux);
  } else if (d1 >= d2) {
    uy = Math.sqrt(Math.max(0, (d1 + 1) / 2));
    ux = (t[1] + t[4]) / (4 * uy);
    uz = (t[6] + t[9]) / (4 * uy);
  } else {
    uz = Math.sqrt(Math.max(0, (d2 + 1) / 2));
    ux = (t[2] + t[8]) / (4 * uz);
    uy = (t[6] + t[9]) / (4 * uz);
  }
  // Keep the sign consistent with the (tiny) skew part so the result is continuous.
  const sign = ux * vx + uy * vy + uz * vz < 0 ? -1 : 1;
  out[0] = sign * angle * ux;
  out[1] = sign * angle * uy;
  out[2] = sign * angle * uz;
  return out;
}

/** Rotation angle (rad, in [0, π]) of the rotation part. */
export function rotationAngle(t: Transform): number {
  const vx = 0.5 * (t[9] - t[6]);
  const vy = 0.5 * (t[2] - t[8]);
  const vz = 0.5 * (t[4] - t[1]);
  return Math.atan2(Math.sqrt(vx * vx + vy * vy + vz * vz), 0.5 * (t[0] + t[5] + t[10] - 1));
}
