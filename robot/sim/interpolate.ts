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
  const q0 = a.q[j]!;
  const d = b.q[j]! - q0;
  if (a.dq === undefined || b.dq === undefined) return [q0, d / h];
  const v0 = a.dq[j]!;
  const v1 = b.dq[j]!;
  if (a.ddq === undefined || b.ddq === undefined) {
    return [q0, v0, (3 * d - (2 * v0 + v1) * h) / h ** 2, (-2 * d + (v0 + v1) * h) / h ** 3];
  }
  const a0 = a.ddq[j]!;
  const a1 = b.ddq[j]!;
  return [
    q0,
    v0,
    a0 / 2,
    (20 * d - (8 * v1 + 12 * v0) * h - (3 * a0 - a1) * h ** 2) / (2 * h ** 3),
    (-30 * d + (14 * v1 + 16 * v0) * h + (3 * a0 - 2 * a1) * h ** 2) / (2 * h ** 4),
    (12 * d - 6 * (v1 + v0) * h + (a1 - a0) * h ** 2) / (2 * h ** 5),
  ];
}

/** The polynomial with coefficients c (c0 first) or its first or second derivative, at x. */
export function polyAt(c: readonly number[], x: number, order: 0 | 1 | 2): number {
  let s = 0;
  for (let i = c.length - 1; i >= order; i--) {
    const f = order === 0 ? 1 : order === 1 ? i : i * (i - 1);
    s = s * x + f * c[i]!;
  }
  return s;
}
