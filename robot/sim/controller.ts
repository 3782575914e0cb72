// The simulated controller: a pure state machine on an injected clock (controller seconds).
// The transport calls receive() for each inbound message, tick() often, and publishes what
// drain() returns. It behaves as the protocol asks of a real controller (docs/protocol.md, "What a
// controller must do"): admission checks, expiry, preemption, stop to rest, heartbeat watch.
import {
  describeLimits,
  type CommandKind,
  type DescriptionMsg,
  type EventKind,
  type EventMsg,
  type HeartbeatEcho,
  type StateMsg,
} from '../link/protocol.js';
import {
  validateAvailability,
  validateGripper,
  validateHeartbeat,
  validateStop,
  validateTrajectory,
  type Checked,
} from '../link/protocol-validate.js';
import { checkJoints, checkLimits, checkStart, type Rejection } from './admit.js';
import { checkRates, checkTiming, type MotionRules } from './admit-motion.js';
import { ArmSlot } from './arm-slot.js';
import { FaultSchedule, type Fault } from './faults.js';
import type { SimRobot } from './robot.js';
import type { SimWorld } from './scene/world.js';

export interface SimOptions extends MotionRules {
  robotId: string;
  session: string;
  version: string;
  /** State messages per second. */
  rate: number;
  /** First-order lag τ and actuation latency, s. */
  lag: number;
  latency: number;
  /** Largest joint deceleration when stopping, rad/s². */
  decel: number;
  /** Rad: first point vs current position; end position to report `finished`. */
  startTolerance: number;
  goalTolerance: number;
  /** S after a trajectory's end to come within goalTolerance, else `aborted goal_tolerance`. */
  goalTime: number;
  /** Rad/s under which an arm counts as at rest. */
  restSpeed: number;
  /** Own tracking-error limit (rad) that aborts and latches a fault; null = leave it to the daemon. */
  trackingLimit: number | null;
  /** Longest heartbeat silence tolerated, s (the daemon's heartbeat may ask for less). */
  heartbeatTimeout: number;
  /** A tick this long (s) after the previous one is a stall: the arms hold, nothing resumes; null = heartbeatTimeout. */
  stallAfter: number | null;
  faults: Fault[];
  seed: number;
}

export const SIM_DEFAULTS: Omit<SimOptions, 'robotId' | 'session' | 'version'> = {
  rate: 100,
  lag: 0.05,
  latency: 0.01,
  decel: 3,
  startTolerance: 0.05,
  goalTolerance: 0.01,
  goalTime: 1,
  restSpeed: 0.01,
  trackingLimit: null,
  heartbeatTimeout: 0.5,
  stallAfter: null,
  minSpacing: 0.001,
  lateStart: 1,
  maxAhead: 60,
  limitTolerance: 0.02,
  faults: [],
  seed: 1,
};

export type Outbound = { type: 'state'; payload: StateMsg } | { type: 'events'; payload: EventMsg };
export type InboundType = 'trajectory' | 'gripper' | 'stop' | 'heartbeat' | 'daemon_availability';

const MAX_STEP = 0.001;
const REMEMBERED_IDS = 1000;

export class SimController {
  readonly options: SimOptions;
  private readonly arms = new Map<string, ArmSlot>();
  private t: number;
  private outbox: { at: number; msg: Outbound }[] = [];
  /** Commands held back by a `late` fault until `at`. */
  private inbox: { at: number; type: 'trajectory' | 'gripper'; payload: unknown }[] = [];
  private stateSeq = 0;
  private eventSeq = 0;
  private nextStateAt: number;
  private hb: { lastRx: number; timeout: number; session: string; echo: HeartbeatEcho } | null = null;
  private daemonOffline = false;
  private wasLive = false;
  private seen: string[] = [];
  private stops: { id: string; arm: string | null; arms: string[] }[] = [];
  private readonly faults: FaultSchedule;

  constructor(
    private readonly robot: SimRobot,
    options: Partial<SimOptions> & Pick<SimOptions, 'session' | 'version'>,
    private readonly t0: number,
    /** The workcell the arms act in (objects, grasps, collisions); null = joints only. */
    private readonly world: SimWorld | null = null,
  ) {
    this.options = { robotId: robot.name, ...SIM_DEFAULTS, ...options };
    this.t = t0;
    this.nextStateAt = t0;
    for (const spec of robot.arms) {
      this.arms.set(
        spec.name,
        new ArmSlot(spec, t0, this.options, (now, id, command, event, reason, detail) =>
          this.event(now, id, spec.name, command, event, reason, detail),
        ),
      );
    }
    const joints = new Map(robot.arms.map((a) => [a.name, a.joints.map((j) => j.name)]));
    this.faults = new FaultSchedule(this.options.faults, joints, t0, this.options.seed);
  }

