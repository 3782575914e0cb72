// Rates of timed joint samples against joint limits: the ratios r_v, r_a, r_j (largest
// |rate| / limit over joints and samples) that decide the uniform time stretch. The rates are
// the shared divided differences of robot/math/divided-differences.ts (also used by safety).
import { columnRates, newColumnRates } from '../../math/divided-differences.js';
import type { RateLimits } from './joint-move.js';

export interface LimitRatios {
  velocity: number;
  acceleration: number;
  jerk: number;
  /** Joint and sample index (where the differences end) of the largest ratio after α-weighting. */
  joint: number;
  sample: number;
}

const rates = newColumnRates();

/** Ratios for samples q (count × joints, row-major) at strictly increasing times t. */
export function limitRatios(
  t: ArrayLike<number>,
  q: ArrayLike<number>,
  count: number,
  joints: number,
  limits: readonly RateLimits[],
): LimitRatios {
  const r: LimitRatios = { velocity: 0, acceleration: 0, jerk: 0, joint: -1, sample: -1 };
  // worst² and worst³, a little low: √r_a or ∛r_j can beat worst only above them, so the roots
  // are taken only for candidates (the comparison that decides is the exact one below).
  let worst = 0,
    worst2 = 0,
    worst3 = 0;
  for (let j = 0; j < joints; j++) {
    const lim = limits[j];
    const { velocity, acceleration, jerk } = columnRates(t, q, joints, j, count, rates);
    for (let k = 1; k < count; k++) {
      // NaN (too few samples before k) compares false and is skipped.
      const rv = Math.abs(velocity[k]) / lim.velocity;
      const ra = Math.abs(acceleration[k]) / lim.acceleration;
      const rj = Math.abs(jerk[k]) / lim.jerk;
      if (rv > r.velocity) r.velocity = rv;
      if (ra > r.acceleration) r.acceleration = ra;
      if (rj > r.jerk) r.jerk = rj;
      if (!(rv > worst || ra > worst2 || rj > worst3)) continue;
      // α-weighted: the stretch each ratio needs on its own.
      const weighted = Math.max(rv, ra >= 0 ? Math.sqrt(ra) : 0, rj >= 0 ? Math.cbrt(rj) : 0);
      if (weighted > worst) {
        worst = weighted;
        worst2 = worst * worst * (1 - 1e-12);
        worst3 = worst * worst * worst * (1 - 1e-12);
        r.joint = j;
        r.sample = k;
      }
    }
  }
  return r;
}

/**
 * Ratios of the sent rates at a fixed rate: |dq| / velocity, |ddq| / acceleration and
 * |ddq[k] − ddq[k−1]|·rate / jerk. The last is the jerk averaged over one tick, not three as
 * in the third divided difference of q: the exact ddq of a spline path, q''(s)·ṡ² + q'(s)·s̈,
 * changes with the spline's q''' and q'', which the progress limits do not bound, so the
 * three-tick average can hide a one-tick peak over the limit (the controller may check it).
 */
export function sentRatios(
  qd: ArrayLike<number>,
  qdd: ArrayLike<number>,
  count: number,
  joints: number,
  rate: number,
  limits: readonly RateLimits[],
): LimitRatios {
  const r: LimitRatios = { velocity: 0, acceleration: 0, jerk: 0, joint: -1, sample: -1 };
  let worst = 0;
  for (let k = 0; k < count; k++) {
    for (let j = 0; j < joints; j++) {
      const lim = limits[j],
        i = k * joints + j;
      const rv = Math.abs(qd[i]) / lim.velocity;
      const ra = Math.abs(qdd[i]) / lim.acceleration;
      const rj = k > 0 ? (Math.abs(qdd[i] - qdd[i - joints]) * rate) / lim.jerk : 0;
      r.velocity = Math.max(r.velocity, rv);
      r.acceleration = Math.max(r.acceleration, ra);
      r.jerk = Math.max(r.jerk, rj);
      const weighted = Math.max(rv, Math.sqrt(ra), Math.cbrt(rj));
      if (weighted > worst) {
        worst = weighted;
        r.joint = j;
        r.sample = k;
      }
    }
  }
  return r;
}

/** The larger of two ratio sets per quantity; joint and sample from the one needing the larger stretch. */
export function worseRatios(a: LimitRatios, b: LimitRatios): LimitRatios {
  const at = stretchFactor(b) > stretchFactor(a) ? b : a;
  return {
    velocity: Math.max(a.velocity, b.velocity),
    acceleration: Math.max(a.acceleration, b.acceleration),
    jerk: Math.max(a.jerk, b.jerk),
    joint: at.joint,
    sample: at.sample,
  };
}

/** α = 1.001·max(1, r_v, √r_a, ∛r_j) when any ratio exceeds 1, else 1. */
export function stretchFactor(r: LimitRatios): number {
  const m = Math.max(r.velocity, Math.sqrt(r.acceleration), Math.cbrt(r.jerk));
  return m > 1 ? 1.001 * m : 1;
}
