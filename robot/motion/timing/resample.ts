// Resampling of timed path segments to the controller's fixed rate, with a final hold:
// tick i is at i/rate; within a segment s = profile(t / scale) and q = spline(s), so
// dq/dt = q'(s)·ṡ and d²q/dt² = q''(s)·ṡ² + q'(s)·s̈ exactly (ṡ = v/scale, s̈ = a/scale²).
import { type KinState, newKinState, sampleProfile } from './profile.js';
import type { TimedSegment } from './path-scaling.js';
import { evalSpline, splineCurvatures } from './spline.js';

/** Joint references at a fixed rate: tick i at i/rate, positions row-major (count × joints). */
export interface SampledTrajectory {
  rate: number;
  joints: number;
  count: number;
  q: Float64Array;
  /** Velocities and accelerations of the references (count × joints; 0 at and after the end). */
  qd: Float64Array;
  qdd: Float64Array;
  /** Time the motion ends (s); ticks after it hold the final position. */
  motionEnd: number;
}

/**
 * Samples consecutive segments (each rest-to-rest, so they join at rest) at `rate` Hz and
 * appends round(hold·rate) ticks at the final position after the first tick at or past the end.
 * `curvatures[i]` caches segment i's spline curvatures (filled here when missing): a caller that
 * resamples the same segments stretched in time (same paths and progress samples) passes the
 * same array again.
 */
export function resampleSegments(
  segments: readonly TimedSegment[],
  rate: number,
  hold: number,
  curvatures: (Float64Array | undefined)[] = [],
): SampledTrajectory {
  const joints = segments[0].path.joints;
  const total = segments.reduce((sum, seg) => sum + seg.duration, 0);
  // The tick at (or just past) the end carries the final position; 1e-9 absorbs rounding of total·rate.
  const motionTicks = Math.ceil(total * rate - 1e-9) + 1;
  const count = motionTicks + Math.round(hold * rate);
  const q = new Float64Array(count * joints);
  const qd = new Float64Array(count * joints);
  const qdd = new Float64Array(count * joints);
  const d1 = new Float64Array(joints);
  const d2 = new Float64Array(joints);
  const state: KinState = newKinState();
  const curvature = (i: number): Float64Array =>
    (curvatures[i] ??= splineCurvatures(segments[i].s, segments[i].path.q, segments[i].path.samples, joints));
  let seg = 0,
    offset = 0,
    k = 0;
  let m2 = curvature(0);
  for (let i = 0; i < count; i++) {
    const time = i / rate;
    while (seg < segments.length - 1 && time >= offset + segments[seg].duration) {
      offset += segments[seg].duration;
      seg++;
      k = 0;
      m2 = curvature(seg);
    }
    const cur = segments[seg];
    const n = cur.path.samples;
    const local = time - offset;
    const at = i * joints;
    if (local >= cur.duration) {
      for (let j = 0, last = (n - 1) * joints; j < joints; j++) q[at + j] = cur.path.q[last + j];
    } else {
      sampleProfile(cur.profile, local / cur.scale, state);
      const x = state.p,
        sd = state.v / cur.scale,
        sdd = state.a / (cur.scale * cur.scale);
      while (k < n - 2 && cur.s[k + 1] <= x) k++;
      evalSpline(cur.s, cur.path.q, m2, joints, k, x, q, at, d1, d2);
      for (let j = 0; j < joints; j++) {
        qd[at + j] = d1[j] * sd;
        qdd[at + j] = d2[j] * sd * sd + d1[j] * sdd;
      }
    }
  }
  return { rate, joints, count, q, qd, qdd, motionEnd: total };
}