  description(now: number): DescriptionMsg {
    return {
      v: 1,
      robot: this.options.robotId,
      session: this.options.session,
      time: now,
      controller: { name: 'brainstem-sim', version: this.options.version },
      arms: this.robot.arms.map((a) => ({
        name: a.name,
        joints: a.joints.map((j) => j.name),
        gripper: a.gripper !== undefined,
        limits: a.joints.map(describeLimits),
      })),
      state_rate: this.options.rate,
      heartbeat_timeout: this.options.heartbeatTimeout,
    };
  }

  /** False while a `disconnect` fault holds the link down. */
  linkUp(now: number): boolean {
    return this.faults.linkUp(now);
  }

  /** Handles one inbound message (already JSON-parsed; availability as its string) at time now. */
  receive(now: number, type: InboundType, payload: unknown): void {
    this.tick(now);
    if (!this.linkUp(now) || this.faults.dropped(now)) return;
    if (type === 'heartbeat') this.onHeartbeat(now, payload);
    else if (type === 'daemon_availability') {
      const v = validateAvailability(payload);
      if (v.ok) this.daemonOffline = v.value === 'offline';
      this.watchHeartbeat(now);
    } else if (type === 'stop') this.onStop(now, payload);
    else {
      const late = this.faults.commandDelay(now);
      if (late > 0) this.inbox.push({ at: now + late, type, payload });
      else this.handleCommand(now, type, payload);
    }
  }

  private handleCommand(now: number, type: 'trajectory' | 'gripper', payload: unknown): void {
    if (type === 'gripper') this.onGripper(now, payload);
    else this.onTrajectory(now, payload);
  }

  /** Advances the simulation to time now in steps of at most 1 ms. */
  tick(now: number): void {
    if (now - this.t > this.stallBound()) this.stalled(now);
    while (this.t < now) {
      const ts = Math.min(now, this.t + MAX_STEP);
      while (this.inbox.length && this.inbox[0]!.at <= ts) {
        const m = this.inbox.shift()!;
        this.handleCommand(ts, m.type, m.payload);
      }
      for (const slot of this.arms.values()) slot.dyn.step(ts, this.faults.jointFaults(slot.spec.name, ts));
      if (this.world) this.simulate(this.world, ts);
      for (const slot of this.arms.values()) slot.watch(ts);
      this.watchHeartbeat(ts);
      this.finishStops(ts);
      this.t = ts;
      if (ts >= this.nextStateAt) this.sampleState(ts);
    }
  }

  /** Each arm's joint positions and gripper opening (0 closed … 1 open, null without a gripper) now. */
  armPositions(): { name: string; q: readonly number[]; gripper: number | null }[] {
    return [...this.arms].map(([name, slot]) => ({ name, q: slot.dyn.q, gripper: slot.dyn.gripper }));
  }

  /**
   * One workcell step at the measured joints: a grasp stops the fingers on the object (a real
   * gripper signals a grasp so), a collision stops the arm where it is and latches a fault.
   */
  private simulate(world: SimWorld, now: number): void {
    const joints = new Map<string, number[]>();
    const grippers = new Map<string, number | null>();
    for (const [name, slot] of this.arms) {
      joints.set(name, slot.dyn.q);
      grippers.set(name, slot.dyn.gripper);
    }
    for (const e of world.update(now, joints, grippers)) {
      // The fingers stop where they meet the object.
      if (e.kind === 'grasp') this.arms.get(e.arm)!.dyn.gripper = e.gripper;
      else if (e.kind === 'collision') {
        const c = e.contact;
        const detail = `link ${c.link} hit ${c.object === 'table' ? 'the table' : c.object} (${(c.depth * 1000).toFixed(1)} mm deep)`;
        this.event(now, null, c.arm, null, 'fault', 'collision', detail);
        this.arms.get(c.arm)!.collide(now);
      }
    }
    for (const [name, slot] of this.arms) slot.holdAt(world.gripStop(name));
  }

