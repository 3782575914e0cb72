// The commanded joint reference of one simulated arm as a function of time: a chain of
// segments (hold, trajectory, brake), each valid from its start until the next one begins.
// Keeping it a function lets the arm read it `latency` seconds in the past.
import type { TrajectoryPoint } from '../link/protocol.js';
import { sampleTrajectory, type JointSample } from './interpolate.js';

type Segment =
  | { kind: 'hold'; from: number; q: number[] }
  | { kind: 'trajectory'; from: number; points: readonly TrajectoryPoint[] }
  | { kind: 'brake'; from: number; q0: number[]; v0: number[]; duration: number };

export class Reference {
  private segments: Segment[];

  constructor(q0: readonly number[], t0: number) {
    this.segments = [{ kind: 'hold', from: t0, q: [...q0] }];
  }

  /** Reference position and velocity at time t. */
  at(t: number): JointSample {
    return evaluate(this.segmentAt(t), t);
  }

  /** Holds position q from time `from` on. */
  hold(from: number, q: readonly number[]): void {
    this.replaceFrom({ kind: 'hold', from, q: [...q] });
  }

  /** Follows the points with point t = 0 at time `from`. */
  follow(from: number, points: readonly TrajectoryPoint[]): void {
    this.replaceFrom({ kind: 'trajectory', from, points });
  }

  /**
   * Brakes from the reference state at `from` to rest, every joint at constant deceleration
   * and all joints stopping together (so the stop stays on the path); the largest deceleration
   * is `decel` (rad/s²). Returns the braking time in seconds.
   */
  brake(from: number, decel: number): number {
    const s = this.at(from);
    const duration = Math.max(...s.dq.map(Math.abs)) / decel;
    if (duration === 0) this.hold(from, s.q);
    else this.replaceFrom({ kind: 'brake', from, q0: s.q, v0: s.dq, duration });
    return duration;
  }

  /** True when the reference is at rest from time t on (a hold, or a finished trajectory or brake). */
  restsAt(t: number): boolean {
    const last = this.segments[this.segments.length - 1]!;
    if (t < last.from) return false;
    if (last.kind === 'trajectory') return t >= last.from + last.points[last.points.length - 1]!.t;
    if (last.kind === 'brake') return t >= last.from + last.duration;
    return true;
  }

  /** Forgets segments that ended before time t (called with t − latency). */
  prune(t: number): void {
    let i = 0;
    while (i + 1 < this.segments.length && this.segments[i + 1]!.from <= t) i++;
    if (i) this.segments.splice(0, i);
  }

  private segmentAt(t: number): Segment {
    for (let i = this.segments.length - 1; i > 0; i--) if (this.segments[i]!.from <= t) return this.segments[i]!;
    return this.segments[0]!;
  }

  private replaceFrom(seg: Segment): void {
    while (this.segments.length > 1 && this.segments[this.segments.length - 1]!.from >= seg.from) this.segments.pop();
    if (this.segments.length === 1 && this.segments[0]!.from >= seg.from) this.segments = [];
    this.segments.push(seg);
  }
}

function evaluate(seg: Segment, t: number): JointSample {
  const tau = t - seg.from;
  switch (seg.kind) {
    case 'hold':
      return { q: [...seg.q], dq: seg.q.map(() => 0) };
    case 'trajectory':
      return sampleTrajectory(seg.points, tau);
    case 'brake': {
      const s = Math.min(Math.max(tau, 0), seg.duration);
      return {
        q: seg.q0.map((q, j) => q + seg.v0[j]! * s - (0.5 * seg.v0[j]! * s * s) / seg.duration),
        dq: seg.v0.map((v) => v * (1 - s / seg.duration)),
      };
    }
  }
}
