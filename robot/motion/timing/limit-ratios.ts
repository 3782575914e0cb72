// Finite-difference rates of timed joint samples against joint limits: the ratios r_v, r_a,
// r_j (largest |rate| / limit over joints and samples) that decide the uniform time stretch.
import type { RateLimits } from './joint-move.js';

export interface LimitRatios {
  velocity: number;
  acceleration: number;
  jerk: number;
  /** Joint and first sample index of the largest of the three ratios after α-weighting. */
  joint: number;
  sample: number;
}

/**
 * Ratios for samples q (count × joints, row-major) at strictly increasing times t.
 * Velocity on each interval, acceleration at each inner sample
 * ((v_k − v_{k−1}) / half the span), jerk between inner samples; for a uniform step these are
 * the usual first, second and third differences divided by dt, dt², dt³.
 */
export function limitRatios(
  t: ArrayLike<number>,
  q: ArrayLike<number>,
  count: number,
  joints: number,
  limits: readonly RateLimits[],
): LimitRatios {
  const r: LimitRatios = { velocity: 0, acceleration: 0, jerk: 0, joint: -1, sample: -1 };
  let worst = 0;
  const note = (weighted: number, j: number, k: number): void => {
    if (weighted > worst) {
      worst = weighted;
      r.joint = j;
      r.sample = k;
    }
  };
  for (let j = 0; j < joints; j++) {
    const lim = limits[j];
    let vPrev = 0, aPrev = 0;
    for (let k = 0; k + 1 < count; k++) {
      const dt = t[k + 1] - t[k];
      const v = (q[(k + 1) * joints + j] - q[k * joints + j]) / dt;
      const rv = Math.abs(v) / lim.velocity;
      if (rv > r.velocity) r.velocity = rv;
      note(rv, j, k);
      if (k > 0) {
        const a = (v - vPrev) / (0.5 * (t[k + 1] - t[k - 1]));
        const ra = Math.abs(a) / lim.acceleration;
        if (ra > r.acceleration) r.acceleration = ra;
        note(Math.sqrt(ra), j, k);
        if (k > 1) {
          const jk = (a - aPrev) / (t[k] - t[k - 1]);
          const rj = Math.abs(jk) / lim.jerk;
          if (rj > r.jerk) r.jerk = rj;
          note(Math.cbrt(rj), j, k - 1);
        }
        aPrev = a;
      }
      vPrev = v;
    }
  }
  return r;
}

/** α = 1.001·max(1, r_v, √r_a, ∛r_j) when any ratio exceeds 1, else 1. */
export function stretchFactor(r: LimitRatios): number {
  const m = Math.max(r.velocity, Math.sqrt(r.acceleration), Math.cbrt(r.jerk));
  return m > 1 ? 1.001 * m : 1;
}