  /** Publishes a state and schedules the next at the nominal times t0 + k/rate (no drift; late ticks skip samples). */
  private sampleState(now: number): void {
    this.emitState(now);
    const k = Math.floor((now - this.t0) * this.options.rate + 1e-9) + 1;
    this.nextStateAt = this.t0 + k / this.options.rate;
  }

  private stallBound(): number {
    return this.options.stallAfter ?? this.options.heartbeatTimeout;
  }

  /**
   * The controller did not run from its last tick until now (the process was stopped or starved):
   * the drives held the arms where they were. The heartbeat is checked first, then every arm is
   * brought to rest with its commands aborted, so nothing planned before the stall resumes.
   */
  private stalled(now: number): void {
    const gap = now - this.t;
    for (const slot of this.arms.values()) slot.dyn.holdUntil(now);
    this.t = now;
    this.watchHeartbeat(now);
    this.event(
      now,
      null,
      null,
      null,
      'fault',
      'controller_stall',
      `no tick for ${gap.toFixed(1)} s (stall bound ${this.stallBound()} s); holding every arm`,
    );
    for (const slot of this.arms.values()) slot.halt(now, 'controller_stall');
    this.sampleState(now);
  }

  /** Messages due for publication by time now (state may be held back by a `delay` fault). */
  drain(now: number): Outbound[] {
    if (!this.linkUp(now)) {
      this.outbox = [];
      return [];
    }
    const due = this.outbox.filter((m) => m.at <= now).map((m) => m.msg);
    this.outbox = this.outbox.filter((m) => m.at > now);
    return due;
  }

  private live(now: number): boolean {
    return this.hb !== null && !this.daemonOffline && now - this.hb.lastRx <= this.hb.timeout;
  }

  private onHeartbeat(now: number, payload: unknown): void {
    const v = validateHeartbeat(payload);
    if (!v.ok) return this.event(now, null, null, null, 'fault', 'invalid', v.message);
    const m = v.value;
    if (this.hb && this.hb.session !== m.session && this.live(now)) this.loseDaemon(now, 'daemon_restarted');
    this.daemonOffline = false;
    this.hb = {
      lastRx: now,
      timeout: Math.min(this.options.heartbeatTimeout, m.timeout),
      session: m.session,
      echo: { seq: m.seq, daemon_time: m.time, rx_time: now },
    };
    this.wasLive = this.live(now);
  }

  /** Detects the heartbeat going silent (or the daemon going offline) and stops every arm. */
  private watchHeartbeat(now: number): void {
    const live = this.live(now);
    if (this.wasLive && !live) this.loseDaemon(now, this.daemonOffline ? 'daemon_offline' : 'heartbeat_lost');
    this.wasLive = live;
  }

  private loseDaemon(now: number, reason: string): void {
    this.event(now, null, null, null, 'fault', reason, 'bringing every arm to rest');
    for (const slot of this.arms.values()) slot.halt(now, reason);
  }

  private onTrajectory(now: number, payload: unknown): void {
    const m = this.command(now, 'trajectory', validateTrajectory, payload);
    if (!m) return;
    const slot = this.target(now, m);
    const start = Math.max(now, m.start_time);
    const problem =
      'reason' in slot
        ? slot
        : (checkJoints(m, slot.spec) ??
          this.admissible(slot, now) ??
          checkTiming(m, now, this.options) ??
          checkLimits(m, slot.spec) ??
          checkRates(m, slot.spec, this.options.limitTolerance) ??
          checkStart(m, slot.dyn.reference.at(start).q, this.options.startTolerance));
    if (problem || 'reason' in slot)
      return this.event(now, m.id, m.arm, 'trajectory', 'rejected', problem!.reason, problem!.detail);
    this.event(now, m.id, m.arm, 'trajectory', 'accepted');
    slot.follow(now, m, start);
  }

  private onGripper(now: number, payload: unknown): void {
    const m = this.command(now, 'gripper', validateGripper, payload);
    if (!m) return;
    const slot = this.target(now, m);
    const problem =
      'reason' in slot
        ? slot
        : slot.dyn.gripper === null
          ? { reason: 'no_gripper', detail: `arm ${m.arm} has no gripper` }
          : this.admissible(slot, now);
    if (problem || 'reason' in slot)
      return this.event(now, m.id, m.arm, 'gripper', 'rejected', problem!.reason, problem!.detail);
    slot.moveGripper(now, m.id, m.position);
  }

