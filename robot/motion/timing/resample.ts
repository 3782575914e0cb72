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
 */
export function resampleSegments(segments: readonly TimedSegment[], rate: number, hold: number): SampledTrajectory {
  const joints = segments[0].path.joints;
  const total = segments.reduce((sum, seg) => sum + seg.duration, 0);
  // The tick at (or just past) the end carries the final position; 1e-9 absorbs rounding of total·rate.
  const motionTicks = Math.ceil(total * rate - 1e-9) + 1;
  const count = motionTicks + Math.round(hold * rate);
  const q = new Float64Array(count * joints);
  const qd = new Float64Array(count * joints);
  const qdd = new Float64Array(count * joints);
  const row = new Float64Array(joints);
  const d1 = new Float64Array(joints);
  const d2 = new Float64Array(joints);
  const state: KinState = newKinState();
  let seg = 0, offset = 0, k = 0;
  let m2 = splineCurvatures(segments[0].s, segments[0].path.q, segments[0].path.samples, joints);
  for (let i = 0; i < count; i++) {
    const time = i / rate;
    while (seg < segments.length - 1 && time >= offset + segments[seg].duration) {
      offset += segments[seg].duration;
      seg++;
      k = 0;
      m2 = splineCurvatures(segments[seg].s, segments[seg].path.q, segments[seg].path.samples, joints);
    }
    const cur = segments[seg];
    const n = cur.path.samples;
    const local = time - offset;
    if (local >= cur.duration) {
      row.set(cur.path.q.subarray((n - 1) * joints, n * joints));
    } else {
      sampleProfile(cur.profile, local / cur.scale, state);
      const x = state.p, sd = state.v / cur.scale, sdd = state.a / (cur.scale * cur.scale);
      while (k < n - 2 && cur.s[k + 1] <= x) k++;
      evalSpline(cur.s, cur.path.q, m2, joints, k, x, row, d1, d2);
      for (let j = 0; j < joints; j++) {
        qd[i * joints + j] = d1[j] * sd;
        qdd[i * joints + j] = d2[j] * sd * sd + d1[j] * sdd;
      }
    }
    q.set(row, i * joints);
  }
  return { rate, joints, count, q, qd, qdd, motionEnd: total };
}
