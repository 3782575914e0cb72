// Interpolation of timed joint points the way trajectory controllers do it: linear between
// positions only, cubic Hermite when velocities are given, quintic when accelerations are too.
import type { TrajectoryPoint } from '../link/protocol.js';

export interface JointSample {
  q: number[];
  dq: number[];
}

/** Samples the points at time `t` (seconds after the first point); holds the ends outside. */
export function sampleTrajectory(points: readonly TrajectoryPoint[], t: number): JointSample {
  const first = points[0]!;
  const last = points[points.length - 1]!;
  if (t <= first.t) return { q: [...first.q], dq: first.q.map(() => 0) };
  if (t >= last.t) return { q: [...last.q], dq: last.q.map(() => 0) };
  const k = segmentIndex(points, t);
  const a = points[k]!;
  const b = points[k + 1]!;
  const h = b.t - a.t;
  const tau = t - a.t;
  const q: number[] = [];
  const dq: number[] = [];
  for (let j = 0; j < a.q.length; j++) {
    const c = coefficients(a, b, j, h);
    q.push(polyAt(c, tau, 0));
    dq.push(polyAt(c, tau, 1));
  }
  return { q, dq };
}

/** Index k with points[k].t ≤ t < points[k+1].t (binary search; t inside the range). */
function segmentIndex(points: readonly TrajectoryPoint[], t: number): number {
  let lo = 0;
  let hi = points.length - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (points[mid]!.t <= t) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Polynomial coefficients c0..c5 in τ ∈ [0, h] for joint j of segment a → b. */
export function coefficients(a: TrajectoryPoint, b: TrajectoryPoint, j: number, h: number): number[] {
  const out = new Float64Array(6);
  return Array.from(out.subarray(0, coefficientsInto(out, a, b, j, h)));
}

/** coefficients() into `out` without allocating (a check of 100,000 points runs it 600,000 times); returns their count. */
export function coefficientsInto(
  out: Float64Array,
  a: TrajectoryPoint,
  b: TrajectoryPoint,
  j: number,
  h: number,
): number {
  const q0 = a.q[j]!;
  const d = b.q[j]! - q0;
  out[0] = q0;
  if (a.dq === undefined || b.dq === undefined) {
    out[1] = d / h;
    return 2;
  }
  const v0 = a.dq[j]!;
  const v1 = b.dq[j]!;
  out[1] = v0;
  // Powers by multiplication: h ** k is a call, and this runs per joint and point.
  const h2 = h * h,
    h3 = h2 * h;
  if (a.ddq === undefined || b.ddq === undefined) {
    out[2] = (3 * d - (2 * v0 + v1) * h) / h2;
    out[3] = (-2 * d + (v0 + v1) * h) / h3;
    return 4;
  }
  const a0 = a.ddq[j]!;
  const a1 = b.ddq[j]!;
  out[2] = a0 / 2;
  out[3] = (20 * d - (8 * v1 + 12 * v0) * h - (3 * a0 - a1) * h2) / (2 * h3);
  out[4] = (-30 * d + (14 * v1 + 16 * v0) * h + (3 * a0 - 2 * a1) * h2) / (2 * h3 * h);
  out[5] = (12 * d - 6 * (v1 + v0) * h + (a1 - a0) * h2) / (2 * h3 * h2);
  return 6;
}

/** The polynomial with coefficients c[0..n) (c0 first) or its first or second derivative, at x. */
export function polyAt(c: ArrayLike<number>, x: number, order: 0 | 1 | 2, n = c.length): number {
  let s = 0;
  for (let i = n - 1; i >= order; i--) {
    const f = order === 0 ? 1 : order === 1 ? i : i * (i - 1);
    s = s * x + f * c[i]!;
  }
  return s;
}
