// Unit quaternions as Float64Array(4) in [x, y, z, w] order (the order of GPT-Policy's
// `pose_xyzquat` and of the oracle CSVs). q and −q are the same rotation.
import type { Transform } from './transform.js';
import type { Vec3Like } from './vec3.js';

export type Quat = Float64Array;
export type QuatLike = ArrayLike<number>;

/** Below this 4D angle sin(θ) is too small to divide by; nlerp differs from slerp by ~θ³ < 1e-18. */
const NLERP_ANGLE = 1e-6;

export function quat(x = 0, y = 0, z = 0, w = 1): Quat {
  const q = new Float64Array(4);
  q[0] = x;
  q[1] = y;
  q[2] = z;
  q[3] = w;
  return q;
}

export function quatNorm(q: QuatLike): number {
  return Math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
}

export function quatNormalize(out: Quat, q: QuatLike): Quat {
  const n = quatNorm(q);
  out[0] = q[0] / n;
  out[1] = q[1] / n;
  out[2] = q[2] / n;
  out[3] = q[3] / n;
  return out;
}

export function quatDot(a: QuatLike, b: QuatLike): number {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3];
}

/** Hamilton product out = a ⊗ b (rotate by b, then by a). */
export function quatMultiply(out: Quat, a: QuatLike, b: QuatLike): Quat {
  const ax = a[0],
    ay = a[1],
    az = a[2],
    aw = a[3];
  const bx = b[0],
    by = b[1],
    bz = b[2],
    bw = b[3];
  out[0] = aw * bx + ax * bw + ay * bz - az * by;
  out[1] = aw * by - ax * bz + ay * bw + az * bx;
  out[2] = aw * bz + ax * by - ay * bx + az * bw;
  out[3] = aw * bw - ax * bx - ay * by - az * bz;
  return out;
}

/** Angle (rad, in [0, π]) of the rotation taking unit a to unit b. */
export function quatAngle(a: QuatLike, b: QuatLike): number {
  // 2·atan2(|a⁻¹b vector part|, |a·b|) is accurate near 0, unlike 2·acos(|a·b|).
  const d = Math.abs(quatDot(a, b));
  const ax = a[0],
    ay = a[1],
    az = a[2],
    aw = a[3];
  const bx = b[0],
    by = b[1],
    bz = b[2],
    bw = b[3];
  const x = aw * bx - ax * bw - ay * bz + az * by;
  const y = aw * by + ax * bz - ay * bw - az * bx;
  const z = aw * bz - ax * by + ay * bx - az * bw;
  return 2 * Math.atan2(Math.sqrt(x * x + y * y + z * z), d);
}

/**
 * Short-arc spherical interpolation between unit quaternions: t = 0 gives a, t = 1 gives b or −b,
 * constant angular rate about one axis. Falls back to normalised lerp when a ≈ ±b.
 */
export function slerp(out: Quat, a: QuatLike, b: QuatLike, t: number): Quat {
  let bx = b[0],
    by = b[1],
    bz = b[2],
    bw = b[3];
  if (a[0] * bx + a[1] * by + a[2] * bz + a[3] * bw < 0) {
    bx = -bx;
    by = -by;
    bz = -bz;
    bw = -bw;
  }
  // Angle between the 4-vectors from |a − b| and |a + b|: accurate at every angle, unlike acos(dot).
  const dx = a[0] - bx,
    dy = a[1] - by,
    dz = a[2] - bz,
    dw = a[3] - bw;
  const sx = a[0] + bx,
    sy = a[1] + by,
    sz = a[2] + bz,
    sw = a[3] + bw;
  const theta =
    2 * Math.atan2(Math.sqrt(dx * dx + dy * dy + dz * dz + dw * dw), Math.sqrt(sx * sx + sy * sy + sz * sz + sw * sw));
  let ka: number, kb: number;
  if (theta < NLERP_ANGLE) {
    ka = 1 - t;
    kb = t;
  } else {
    const s = Math.sin(theta);
    ka = Math.sin((1 - t) * theta) / s;
    kb = Math.sin(t * theta) / s;
  }
  out[0] = ka * a[0] + kb * bx;
  out[1] = ka * a[1] + kb * by;
  out[2] = ka * a[2] + kb * bz;
  out[3] = ka * a[3] + kb * bw;
  return quatNormalize(out, out);
}

/** Rotation part of `t` as a unit quaternion with w ≥ 0 (Shepperd's method). */
export function quatFromTransform(out: Quat, t: Transform): Quat {
  const m00 = t[0],
    m11 = t[5],
    m22 = t[10];
  const tr = m00 + m11 + m22;
  if (tr > 0) {
    const s = 2 * Math.sqrt(tr + 1);
    out[3] = 0.25 * s;
    out[0] = (t[9] - t[6]) / s;
    out[1] = (t[2] - t[8]) / s;
    out[2] = (t[4] - t[1]) / s;
  } else if (m00 > m11 && m00 > m22) {
    const s = 2 * Math.sqrt(1 + m00 - m11 - m22);
    out[3] = (t[9] - t[6]) / s;
    out[0] = 0.25 * s;
    out[1] = (t[1] + t[4]) / s;
    out[2] = (t[2] + t[8]) / s;
  } else if (m11 > m22) {
    const s = 2 * Math.sqrt(1 + m11 - m00 - m22);
    out[3] = (t[2] - t[8]) / s;
    out[0] = (t[1] + t[4]) / s;
    out[1] = 0.25 * s;
    out[2] = (t[6] + t[9]) / s;
  } else {
    const s = 2 * Math.sqrt(1 + m22 - m00 - m11);
    out[3] = (t[4] - t[1]) / s;
    out[0] = (t[2] + t[8]) / s;
    out[1] = (t[6] + t[9]) / s;
    out[2] = 0.25 * s;
  }
  if (out[3] < 0) {
    out[0] = -out[0];
    out[1] = -out[1];
    out[2] = -out[2];
    out[3] = -out[3];
  }
  return quatNormalize(out, out);
}

/** Transform from a position and a unit quaternion (xyzw). */
export function fromPose(position: Vec3Like, q: QuatLike, out: Transform = new Float64Array(12)): Transform {
  const x = q[0],
    y = q[1],
    z = q[2],
    w = q[3];
  out[0] = 1 - 2 * (y * y + z * z);
  out[1] = 2 * (x * y - z * w);
  out[2] = 2 * (x * z + y * w);
  out[4] = 2 * (x * y + z * w);
  out[5] = 1 - 2 * (x * x + z * z);
  out[6] = 2 * (y * z - x * w);
  out[8] = 2 * (x * z - y * w);
  out[9] = 2 * (y * z + x * w);
  out[10] = 1 - 2 * (x * x + y * y);
  out[3] = position[0];
  out[7] = position[1];
  out[11] = position[2];
  return out;
}
