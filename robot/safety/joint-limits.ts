// Joint limits of one arm's sampled trajectory: position (with the start allowance: sample 0 is
// the measured state and may sit a little outside a limit the path then leads back from), and
// velocity, acceleration and jerk from the divided differences of the timed samples
// (robot/math/divided-differences.ts, the same definition time scaling uses), then the sent dq,
// ddq and differences of ddq (sent-rates.ts).
import { columnRates, newColumnRates } from '../math/divided-differences.js';
import { StartAllowance, type StartVerdict } from './start-allowance.js';
import { sentRateViolation } from './sent-rates.js';
import type { ArmSafetyModel, JointTrajectory, SafetyViolation, StartNote } from './trajectory-check.js';

/** Slack for floating-point noise when comparing against a limit. */
export const LIMIT_SLACK = 1e-9;

const rates = newColumnRates();

export type JointViolation = Extract<SafetyViolation, { joint: string }>;

/** What a violation says of the start allowance: refused outright at the start, or worse than tolerated. */
export function startNote(verdict: StartVerdict, allowed: number, bound: number): { start?: StartNote } {
  if (verdict === 'beyond') return { start: { bound } };
  return allowed >= 0 ? { start: { tolerated: allowed } } : {};
}

/**
 * The earliest sample (lowest joint on a tie) where a joint leaves its position limits (beyond
 * what the start allowance tolerates) or the velocity, acceleration or jerk of the divided
 * differences ending there, or of the sent dq / ddq (sent-rates.ts), exceeds its limit.
 */
export function jointLimitViolation(arm: ArmSafetyModel, t: JointTrajectory): JointViolation | undefined {
  const n = arm.chain.dof;
  const count = t.times.length;
  const allow = new StartAllowance(n);
  let first: JointViolation | undefined;
  for (let j = 0; j < n; j++) {
    const lim = arm.limits[j];
    const joint = arm.chain.jointNames[j];
    const { velocity, acceleration, jerk } = columnRates(t.times, t.q, n, j, count, rates);
    // Only samples before the earliest violation so far can change the answer.
    const end = first ? first.sample : count;
    for (let k = 0; k < end; k++) {
      const x = t.q[k * n + j];
      const out = Math.max(lim.lower - x, x - lim.upper);
      const verdict = allow.admit(j, k, out > LIMIT_SLACK, out, arm.startTolerance);
      let v: JointViolation | undefined;
      // NaN (too few samples before k) compares false.
      if (verdict === 'worse' || verdict === 'beyond')
        v = {
          code: 'joint-position',
          arm: arm.name,
          joint,
          sample: k,
          value: x,
          limit: x < lim.lower ? lim.lower : lim.upper,
          ...startNote(verdict, allow.allowed[j], arm.startTolerance),
        };
      else if (Math.abs(velocity[k]) > lim.velocity * (1 + LIMIT_SLACK))
        v = { code: 'joint-velocity', arm: arm.name, joint, sample: k, value: velocity[k], limit: lim.velocity };
      else if (Math.abs(acceleration[k]) > lim.acceleration * (1 + LIMIT_SLACK))
        v = {
          code: 'joint-acceleration',
          arm: arm.name,
          joint,
          sample: k,
          value: acceleration[k],
          limit: lim.acceleration,
        };
      else if (Math.abs(jerk[k]) > lim.jerk * (1 + LIMIT_SLACK))
        v = { code: 'joint-jerk', arm: arm.name, joint, sample: k, value: jerk[k], limit: lim.jerk };
      else v = sentRateViolation(arm, t, j, k);
      if (v) {
        first = v;
        break;
      }
    }
  }
  return first;
}
