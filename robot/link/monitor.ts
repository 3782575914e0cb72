// What the daemon watches while an arm moves: the reference it sent (joint positions at a fixed
// rate from the trajectory's start), the tracking error of the measured joints against it, and
// whether the arm has settled at the goal. Pure: times are seconds on one clock, chosen by the caller.
import type { SettleCriteria } from '../description/types.js';

/** A sent trajectory: `count` rows of `joints` positions, row i at i/rate after the start. */
export interface SentReference {
  rate: number;
  joints: number;
  count: number;
  q: ArrayLike<number>;
}

/** Reference position of joint j at time τ after the start: linear between rows, held outside. */
export function referenceAt(ref: SentReference, tau: number, j: number): number {
  const x = Math.min(Math.max(tau * ref.rate, 0), ref.count - 1);
  const i = Math.min(Math.floor(x), ref.count - 2);
  if (i < 0) return ref.q[j]!;
  const f = x - i;
  return ref.q[i * ref.joints + j]! * (1 - f) + ref.q[(i + 1) * ref.joints + j]! * f;
}

export interface TrackingError {
  /** Largest |measured − reference| over the joints (rad or m) and the joint where it occurs. */
  error: number;
  joint: number;
}

export function trackingError(ref: SentReference, tau: number, measured: ArrayLike<number>): TrackingError {
  let error = 0,
    joint = 0;
  for (let j = 0; j < ref.joints; j++) {
    const e = Math.abs(measured[j]! - referenceAt(ref, tau, j));
    if (e > error) {
      error = e;
      joint = j;
    }
  }
  return { error, joint };
}

interface Sample {
  t: number;
  q: number[];
}

/**
 * Settling at a goal ("10 samples over ≥ 0.3 s"): the arm has settled at time t when its last
 * samples — at least `samples` of them, reaching back at least `minWindow` seconds — are all
 * within `positionTolerance` of the goal with speed ≤ `velocityTolerance`, and no joint moved
 * more than `span` across them. A sample outside the tolerances starts the window afresh.
 */
export class SettleDetector {
  /** The current run of good samples, trimmed to the shortest window that qualifies. */
  private window: Sample[] = [];

  constructor(
    private readonly criteria: SettleCriteria,
    private readonly goal: readonly number[],
  ) {}

  /** Adds one measured sample (times increasing); returns true once settled. */
  push(t: number, q: readonly number[], dq: readonly number[]): boolean {
    const c = this.criteria;
    const good =
      q.every((x, j) => Math.abs(x - this.goal[j]!) <= c.positionTolerance) &&
      dq.every((v) => Math.abs(v) <= c.velocityTolerance);
    if (!good) {
      this.window = [];
      return false;
    }
    this.window.push({ t, q: [...q] });
    const w = this.window;
    while (w.length > c.samples && w[1]!.t <= t - c.minWindow) w.shift();
    if (w.length < c.samples || t - w[0]!.t < c.minWindow) return false;
    for (let j = 0; j < q.length; j++) {
      let lo = Infinity,
        hi = -Infinity;
      for (const s of w) {
        lo = Math.min(lo, s.q[j]!);
        hi = Math.max(hi, s.q[j]!);
      }
      if (hi - lo > c.span) return false;
    }
    return true;
  }
}
