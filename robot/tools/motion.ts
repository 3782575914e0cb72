// One motion in flight: the planned trajectories are published (one per moving arm, same start
// time), then the controller's events and the measured state decide the outcome: tracking
// error above the limit → a jerk-limited stop, settle at the goal after the controller's
// `finished` → reached, a refusal, an abort, a lost or stale link, or no settling in time →
// failed. Whatever ends a motion while an arm may still move stops it first. Pure: time comes
// from the host.
import type { EventMsg, StateMsg, TrajectoryMsg, TrajectoryPoint } from '../link/protocol.js';
import { SettleDetector, trackingError, type SentReference } from '../link/monitor.js';
import type { ControllerSession } from '../link/controller-session.js';
import { armReports, degText, mmText, round6, type OutcomeStatus, type ToolOutcome } from './outcome.js';
import { planStopFrom, poseErrorTo, type MotionPlan, type PlannedArm } from './plan.js';
import type { RobotModel } from './robot-model.js';
import type { ToolName } from './schemas.js';
import { startLeadFor, startSkew, type StartOptions } from './motion-start.js';

export interface MotionOptions extends StartOptions {
  /** Largest |measured − reference| before the motion is stopped (rad). */
  trackingLimit: number;
  /** A command not taken by the controller within this time after sending is expired (s). */
  expiry: number;
  /** Longest wait for a stop to bring the arms to rest before reporting anyway (s). */
  stopTimeout: number;
}

export interface MotionHost {
  readonly model: RobotModel;
  readonly session: ControllerSession;
  readonly options: MotionOptions;
  /** Daemon clock (s). */
  now(): number;
  /** Publishes a trajectory; returns why it could not be handed to the transport, or null. */
  sendTrajectory(m: TrajectoryMsg): string | null;
  /** Publishes a stop of `arms`; returns its command id. */
  sendStop(arms: readonly string[], reason: string, now: number): string;
  newId(prefix: string): string;
}

export interface CallInfo {
  id: string;
  tool: ToolName;
  /** Daemon time the call arrived. */
  receivedAt: number;
  planMs: number;
}

export type Progress = (phase: string, detail?: Record<string, unknown>) => void;

interface ArmRun {
  planned: PlannedArm;
  id: string;
  ref: SentReference;
  goalQ: number[];
  accepted: boolean;
  /** Controller time the trajectory started, once `started` arrived. */
  startedAt: number | null;
  finished: boolean;
  settle: SettleDetector;
  settled: boolean;
}

/** An outcome's words for who stopped a motion, from the stop's reason code (policy_<reason> for an episode's). */
export function stoppedBy(reason: string): string {
  const own = reason.replace(/^policy_/, '');
  if (own === 'daemon_stop') return 'stopped because the daemon is stopping';
  if (own === 'client_disconnected') return 'stopped because its caller disconnected';
  if (own !== reason && own !== 'robot_stop') return `stopped as its policy episode was stopped (${own})`;
  return 'stopped by a stop call';
}

type Ending = { status: OutcomeStatus; reason?: string; message: string };

/**
 * Trajectory points from a plan's rows; positions to 1 nrad, rates to 1e-6 (shorter JSON). The
 * positions' step bounds what a controller's third differences add to the planned jerk: 8·0.5e-9
 * rad / (0.01 s)³ = 0.004 rad/s³ at 100 Hz (0.1 µrad added 0.4, past a 12 rad/s³ limit).
 */
export function trajectoryPoints(p: PlannedArm, rate: number): TrajectoryPoint[] {
  const n = p.joints.length;
  const points: TrajectoryPoint[] = new Array(p.count);
  // Plain loops: this runs between planning and publishing, on the path the latency target covers.
  for (let i = 0; i < p.count; i++) {
    const q: number[] = new Array(n),
      dq: number[] = new Array(n),
      ddq: number[] = new Array(n);
    for (let j = 0, k = i * n; j < n; j++, k++) {
      q[j] = Math.round(p.q[k]! * 1e9) / 1e9;
      dq[j] = Math.round(p.dq[k]! * 1e6) / 1e6;
      ddq[j] = Math.round(p.ddq[k]! * 1e5) / 1e5;
    }
    points[i] = { t: round6(i / rate), q, dq, ddq };
  }
  return points;
}

