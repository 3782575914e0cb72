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
  let error = 0, joint = 0;
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
 * Settling at a goal: the arm has settled at time t when every sample of the last
 * `minWindow` seconds (at least `samples` of them, the run of good samples reaching back at
 * least that far) is within `positionTolerance` of the goal with speed ≤ `velocityTolerance`,
 * and no joint moved more than `span` within that window.
 */
export class SettleDetector {
  private window: Sample[] = [];
  /** Time of the first sample of the current run of good samples. */
  private runStart: number | null = null;

  constructor(
    private readonly criteria: SettleCriteria,
    private readonly goal: readonly number[],
  ) {}

  /** Adds one measured sample (times increasing); returns true once settled. */
  push(t: number, q: readonly number[], dq: readonly number[]): boolean {
    const c = this.criteria;
    const good = q.every((x, j) => Math.abs(x - this.goal[j]!) <= c.positionTolerance) && dq.every((v) => Math.abs(v) <= c.velocityTolerance);
    if (!good) {
      this.window = [];
      this.runStart = null;
      return false;
    }
    this.runStart ??= t;
    this.window.push({ t, q: [...q] });
    // Keep the newest samples covering minWindow, plus the one just before it.
    while (this.window.length > 1 && this.window[1]!.t <= t - c.minWindow) this.window.shift();
    if (t - this.runStart < c.minWindow) return false;
    const inWindow = this.window.filter((s) => s.t >= t - c.minWindow);
    if (inWindow.length < c.samples) return false;
    for (let j = 0; j < q.length; j++) {
      let lo = Infinity, hi = -Infinity;
      for (const s of inWindow) {
        lo = Math.min(lo, s.q[j]!);
        hi = Math.max(hi, s.q[j]!);
      }
      if (hi - lo > c.span) return false;
    }
    return true;
  }
}
