// Surface distance from a capsule (segment + radius; a point when both ends coincide) to a static
// obstacle: box, sphere or capsule. Negative when they overlap (for a box: minus the depth).
import type { Obstacle } from '../description/types.js';
import { segmentDistance } from './segment-distance.js';

// Reused so the per-sample check allocates nothing.
const scratch = new Float64Array(6);
const other = new Float64Array(6);
const local = new Float64Array(6);

/** Capsule with axis s[pa..pa+2]–s[pb..pb+2] and radius r against obstacle o (m). */
export function obstacleDistance(s: ArrayLike<number>, pa: number, pb: number, r: number, o: Obstacle): number {
  const e = scratch;
  for (let i = 0; i < 3; i++) {
    e[i] = s[pa + i];
    e[3 + i] = s[pb + i];
  }
  switch (o.shape) {
    case 'sphere':
      other.set(o.center, 0);
      return segmentDistance(e, 0, 3, other, 0, 0) - r - o.radius;
    case 'capsule': {
      other.set(o.a, 0);
      other.set(o.b, 3);
      return segmentDistance(e, 0, 3, other, 0, 3) - r - o.radius;
    }
    case 'box':
      return segmentBoxDistance(e, o.pose, o.half) - r;
  }
}

/** Golden-section steps: the bracket shrinks by 0.618^60 ≈ 3e-13 of the segment length. */
const STEPS = 60;
const INV_PHI = (Math.sqrt(5) - 1) / 2;

/**
 * Signed distance of segment e (world) to a centred box of half-size h placed by `pose`. The
 * signed distance to a convex set is convex along a segment, so a golden-section search finds its minimum.
 */
export function segmentBoxDistance(e: Float64Array, pose: Float64Array, h: readonly number[]): number {
  const l = toLocal(e, pose);
  return minAlong((t) => boxSignedDistance(l, t, h));
}

/** Signed distance of segment e (world) to an upright solid cylinder (axis = local z, centred) placed by `pose`. */
export function segmentCylinderDistance(e: Float64Array, pose: Float64Array, radius: number, half: number): number {
  const l = toLocal(e, pose);
  return minAlong((t) => cylinderSignedDistance(l, t, radius, half));
}

/** Endpoints of segment e in the frame placed by `pose`: Rᵀ(p − t), into the shared scratch. */
function toLocal(e: Float64Array, pose: Float64Array): Float64Array {
  const l = local;
  for (let k = 0; k < 6; k += 3) {
    const dx = e[k] - pose[3],
      dy = e[k + 1] - pose[7],
      dz = e[k + 2] - pose[11];
    for (let i = 0; i < 3; i++) l[k + i] = pose[i] * dx + pose[4 + i] * dy + pose[8 + i] * dz;
  }
  return l;
}

/** Minimum over t in [0, 1] of a convex f, by golden-section search. */
function minAlong(f: (t: number) => number): number {
  let lo = 0,
    hi = 1;
  let m1 = hi - INV_PHI * (hi - lo),
    m2 = lo + INV_PHI * (hi - lo);
  let f1 = f(m1),
    f2 = f(m2);
  for (let k = 0; k < STEPS; k++) {
    if (f1 <= f2) {
      hi = m2;
      m2 = m1;
      f2 = f1;
      m1 = hi - INV_PHI * (hi - lo);
      f1 = f(m1);
    } else {
      lo = m1;
      m1 = m2;
      f1 = f2;
      m2 = lo + INV_PHI * (hi - lo);
      f2 = f(m2);
    }
  }
  return Math.min(f(0), f(1), f1, f2);
}

/** Signed distance from the point l_a + t (l_b − l_a) to the box |x_i| ≤ h_i. */
function boxSignedDistance(l: Float64Array, t: number, h: readonly number[]): number {
  let outside = 0,
    inside = -Infinity;
  for (let i = 0; i < 3; i++) {
    const q = Math.abs(l[i] + t * (l[3 + i] - l[i])) - h[i];
    if (q > 0) outside += q * q;
    inside = Math.max(inside, q);
  }
  return outside > 0 ? Math.sqrt(outside) : inside;
}

/** Signed distance from the point l_a + t (l_b − l_a) to the cylinder x² + y² ≤ r², |z| ≤ half. */
function cylinderSignedDistance(l: Float64Array, t: number, r: number, half: number): number {
  const x = l[0] + t * (l[3] - l[0]),
    y = l[1] + t * (l[4] - l[1]),
    z = l[2] + t * (l[5] - l[2]);
  const qr = Math.hypot(x, y) - r,
    qz = Math.abs(z) - half;
  const outside = Math.hypot(Math.max(qr, 0), Math.max(qz, 0));
  return outside > 0 ? outside : Math.max(qr, qz);
}
