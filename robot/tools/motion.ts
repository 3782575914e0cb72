// One motion in flight: the planned trajectories are published (one per moving arm, same start
// time), then the controller's events and the measured state decide the outcome: tracking
// error above the limit → stop, settle at the goal after the controller's `finished` → reached,
// a refusal, an abort, a lost or stale link, or no settling in time → failed. Whatever ends a
// motion while an arm may still move publishes a stop first. Pure: time comes from the host.
import type { EventMsg, StateMsg, TrajectoryMsg } from '../link/protocol.js';
import { SettleDetector, trackingError, type SentReference } from '../link/monitor.js';
import type { ControllerSession } from '../link/controller-session.js';
import { armReports, degText, mmText, round6, type OutcomeStatus, type ToolOutcome } from './outcome.js';
import { poseErrorTo, type MotionPlan, type PlannedArm } from './plan.js';
import type { RobotModel } from './robot-model.js';
import type { ToolName } from './schemas.js';

export interface MotionOptions {
  /** Largest |measured − reference| before the motion is stopped (rad). */
  trackingLimit: number;
  /** Delay from publishing to the trajectories' common start (s). */
  startLead: number;
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

type Ending = { status: OutcomeStatus; reason?: string; message: string };

export class Motion {
  readonly done: Promise<ToolOutcome>;
  private resolve!: (o: ToolOutcome) => void;
  private readonly runs: ArmRun[];
  /** Planned start on the controller clock and the daemon-time deadline for settling. */
  private startC = 0;
  private answerBy = 0;
  private settleBy = 0;
  private publishMs: number | undefined;
  /** Set while waiting for a stop to finish before reporting `ending`. */
  private stopping: { id: string; until: number; ending: Ending } | null = null;
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
    return this.runs.some((r) => r.id === id) || this.stopping?.id === id;
  }

  /** Publishes every arm's trajectory with one common start time. */
  start(now: number): void {
    const tc = this.host.session.controllerTime(now);
    if (tc === null) return this.end({ status: 'unavailable', reason: 'no_clock', message: 'no clock estimate for the controller yet; wait for its state' }, now);
    const { startLead, expiry } = this.host.options;
    this.startC = tc + startLead;
    this.answerBy = now + expiry + 1;
    this.settleBy = now + startLead + this.motionSpan();
    for (const r of this.runs) {
      const p = r.planned;
      const n = p.joints.length;
      const points = Array.from({ length: p.count }, (_, i) => ({ t: round6(i / this.plan.rate), q: Array.from(p.q.subarray(i * n, (i + 1) * n)) }));
      const problem = this.host.sendTrajectory({ v: 1, id: r.id, arm: p.arm, joints: p.joints, time: now, start_time: this.startC, expires_at: tc + expiry, points });
      if (problem) return this.halt({ status: 'failed', reason: 'link_down', message: `could not send the trajectory: ${problem}` }, now);
    }
    this.publishMs = round6((this.host.now() - this.call.receivedAt) * 1000);
    this.progress('sent', { trajectories: Object.fromEntries(this.runs.map((r) => [r.planned.arm, r.id])), start_time: this.startC });
  }

  event(e: EventMsg, now: number): void {
    if (this.finished) return;
    if (this.stopping && e.id === this.stopping.id) {
      if (e.event === 'finished' || e.event === 'rejected') this.end(this.stopping.ending, now);
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
    } else if (e.event === 'finished') {
      r.finished = true;
      this.progress('finished', { arm });
    } else if (this.stopping) return; // aborts caused by our own stop
    else if (e.event === 'rejected') {
      const why = `the controller refused the trajectory of arm ${arm} (${e.reason}${e.detail ? `: ${e.detail}` : ''})`;
      this.halt({ status: 'failed', reason: e.reason ?? 'rejected', message: why }, now);
    } else if (e.event === 'aborted' || e.event === 'fault') {
      const stopped = e.reason === 'stop';
      this.halt({ status: stopped ? 'stopped' : 'failed', reason: e.reason ?? e.event, message: `the controller ${e.event === 'fault' ? 'reported a fault on' : 'aborted the motion of'} arm ${arm} (${e.reason}${e.detail ? `: ${e.detail}` : ''})` }, now);
    }
  }

