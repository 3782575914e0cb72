// Measured motion of one simulated arm: each joint follows the reference delayed by `latency`
// through a first-order lag τ (dq/dt = (r(t − latency) − q) / τ), integrated exactly for a
// reference that is linear over each step (first-order hold), so a ramp of slope v is followed
// v·τ behind after the transient. The gripper moves toward its target at a bounded rate.
import type { JointFaults } from './faults.js';
import { Reference } from './reference.js';

export class ArmDynamics {
  q: number[];
  dq: number[];
  gripper: number | null;
  gripperTarget: number | null;
  readonly reference: Reference;
  private t: number;

  /**
   * lag τ and latency in s; gripperRate in full strokes per second (null: no gripper).
   */
  constructor(
    q0: readonly number[],
    t0: number,
    private readonly lag: number,
    private readonly latency: number,
    private readonly gripperRate: number | null,
  ) {
    this.q = [...q0];
    this.dq = q0.map(() => 0);
    this.t = t0;
    this.reference = new Reference(q0, t0);
    this.gripper = gripperRate === null ? null : 1;
    this.gripperTarget = this.gripper;
  }

  /** Advances the measured state to time t1 (one integration step; keep steps ≤ 1 ms). */
  step(t1: number, faults: JointFaults): void {
    const dt = t1 - this.t;
    if (dt <= 0) return;
    const r0 = this.reference.at(this.t - this.latency);
    const r1 = this.reference.at(t1 - this.latency);
    const e = this.lag > 0 ? Math.exp(-dt / this.lag) : 0;
    for (let j = 0; j < this.q.length; j++) {
      if (faults.stalled.has(j)) {
        this.dq[j] = 0;
        continue;
      }
      const off = faults.offset?.[j] ?? 0;
      const a = r0.q[j]! + off;
      const b = r1.q[j]! + off;
      if (this.lag > 0) {
        const v = (b - a) / dt;
        this.q[j] = b - v * this.lag + (this.q[j]! - a + v * this.lag) * e;
        this.dq[j] = (b - this.q[j]!) / this.lag;
      } else {
        this.q[j] = b;
        this.dq[j] = r1.dq[j]!;
      }
    }
    if (this.gripper !== null && this.gripperTarget !== null) {
      const d = this.gripperTarget - this.gripper;
      const max = this.gripperRate! * dt;
      this.gripper = Math.abs(d) <= max ? this.gripperTarget : this.gripper + Math.sign(d) * max;
    }
    this.t = t1;
    this.reference.prune(t1 - this.latency);
  }

  /** Nothing ran from the last step until t1 (a stall): the arm stayed where it was, at rest, and holds there. */
  holdUntil(t1: number): void {
    this.t = Math.max(this.t, t1);
    this.dq.fill(0);
    this.reference.hold(this.t - this.latency, this.q);
    this.reference.prune(this.t - this.latency);
  }

  /** Largest |dq| over the joints (rad/s). */
  speed(): number {
    return Math.max(...this.dq.map(Math.abs));
  }
}