export class Motion {
  readonly done: Promise<ToolOutcome>;
  private resolve!: (o: ToolOutcome) => void;
  private readonly runs: ArmRun[];
  /** Planned start on the controller clock and the daemon-time deadlines. */
  private startC = 0;
  private answerBy = 0;
  private settleBy = 0;
  private publishMs: number | undefined;
  /** Set while stop commands (a stop, or stop trajectories) bring the arms to rest before reporting `ending`. */
  private stopping: {
    ids: Set<string>;
    smooth: boolean;
    until: number;
    ending: Ending;
    resting?: boolean;
    /** Smooth stops: the ids accepted so far, and when an unaccepted one gives way to the controller's stop. */
    accepted?: Set<string>;
    answerBy?: number;
  } | null = null;
  private finishedAt: number | null = null;

  constructor(
    private readonly host: MotionHost,
    private readonly call: CallInfo,
    private readonly plan: MotionPlan,
    private readonly progress: Progress,
  ) {
    this.done = new Promise((r) => (this.resolve = r));
    this.runs = plan.arms.map((p) => {
      const goalQ = Array.from(p.q.subarray((p.count - 1) * p.joints.length));
      return {
        planned: p,
        id: host.newId('t'),
        ref: { rate: plan.rate, joints: p.joints.length, count: p.count, q: p.q },
        goalQ,
        accepted: false,
        startedAt: null,
        finished: false,
        settle: new SettleDetector(host.model.arm(p.arm).settle, goalQ),
        settled: false,
      };
    });
  }

  get arms(): string[] {
    return this.runs.map((r) => r.planned.arm);
  }

  get finished(): boolean {
    return this.finishedAt !== null;
  }

  /** Command ids whose events belong to this motion. */
  owns(id: string): boolean {
    return this.runs.some((r) => r.id === id) || this.stopping?.ids.has(id) === true;
  }

  /**
   * Publishes every arm's trajectory with one common start time. Every arm's points are built
   * first and the lead grows with the messages' size, so the last arm's message is admitted
   * before start_time (a controller would shift a late one alone).
   */
  start(now: number): void {
    if (this.host.session.controllerTime(now) === null)
      return this.end(
        {
          status: 'unavailable',
          reason: 'no_clock',
          message: 'no clock estimate for the controller yet; wait for its state',
        },
        now,
      );
    const points = this.runs.map((r) => trajectoryPoints(r.planned, this.plan.rate));
    const { startLead, expiry } = this.host.options;
    const { lead } = startLeadFor(this.plan.arms, this.plan.rate, this.host.options);
    // The clock after building: that time is spent already.
    const at = this.host.now();
    const tc = this.host.session.controllerTime(at)!;
    this.startC = tc + lead;
    // The allowance for the messages' size holds for their expiry too (they take as long to arrive).
    const expiresAt = tc + expiry + (lead - startLead);
    this.answerBy = at + expiry + (lead - startLead) + 1;
    this.settleBy = at + lead + this.motionSpan();
    for (const [i, r] of this.runs.entries()) {
      const p = r.planned;
      const problem = this.host.sendTrajectory({
        v: 1,
        id: r.id,
        arm: p.arm,
        joints: p.joints,
        time: at,
        start_time: this.startC,
        expires_at: expiresAt,
        points: points[i]!,
      });
      if (problem)
        return this.halt(
          { status: 'failed', reason: 'link_down', message: `could not send the trajectory: ${problem}` },
          at,
        );
    }
    this.publishMs = round6((this.host.now() - this.call.receivedAt) * 1000);
    this.progress('sent', {
      trajectories: Object.fromEntries(this.runs.map((r) => [r.planned.arm, r.id])),
      start_time: this.startC,
    });
  }