  state(s: StateMsg, now: number): void {
    if (this.finished || this.stopping) return;
    for (const r of this.runs) {
      const a = s.arms[r.planned.arm];
      if (!a) continue;
      const tau = s.time - (r.startedAt ?? this.startC);
      const te = trackingError(r.ref, tau, a.q);
      if (te.error > this.host.options.trackingLimit) {
        const joint = r.planned.joints[te.joint];
        const message = `arm ${r.planned.arm} joint ${joint} was ${te.error.toFixed(3)} rad off its reference (limit ${this.host.options.trackingLimit} rad): motion stopped`;
        return this.halt({ status: 'failed', reason: 'tracking_error', message }, now);
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
      if (now >= this.stopping.until) this.end({ ...this.stopping.ending, message: `${this.stopping.ending.message} (rest not confirmed within ${this.host.options.stopTimeout} s)` }, now);
      return;
    }
    const silent = this.runs.find((r) => !r.accepted);
    if (silent && now >= this.answerBy) {
      return this.halt({ status: 'failed', reason: 'no_answer', message: `the controller did not answer the trajectory of arm ${silent.planned.arm}` }, now);
    }
    if (now >= this.settleBy) {
      const r = this.runs.find((x) => !x.finished || !x.settled)!;
      const what = r.finished ? 'did not settle at its goal' : 'was not reported finished by the controller';
      this.halt({ status: 'failed', reason: 'settle_timeout', message: `arm ${r.planned.arm} ${what} within ${this.host.model.arm(r.planned.arm).settle.timeout} s of the motion's end` }, now);
    }
  }

  /** The controller went away (offline, restarted, stale state): report now, stop what may still run. */
  lost(code: string, message: string, now: number): void {
    if (this.finished) return;
    this.host.sendStop(this.arms, code, now);
    this.end({ status: 'failed', reason: code, message: `${message}; the motion was abandoned (a stop was sent)` }, now);
  }

  /** A stop call took over: report once its stop has brought the arms to rest. */
  interrupt(stopId: string, now: number): void {
    if (this.finished) return;
    const ending: Ending = { status: 'stopped', reason: 'stop', message: 'stopped by a stop call' };
    if (this.stopping) this.stopping = { ...this.stopping, id: stopId, ending };
    else this.stopping = { id: stopId, until: now + this.host.options.stopTimeout, ending };
  }

  /** Stops the arms, then reports `ending` when they rest. */
  private halt(ending: Ending, now: number): void {
    this.progress('stopping', { reason: ending.reason });
    this.stopping = { id: this.host.sendStop(this.arms, ending.reason ?? 'daemon', now), until: now + this.host.options.stopTimeout, ending };
  }

  private end(ending: Ending, now: number): void {
    if (this.finished) return;
    this.finishedAt = now;
    const model = this.host.model;
    const state = this.host.session.latest;
    const arms = armReports(model, state, model.armNames);
    let worst = { position: 0, rotation: 0 };
    for (const r of this.runs) {
      const rep = arms?.[r.planned.arm];
      if (!rep) continue;
      const err = poseErrorTo(model, r.planned.arm, rep.q, r.planned.goal);
      worst = { position: Math.max(worst.position, err.position), rotation: Math.max(worst.rotation, err.rotation) };
      rep.pose_error = { position_m: round6(err.position), rotation_deg: round6((err.rotation * 180) / Math.PI) };
      rep.settled = r.settled;
    }
    const ok = ending.status === 'ok';
    const took = round6(now - this.call.receivedAt);
    const message = ok
      ? `Reached the target${this.runs.length > 1 ? 's' : ''} (TCP ${mmText(worst.position)} and ${degText(worst.rotation)} from the goal) in ${took.toFixed(2)} s.`
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

  /** Trajectory length with its final hold, plus the longest settle timeout (s). */
  private motionSpan(): number {
    return this.plan.arms[0]!.count / this.plan.rate + Math.max(...this.runs.map((r) => this.host.model.arm(r.planned.arm).settle.timeout));
  }
}
