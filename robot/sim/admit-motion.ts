// The checks of a trajectory's timing and of the motion it asks for against the limits the
// controller describes: what it will execute, not what the sender says it is. A trajectory that
// fails any of them is refused before the arm moves (defence in depth behind the daemon's planner).
import type { TrajectoryMsg, TrajectoryPoint } from '../link/protocol.js';
import type { Rejection } from './admit.js';
import { coefficientsInto } from './interpolate.js';
import type { SimArm } from './robot.js';

export interface MotionRules {
  /** Smallest spacing of consecutive points, s (a controller cannot follow finer references). */
  minSpacing: number;
  /** Start times further in the past than this (s) are refused, not shifted. */
  lateStart: number;
  /** Start times and deadlines further ahead than this (s) are refused. */
  maxAhead: number;
  /** Relative allowance on velocity and acceleration limits (rounding, interpolation between samples). */
  limitTolerance: number;
}

/** Interior positions of a polynomial segment may pass a point's limit by this much (rad). */
const POSITION_SLACK = 1e-4;
/** Sub-samples per polynomial segment: one per 2.5 ms, between 4 and 64. */
const SUB_STEP = 0.0025;

/** Time rules: start not too late nor too far ahead, deadline not too far ahead, points not too dense. */
export function checkTiming(m: TrajectoryMsg, now: number, r: MotionRules): Rejection | null {
  if (m.start_time < now - r.lateStart)
    return {
      reason: 'start_late',
      detail: `start_time ${m.start_time} is ${(now - m.start_time).toFixed(3)} s before controller time ${now} (at most ${r.lateStart} s late)`,
    };
  if (m.start_time > now + r.maxAhead)
    return {
      reason: 'start_too_far',
      detail: `start_time ${m.start_time} is more than ${r.maxAhead} s after controller time ${now}`,
    };
  if (m.expires_at > now + r.maxAhead)
    return {
      reason: 'expiry_too_far',
      detail: `expires_at ${m.expires_at} is more than ${r.maxAhead} s after controller time ${now}`,
    };
  for (let k = 1; k < m.points.length; k++) {
    const h = m.points[k]!.t - m.points[k - 1]!.t;
    if (h < r.minSpacing - 1e-9)
      return {
        reason: 'sample_spacing',
        detail: `points[${k}].t − points[${k - 1}].t = ${h.toFixed(6)} s is below the minimum spacing ${r.minSpacing} s`,
      };
  }
  return null;
}

/**
 * Velocities and accelerations of the interpolated reference (sub-sampled where it is a
 * polynomial; finite differences of the positions where only positions are given) and the
 * positions between points, against the arm's limits.
 */
export function checkRates(m: TrajectoryMsg, arm: SimArm, tolerance: number): Rejection | null {
  const pts = m.points;
  const linear = pts[0]!.dq === undefined;
  const n = pts[0]!.q.length;
  // Reused across segments: the mean velocities of this segment and of the one before.
  let mean = new Float64Array(n);
  let before = new Float64Array(n);
  for (let k = 0; k + 1 < pts.length; k++) {
    const a = pts[k]!;
    const b = pts[k + 1]!;
    const h = b.t - a.t;
    for (let j = 0; j < n; j++) {
      mean[j] = (b.q[j]! - a.q[j]!) / h;
      // The message (a closure) only for a failure: this runs per joint and point.
      if (Math.abs(mean[j]!) > arm.joints[j]!.velocity * (1 + tolerance))
        return rate(arm, j, 'velocity', mean[j]!, tolerance, () => `between points[${k}] and points[${k + 1}]`);
    }
    if (linear && k > 0) {
      const span = (h + (a.t - pts[k - 1]!.t)) / 2;
      for (let j = 0; j < n; j++) {
        const acc = (mean[j]! - before[j]!) / span;
        if (Math.abs(acc) > arm.joints[j]!.acceleration * (1 + tolerance))
          return rate(arm, j, 'acceleration', acc, tolerance, () => `at points[${k}] (finite difference)`);
      }
    }
    [before, mean] = [mean, before];
    if (!linear) {
      const bad = checkSegment(a, b, k, arm, tolerance);
      if (bad) return bad;
    }
  }
  return null;
}

const coeffs = new Float64Array(6);

/** Sub-samples one cubic or quintic segment: positions within the limits, velocity and acceleration within theirs. */
function checkSegment(
  a: TrajectoryPoint,
  b: TrajectoryPoint,
  k: number,
  arm: SimArm,
  tolerance: number,
): Rejection | null {
  const h = b.t - a.t;
  const n = Math.min(64, Math.max(4, Math.ceil(h / SUB_STEP)));
  for (let j = 0; j < a.q.length; j++) {
    const c = coeffs;
    const len = coefficientsInto(c, a, b, j, h);
    const { name, lower, upper, velocity, acceleration } = arm.joints[j]!;
    const vmax = velocity * (1 + tolerance);
    const amax = acceleration * (1 + tolerance);
    for (let i = 0; i <= n; i++) {
      const tau = (h * i) / n;
      // Position, velocity and acceleration in one Horner pass (polyAt thrice, without its branches).
      let q = c[len - 1]!,
        v = 0,
        acc = 0;
      for (let e = len - 2; e >= 0; e--) {
        acc = acc * tau + 2 * v;
        v = v * tau + q;
        q = q * tau + c[e]!;
      }
      if (q >= lower - POSITION_SLACK && q <= upper + POSITION_SLACK && Math.abs(v) <= vmax && Math.abs(acc) <= amax)
        continue;
      const at = () => `at t = ${(a.t + tau).toFixed(4)} s (between points[${k}] and points[${k + 1}])`;
      if (q < lower - POSITION_SLACK || q > upper + POSITION_SLACK)
        return {
          reason: 'joint_limit',
          detail: `q[${j}] = ${q.toFixed(4)} ${at()} is outside [${lower}, ${upper}] (joint ${name})`,
        };
      return rate(arm, j, 'velocity', v, tolerance, at) ?? rate(arm, j, 'acceleration', acc, tolerance, at);
    }
  }
  return null;
}

function rate(
  arm: SimArm,
  j: number,
  kind: 'velocity' | 'acceleration',
  value: number,
  tolerance: number,
  where: () => string,
): Rejection | null {
  const joint = arm.joints[j]!;
  const limit = joint[kind];
  if (Math.abs(value) <= limit * (1 + tolerance)) return null;
  const unit = kind === 'velocity' ? 'rad/s' : 'rad/s²';
  return {
    reason: `${kind}_limit`,
    detail: `${kind} of joint ${joint.name} (q[${j}]) ${where()} is ${value.toFixed(4)} ${unit}, above its limit ${limit} ${unit} (tolerance ${tolerance * 100}%)`,
  };
}