  event(e: EventMsg, now: number): void {
    if (this.finished) return;
    const s = this.stopping;
    if (s && e.id !== null && s.ids.has(e.id)) {
      if (e.event === 'finished' || (!s.smooth && e.event === 'rejected')) {
        s.ids.delete(e.id);
        // A stop trajectory is finished near its end point; the report waits for the arms to rest.
        if (s.ids.size === 0 && s.smooth) s.resting = true;
        else if (s.ids.size === 0) this.end(s.ending, now);
      } else if (s.smooth && e.event === 'accepted') s.accepted?.add(e.id);
      else if (s.smooth && ['rejected', 'aborted', 'fault'].includes(e.event)) this.hardStop(s.ending, now);
      return;
    }
    const r = this.runs.find((x) => x.id === e.id);
    if (!r) return;
    const arm = r.planned.arm;
    if (e.event === 'accepted') {
      r.accepted = true;
      this.progress('accepted', { arm });
    } else if (e.event === 'started') {
      r.startedAt = e.time;
      // A late start (shifted by the controller) moves the settling deadline with it.
      this.settleBy = Math.max(this.settleBy, now + this.motionSpan());
      this.progress('started', { arm });
      this.watchSkew(e.time, now);
    } else if (e.event === 'finished') {
      r.finished = true;
      this.progress('finished', { arm });
    } else if (s)
      return; // aborts caused by our own stop
    else if (e.event === 'rejected') {
      this.halt(
        {
          status: 'failed',
          reason: e.reason ?? 'rejected',
          message: `the controller refused the trajectory of arm ${arm} (${e.reason}${e.detail ? `: ${e.detail}` : ''})`,
        },
        now,
      );
    } else if (e.event === 'aborted' || e.event === 'fault') {
      const stopped = e.reason === 'stop';
      this.halt(
        {
          status: stopped ? 'stopped' : 'failed',
          reason: e.reason ?? e.event,
          message: `the controller ${e.event === 'fault' ? 'reported a fault on' : 'aborted the motion of'} arm ${arm} (${e.reason}${e.detail ? `: ${e.detail}` : ''})`,
        },
        now,
      );
    }
  }

  state(s: StateMsg, now: number): void {
    if (this.stopping?.resting && this.runs.every((r) => this.atRest(s, r.planned.arm)))
      return this.end(this.stopping.ending, now);
    if (this.finished || this.stopping) return;
    if (this.watchSkew(s.time, now)) return;
    for (const r of this.runs) {
      const a = s.arms[r.planned.arm];
      if (!a) continue;
      const tau = s.time - (r.startedAt ?? this.startC);
      const te = trackingError(r.ref, tau, a.q);
      if (te.error > this.host.options.trackingLimit) {
        const joint = r.planned.joints[te.joint];
        const message = `arm ${r.planned.arm} joint ${joint} was ${te.error.toFixed(3)} rad off its reference (limit ${this.host.options.trackingLimit} rad): motion stopped`;
        const ending: Ending = { status: 'failed', reason: 'tracking_error', message };
        if (!this.smoothStop(ending, now)) this.halt(ending, now);
        return;
      }
      if (tau >= this.plan.duration && !r.settled && r.settle.push(s.time, a.q, a.dq)) {
        r.settled = true;
        this.progress('settled', { arm: r.planned.arm });
      }
    }
    if (this.runs.every((r) => r.finished && r.settled)) this.end({ status: 'ok', message: '' }, now);
  }

