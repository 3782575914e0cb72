// One simulated arm's command state machine: hold → follow → hold, stop (braking) → hold or
// fault (latched). It owns the arm's dynamics and reports what happens through `emit`.
import type { ArmMode, ArmState, CommandKind, EventKind, TrajectoryMsg } from '../link/protocol.js';
import type { Rejection } from './admit.js';
import { ArmDynamics } from './arm-dynamics.js';
import { homeOf, type SimArm } from './robot.js';

export type ArmEvent = (
  now: number,
  id: string,
  command: CommandKind,
  event: EventKind,
  reason?: string,
  detail?: string,
) => void;

export interface ArmSlotOptions {
  lag: number;
  latency: number;
  decel: number;
  goalTolerance: number;
  goalTime: number;
  restSpeed: number;
  trackingLimit: number | null;
}

export class ArmSlot {
  readonly dyn: ArmDynamics;
  mode: ArmMode = 'hold';
  private traj: { id: string; start: number; end: number; goal: number[]; started: boolean } | null = null;
  private grip: string | null = null;
  /** Where the fingers hold an object (gripper position), or null. */
  private hold: number | null = null;
  private readonly latched = new Set<string>();

  constructor(
    readonly spec: SimArm,
    t0: number,
    private readonly o: ArmSlotOptions,
    private readonly emit: ArmEvent,
  ) {
    const rate = spec.gripper ? spec.gripper.speed / (spec.gripper.max - spec.gripper.min) : null;
    this.dyn = new ArmDynamics(homeOf(spec), t0, o.lag, o.latency, rate);
  }

  /** Why the arm takes no new command now (braking, latched fault), or null. */
  busy(): Rejection | null {
    if (this.mode === 'stop') return { reason: 'stopping', detail: 'the arm is stopping; wait for it to rest' };
    if (this.mode === 'fault')
      return { reason: 'fault', detail: `latched fault ${[...this.latched].join(', ')}; send stop to clear it` };
    return null;
  }

  /** Starts an admitted trajectory at `start`, replacing a running one. */
  follow(now: number, m: TrajectoryMsg, start: number): void {
    if (this.traj) this.emit(now, this.traj.id, 'trajectory', 'aborted', 'superseded', `replaced by ${m.id}`);
    const last = m.points[m.points.length - 1]!;
    this.dyn.reference.follow(start, m.points);
    this.traj = { id: m.id, start, end: start + last.t, goal: [...last.q], started: false };
    this.mode = 'follow';
    this.watch(now);
  }

  /** Moves the gripper toward an admitted position, replacing a running command. */
  moveGripper(now: number, id: string, position: number): void {
    if (this.grip) this.emit(now, this.grip, 'gripper', 'aborted', 'superseded', `replaced by ${id}`);
    this.emit(now, id, 'gripper', 'accepted');
    this.emit(now, id, 'gripper', 'started');
    this.grip = id;
    this.dyn.gripperTarget = position;
  }

  /** Aborts the arm's commands with `reason` and brakes it to rest. */
  halt(now: number, reason: string): void {
    if (this.traj) this.emit(now, this.traj.id, 'trajectory', 'aborted', reason);
    if (this.grip) this.emit(now, this.grip, 'gripper', 'aborted', reason);
    this.traj = null;
    this.grip = null;
    this.dyn.gripperTarget = this.dyn.gripper;
    this.dyn.reference.brake(now, this.o.decel);
    this.mode = 'stop';
  }

  /** The arm touched something: it stops where it is, its commands abort and a fault latches. */
  collide(now: number): void {
    this.latched.add('collision');
    this.dyn.holdUntil(now);
    this.halt(now, 'collision');
  }

  /**
   * The fingers hold an object at gripper position `stop` (null: nothing): they cannot close past
   * it, so a closing command ends there, `finished` with reason `grasped`.
   */
  holdAt(stop: number | null): void {
    this.hold = stop;
    const d = this.dyn;
    if (stop === null || d.gripper === null || d.gripperTarget === null) return;
    d.gripper = Math.max(d.gripper, stop);
    d.gripperTarget = Math.max(d.gripperTarget, stop);
  }

  /** A finished stop acknowledges latched faults. */
  clearFaults(): void {
    this.latched.clear();
    if (this.mode === 'fault') this.mode = 'hold';
  }

  /** Trajectory start/finish/goal tolerance, own tracking limit, gripper arrival, rest after braking. */
  watch(now: number): void {
    const tr = this.traj;
    if (tr && !tr.started && now >= tr.start) {
      tr.started = true;
      this.emit(now, tr.id, 'trajectory', 'started');
    }
    if (tr?.started && this.o.trackingLimit !== null) {
      const ref = this.dyn.reference.at(now - this.o.latency).q;
      const err = Math.max(...ref.map((r, j) => Math.abs(r - this.dyn.q[j]!)));
      if (err > this.o.trackingLimit) {
        this.latched.add('tracking_error');
        this.emit(
          now,
          tr.id,
          'trajectory',
          'fault',
          'tracking_error',
          `tracking error ${err.toFixed(4)} rad > ${this.o.trackingLimit}`,
        );
        return this.halt(now, 'tracking_error');
      }
    }
    if (tr && now >= tr.end + this.o.latency) {
      const err = Math.max(...tr.goal.map((g, j) => Math.abs(g - this.dyn.q[j]!)));
      const late = now >= tr.end + this.o.latency + this.o.goalTime;
      if (err <= this.o.goalTolerance) this.emit(now, tr.id, 'trajectory', 'finished');
      else if (late)
        this.emit(
          now,
          tr.id,
          'trajectory',
          'aborted',
          'goal_tolerance',
          `final error ${err.toFixed(4)} rad > ${this.o.goalTolerance}`,
        );
      if (err <= this.o.goalTolerance || late) {
        this.traj = null;
        this.mode = 'hold';
      }
    }
    if (this.grip && this.dyn.gripper === this.dyn.gripperTarget) {
      this.emit(now, this.grip, 'gripper', 'finished', this.hold === null ? undefined : 'grasped');
      this.grip = null;
    }
    if (this.mode === 'stop' && this.dyn.reference.restsAt(now) && this.dyn.speed() <= this.o.restSpeed) {
      this.mode = this.latched.size ? 'fault' : 'hold';
    }
  }

  state(): ArmState {
    const d = this.dyn;
    return {
      q: [...d.q],
      dq: [...d.dq],
      gripper: d.gripper,
      mode: this.mode,
      trajectory: this.traj?.id ?? null,
      faults: [...this.latched],
    };
  }
}