  private onStop(now: number, payload: unknown): void {
    const m = this.command(now, 'stop', validateStop, payload);
    if (!m) return;
    if (m.arm !== null && !this.arms.has(m.arm)) {
      return this.event(
        now,
        m.id,
        m.arm,
        'stop',
        'rejected',
        'unknown_arm',
        `arm must be one of ${[...this.arms.keys()].join(', ')}`,
      );
    }
    const names = m.arm === null ? [...this.arms.keys()] : [m.arm];
    this.event(now, m.id, m.arm, 'stop', 'accepted');
    for (const name of names) this.arms.get(name)!.halt(now, 'stop');
    this.stops.push({ id: m.id, arm: m.arm, arms: names });
    this.finishStops(now);
  }

  /** Expiry first, then the arm: the checks every timed command shares. */
  private target(now: number, m: { arm: string; expires_at: number }): ArmSlot | Rejection {
    if (now > m.expires_at)
      return { reason: 'expired', detail: `processed at controller time ${now}, after expires_at ${m.expires_at}` };
    return (
      this.arms.get(m.arm) ?? {
        reason: 'unknown_arm',
        detail: `arm must be one of ${[...this.arms.keys()].join(', ')}`,
      }
    );
  }

  /** Commands are refused without a live daemon, while braking, or with a latched fault. */
  private admissible(slot: ArmSlot, now: number): Rejection | null {
    return this.live(now) ? slot.busy() : { reason: 'no_heartbeat', detail: 'no daemon heartbeat within the timeout' };
  }

  /** A stop finishes when all its arms rest; finishing acknowledges their latched faults. */
  private finishStops(now: number): void {
    this.stops = this.stops.filter((s) => {
      const slots = s.arms.map((a) => this.arms.get(a)!);
      if (slots.some((x) => x.mode === 'stop')) return true;
      for (const x of slots) x.clearFaults();
      this.event(now, s.id, s.arm, 'stop', 'finished');
      return false;
    });
  }

  /** Validates a command; an invalid one is rejected (or reported as a fault without an id), a repeated id ignored. */
  private command<T extends { id: string }>(
    now: number,
    kind: CommandKind,
    check: (v: unknown) => Checked<T>,
    payload: unknown,
  ): T | null {
    const v = check(payload);
    if (!v.ok) {
      this.invalid(now, kind, payload, v.message);
      return null;
    }
    return this.remember(v.value.id) ? null : v.value;
  }

  private invalid(now: number, command: CommandKind, payload: unknown, message: string): void {
    const p = payload as { id?: unknown; arm?: unknown } | null;
    const id = typeof p?.id === 'string' && p.id.length > 0 && p.id.length <= 128 ? p.id : null;
    const arm = typeof p?.arm === 'string' && p.arm.length > 0 && p.arm.length <= 64 ? p.arm : null;
    if (id === null) this.event(now, null, arm, null, 'fault', 'invalid', message);
    else this.event(now, id, arm, command, 'rejected', 'invalid', message);
  }

  /** True when the id was seen before (QoS 1 may deliver twice). */
  private remember(id: string): boolean {
    if (this.seen.includes(id)) return true;
    this.seen.push(id);
    if (this.seen.length > REMEMBERED_IDS) this.seen.shift();
    return false;
  }

  private event(
    now: number,
    id: string | null,
    arm: string | null,
    command: CommandKind | null,
    event: EventKind,
    reason?: string,
    detail?: string,
  ): void {
    const payload: EventMsg = { v: 1, seq: this.eventSeq++, time: now, id, arm, command, event };
    if (reason !== undefined) payload.reason = reason;
    if (detail !== undefined) payload.detail = detail;
    this.emit(now, { type: 'events', payload });
  }

  private emitState(now: number): void {
    const arms: StateMsg['arms'] = {};
    for (const [name, slot] of this.arms) arms[name] = slot.state();
    const payload: StateMsg = {
      v: 1,
      seq: this.stateSeq++,
      time: now,
      arms,
      faults: this.live(now) ? [] : ['no_heartbeat'],
      hb: this.hb?.echo ?? null,
    };
    this.emit(now, { type: 'state', payload }, now + this.faults.stateDelay(now));
  }

  private emit(now: number, msg: Outbound, at = now): void {
    if (!this.linkUp(now) || this.faults.dropped(now)) return;
    this.outbox.push({ at, msg });
  }
}