  /** Deadlines: an answer to the trajectory, settling, a stop reaching rest. */
  poll(now: number): void {
    if (this.finished) return;
    if (this.stopping) {
      // A smooth stop nobody accepted (dropped on the way) must not leave the arms on their paths.
      const s = this.stopping;
      if (s.smooth && !s.resting && now >= s.answerBy! && [...s.ids].some((id) => !s.accepted!.has(id)))
        return this.hardStop(s.ending, now);
      if (now >= this.stopping.until)
        this.end(
          {
            ...this.stopping.ending,
            message: `${this.stopping.ending.message} (rest not confirmed within ${this.host.options.stopTimeout} s)`,
          },
          now,
        );
      return;
    }
    const silent = this.runs.find((r) => !r.accepted);
    if (silent && now >= this.answerBy) {
      return this.halt(
        {
          status: 'failed',
          reason: 'no_answer',
          message: `the controller did not answer the trajectory of arm ${silent.planned.arm}`,
        },
        now,
      );
    }
    if (now >= this.settleBy) {
      const r = this.runs.find((x) => !x.finished || !x.settled)!;
      const what = r.finished ? 'did not settle at its goal' : 'was not reported finished by the controller';
      this.halt(
        {
          status: 'failed',
          reason: 'settle_timeout',
          message: `arm ${r.planned.arm} ${what} within ${this.host.model.arm(r.planned.arm).settle.timeout} s of the motion's end`,
        },
        now,
      );
    }
  }

  /** The controller went away (offline, restarted, stale state): report now, stop what may still run. */
  lost(code: string, message: string, now: number): void {
    if (this.finished) return;
    this.host.sendStop(this.arms, code, now);
    // Without the daemon's link the stop waits for the reconnection (the link service keeps it).
    const stop = code === 'link_down' ? 'a stop goes out first when the link is back' : 'a stop was sent';
    this.end({ status: 'failed', reason: code, message: `${message}; the motion was abandoned (${stop})` }, now);
  }

  /** A stop (of `reason`) took over: report once it has brought the arms to rest. */
  interrupt(stopId: string, reason: string, now: number): void {
    if (this.finished) return;
    this.stopping = {
      ids: new Set([stopId]),
      smooth: false,
      until: now + this.host.options.stopTimeout,
      ending: { status: 'stopped', reason: 'stop', message: stoppedBy(reason) },
    };
  }

  /**
   * The arms of one motion must start together: the arm-vs-arm check assumed it. A late one
   * (its message admitted after start_time, shifted by the controller) stops the motion.
   */
  private watchSkew(tc: number, now: number): boolean {
    if (this.stopping) return false;
    const skew = startSkew(
      this.runs.map((r) => ({ arm: r.planned.arm, startedAt: r.startedAt })),
      tc,
      this.host.options.startSkew,
    );
    if (skew) this.halt({ status: 'failed', reason: 'start_skew', message: `${skew}: motion stopped` }, now);
    return skew !== null;
  }

  /** Stops the arms with the controller's stop, then reports `ending` when they rest. */
  private halt(ending: Ending, now: number): void {
    this.progress('stopping', { reason: ending.reason });
    this.hardStop(ending, now);
  }

  private hardStop(ending: Ending, now: number): void {
    this.stopping = {
      ids: new Set([this.host.sendStop(this.arms, ending.reason ?? 'daemon', now)]),
      smooth: false,
      until: now + this.host.options.stopTimeout,
      ending,
    };
  }

