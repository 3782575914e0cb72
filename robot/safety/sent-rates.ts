// The sent references' own rates, which a controller may enforce: dq against the velocity limit,
// ddq against the acceleration limit, and the differences (ddq[k] − ddq[k−1]) / (t[k] − t[k−1])
// against the jerk limit. Time scaling keeps the exact values within the limits; the
// tolerances are what sending adds: robot/tools/motion.ts rounds dq and ddq to POINT_DECIMALS
// (an error of at most half a unit of the last place), so a difference of two rounded ddq is off
// by at most one unit, over dt. A plan accepted here reaches a controller within limit + tolerance.
import { POINT_DECIMALS } from '../link/trajectory-size.js';
import type { ArmSafetyModel, JointTrajectory, SafetyViolation } from './trajectory-check.js';
import { LIMIT_SLACK } from './joint-limits.js';

/** Rounding of the sent dq and ddq (rad/s, rad/s²); the jerk's is ROUNDING.ddq·2 / dt. */
export const SENT_ROUNDING = { dq: 0.5 * 10 ** -POINT_DECIMALS.dq, ddq: 0.5 * 10 ** -POINT_DECIMALS.ddq } as const;

/** Allowances over the limit for the sent values at sample spacing dt (s). */
export function sentTolerance(dt: number): { velocity: number; acceleration: number; jerk: number } {
  return { velocity: SENT_ROUNDING.dq, acceleration: SENT_ROUNDING.ddq, jerk: (2 * SENT_ROUNDING.ddq) / dt };
}

type JointViolation = Extract<SafetyViolation, { joint: string }>;

/** The sent-reference violation of joint j at sample k (velocity, then acceleration, then jerk), if any. */
export function sentRateViolation(
  arm: ArmSafetyModel,
  t: JointTrajectory,
  j: number,
  k: number,
): JointViolation | undefined {
  const { dq, ddq, times } = t;
  if (!dq || !ddq) return undefined;
  const n = arm.chain.dof;
  const lim = arm.limits[j];
  const joint = arm.chain.jointNames[j];
  const dt = k > 0 ? times[k] - times[k - 1] : Infinity;
  const tol = sentTolerance(dt);
  const over = (x: number, limit: number, allowance: number) => Math.abs(x) > limit * (1 + LIMIT_SLACK) + allowance;
  const at = (code: JointViolation['code'], source: 'dq' | 'ddq' | 'ddq-difference', value: number, limit: number) =>
    ({ code, arm: arm.name, joint, sample: k, value, limit, source }) as JointViolation;
  const v = dq[k * n + j],
    a = ddq[k * n + j];
  if (over(v, lim.velocity, tol.velocity)) return at('joint-velocity', 'dq', v, lim.velocity);
  if (over(a, lim.acceleration, tol.acceleration)) return at('joint-acceleration', 'ddq', a, lim.acceleration);
  if (k === 0) return undefined;
  const jerk = (a - ddq[(k - 1) * n + j]) / dt;
  if (over(jerk, lim.jerk, tol.jerk)) return at('joint-jerk', 'ddq-difference', jerk, lim.jerk);
  return undefined;
}

/** What a message says of where a rate came from (SafetyViolation source). */
export function sourceText(source: 'dq' | 'ddq' | 'ddq-difference' | undefined, sample: number): string {
  if (source === 'dq') return ' (the sent dq)';
  if (source === 'ddq') return ' (the sent ddq)';
  if (source === 'ddq-difference') return ` (difference of the sent ddq from sample ${sample - 1})`;
  return '';
}