  /**
   * Replaces the running trajectories with jerk-limited stops planned from the reference state
   * at the first tick the controller can still start from (so the controller's start check
   * holds). False when there is no such tick or the stop cannot be planned: then the
   * controller's own stop is used.
   */
  private smoothStop(ending: Ending, now: number): boolean {
    const tc = this.host.session.controllerTime(now);
    const measured = this.host.session.latest;
    if (tc === null || !measured) return false;
    const { rate } = this.plan;
    const from: Record<string, { q: Float64Array; dq: Float64Array; ddq: Float64Array }> = {};
    const startAt: Record<string, number> = {};
    for (const r of this.runs) {
      const t0 = r.startedAt ?? this.startC;
      const k = Math.max(0, Math.ceil((tc + this.host.options.startLead - t0) * rate));
      if (k >= r.planned.count - 1) return false;
      const n = r.planned.joints.length;
      const row = (a: Float64Array) => a.slice(k * n, (k + 1) * n);
      from[r.planned.arm] = { q: row(r.planned.q), dq: row(r.planned.dq), ddq: row(r.planned.ddq) };
      startAt[r.planned.arm] = t0 + k / rate;
    }
    const still = Object.fromEntries(this.host.model.armNames.map((a) => [a, measured.arms[a]!.q]));
    const stop = planStopFrom(this.host.model, from, still);
    if (!stop.ok) return false;
    const ids = new Set<string>();
    for (const p of stop.plan.arms) {
      const id = this.host.newId('t');
      const problem = this.host.sendTrajectory({
        v: 1,
        id,
        arm: p.arm,
        joints: p.joints,
        time: now,
        start_time: startAt[p.arm]!,
        expires_at: tc + this.host.options.expiry,
        points: trajectoryPoints(p, rate),
      });
      if (problem) return false;
      ids.add(id);
    }
    this.progress('stopping', { reason: ending.reason, smooth: true });
    this.stopping = {
      ids,
      smooth: true,
      until: now + this.host.options.stopTimeout,
      ending,
      accepted: new Set(),
      answerBy: now + this.host.options.expiry + 1,
    };
    return true;
  }

  private end(ending: Ending, now: number): void {
    if (this.finished) return;
    this.finishedAt = now;
    const model = this.host.model;
    const state = this.host.session.latest;
    const arms = armReports(model, state, model.armNames);
    let worst = { position: 0, rotation: 0 };
    const each: string[] = [];
    for (const r of this.runs) {
      const rep = arms?.[r.planned.arm];
      if (!rep || !r.planned.goal) continue;
      const err = poseErrorTo(model, r.planned.arm, rep.q, r.planned.goal);
      worst = { position: Math.max(worst.position, err.position), rotation: Math.max(worst.rotation, err.rotation) };
      each.push(`${mmText(err.position)} and ${degText(err.rotation)} (arm ${r.planned.arm})`);
      rep.pose_error = { position_m: round6(err.position), rotation_deg: round6((err.rotation * 180) / Math.PI) };
      rep.settled = r.settled;
    }
    const ok = ending.status === 'ok';
    const took = round6(now - this.call.receivedAt);
    const message = ok
      ? `Reached the target${this.runs.length > 1 ? 's' : ''} (TCP ${mmText(worst.position)} and ${degText(worst.rotation)} from the goal) in ${took.toFixed(2)} s.`
      : each.length > 1
        ? `Not reached: ${ending.message}. The TCPs are ${each.join(', ')} from their goals.`
        : `Not reached: ${ending.message}. The TCP is ${mmText(worst.position)} and ${degText(worst.rotation)} from the goal.`;
    this.resolve({
      call_id: this.call.id,
      tool: this.call.tool,
      ok,
      status: ending.status,
      ...(ending.reason ? { reason: ending.reason } : {}),
      message,
      reached: ok,
      duration_s: took,
      plan: { duration_s: round6(this.plan.duration), points: this.plan.arms[0]!.count },
      ...(arms ? { arms } : {}),
      timing_ms: { plan: this.call.planMs, ...(this.publishMs !== undefined ? { publish: this.publishMs } : {}) },
    });
  }

  private atRest(s: StateMsg, arm: string): boolean {
    const tol = this.host.model.arm(arm).settle.velocityTolerance;
    return s.arms[arm]?.dq.every((v) => Math.abs(v) <= tol) ?? false;
  }

  /** Trajectory length with its final hold, plus the longest settle timeout (s). */
  private motionSpan(): number {
    return (
      this.plan.arms[0]!.count / this.plan.rate +
      Math.max(...this.runs.map((r) => this.host.model.arm(r.planned.arm).settle.timeout))
    );
  }
}
