// Runs a robot's tool calls: a model reply is validated (robot/tools/validate), a motion is
// planned from the measured joints and followed to its outcome (motion.ts), grippers are set,
// state is reported. One motion per arm at a time (in a multi-arm setup: while any arm moves,
// since plans are checked against the other arms standing still). A plan is checked against what
// every gripper holds when it is made, so no gripper is set while any motion is planned or runs,
// and no motion is planned while any gripper moves or is about to be set; `stop` is never queued: it
// is published at once and takes over whatever runs. Pure: the daemon feeds it the session,
// a command sink and the clock, and calls poll() often.
import type { ControllerSession, LinkProblem, SessionListener } from '../link/controller-session.js';
import type { EventMsg, GripperMsg, StateMsg, StopMsg, TrajectoryMsg } from '../link/protocol.js';
import { Motion, type MotionHost, type MotionOptions, type Progress, stoppedBy } from './motion.js';
import { armReports, round6, type OutcomeStatus, type ToolOutcome } from './outcome.js';
import { planCartesianMotion, type PlanResult } from './plan.js';
import { GraspRecord } from './grasp-record.js';
import type { RobotModel } from './robot-model.js';
import type { ToolName } from './schemas.js';
import { ToolValidator, type ArmTargets, type ToolCall } from './validate.js';

export interface ExecutorOptions extends MotionOptions {
  /** Longest wait for a gripper to arrive (s). */
  gripperTimeout: number;
}

export const DEFAULT_EXECUTOR_OPTIONS: ExecutorOptions = {
  trackingLimit: 0.12,
  startLead: 0.05,
  // Serialising (JSON.stringify ~37 ms/MiB), parsing (~22 ms/MiB) and the controller's checks
  // (~7 ms/MiB, docs/benchmarks.md) of a trajectory, on the shared 2-core VM: ~65 ms/MiB,
  // rounded up; the size is the planner's upper bound.
  startLeadPerMiB: 0.08,
  // Two reference ticks at 100 Hz; a few control periods of a real controller (the simulator's is 1 ms).
  startSkew: 0.02,
  expiry: 0.5,
  stopTimeout: 5,
  gripperTimeout: 5,
};

/** A size refusal names the tool whose motion is too long for one message (the planner does not know it). */
const sized = (tool: ToolName, r: { code: string; message: string }) =>
  r.code === 'too_long' || r.code === 'too_large' ? `${tool}: ${r.message}` : r.message;

/** The stop reason sent when a call's client disconnects while the call runs. */
export const DISCONNECT_REASON = 'client_disconnected';

export type Command =
  | { type: 'trajectory'; msg: TrajectoryMsg }
  | { type: 'gripper'; msg: GripperMsg }
  | { type: 'stop'; msg: StopMsg };

/** Publishes a command to the controller; returns why it could not, or null. `expiresIn` (s) for MQTT 5 expiry. */
export type CommandSink = (c: Command, expiresIn: number | null) => string | null;

export interface ExecutorDeps {
  robot: string;
  model: RobotModel;
  session: ControllerSession;
  sink: CommandSink;
  /** Daemon clock (s, monotonic). */
  now: () => number;
  options?: Partial<ExecutorOptions>;
  /** Call and command ids, unique per daemon run across its robots (a controller ignores repeated ids). */
  ids: IdSource;
  /** Plans a motion (default: in this thread; the daemon plans in a worker thread). */
  planner?: Planner;
}

/** Arms a call has claimed until it sends; `stopped` by a stop call, `lost` with the controller. */
interface Claim {
  arms: string[];
  /** The move's call (planning claims): named when it keeps a gripper call waiting. */
  call?: { id: string; tool: ToolName };
  stopped: boolean;
  lost?: { code: string; message: string };
}

/** Makes `<kind>-<run>-<n>` ids; share one source among a daemon's executors so no two robots repeat one. */
export type IdSource = (kind: string) => string;
export function idSource(run: string): IdSource {
  let n = 1;
  return (kind) => `${kind}-${run}-${n++}`;
}

/** grasped: the arms whose gripper holds an object (their grasp envelope joins the safety check). */
export type Planner = (
  start: Record<string, readonly number[]>,
  targets: ArmTargets[],
  grasped: string[],
) => PlanResult | Promise<PlanResult>;

/** A call's id and the daemon time it arrived. */
export interface Received {
  id: string;
  at: number;
}

interface Waiter {
  ids: Map<string, string>;
  pending: Set<string>;
  until: number;
  timeout: number;
  /** Controller time everything finished: the outcome waits for a state sampled after it. */
  doneAt?: number;
  /** Arms whose gripper command finished on an object (reason `grasped`). */
  grasped: Set<string>;
  finish: (status: OutcomeStatus, reason: string | undefined, message: string) => void;
}

export class Executor implements SessionListener, MotionHost {
  readonly validator: ToolValidator;
  readonly options: ExecutorOptions;
  readonly model: RobotModel;
  readonly session: ControllerSession;
  private readonly motions = new Set<Motion>();
  /** Calls waiting for a fresh state: resolved by the next fresh state or at `until`. */
  private freshWaiters: { until: number; resolve: () => void }[] = [];
  /** Motions being planned: their arms are taken. */
  /** Moves being planned and gripper commands waiting for a fresh state: a stop or a lost
   *  controller meanwhile cancels them before anything is sent. */
  private readonly planning = new Set<Claim>();
  private readonly gripping = new Set<Claim>();
  private readonly planner: Planner;
  /** Gripper commands and stops waiting for their `finished`, by arm ('*' for stops). */
  private readonly waiters = new Map<string, Waiter>();
  /** Arms whose gripper last finished closed on an object: plans carry their grasp envelope. */
  private readonly grasps: GraspRecord;
  private lastPoll = -Infinity;
  /** Until then staleness is not judged: the daemon was busy and states are still queued. */
  private graceUntil = -Infinity;

  constructor(private readonly deps: ExecutorDeps) {
    this.model = deps.model;
    this.session = deps.session;
    this.options = { ...DEFAULT_EXECUTOR_OPTIONS, ...deps.options };
    this.validator = new ToolValidator(deps.model.armNames);
    this.grasps = new GraspRecord(deps.model.armNames);
    this.planner =
      deps.planner ?? ((start, targets, grasped) => planCartesianMotion(deps.model, start, targets, grasped));
    deps.session.listener = this;
  }

  now(): number {
    return this.deps.now();
  }

  newId(prefix: string): string {
    return this.deps.ids(prefix);
  }

  /** Arms with a motion or a gripper command in flight. */
  busyArms(): string[] {
    const arms = new Set<string>();
    for (const a of this.busyMotionArms()) arms.add(a);
    for (const [key, w] of this.waiters) if (!key.startsWith('*') && w.pending.size) arms.add(key);
    return [...arms];
  }

  /**
   * One model reply (native tool call or text) → its outcome; rejected replies send nothing.
   * `deadMan` aborted while the call runs (its client went away) stops the arms the call moves.
   */
  execute(
    reply: unknown,
    progress: Progress = () => undefined,
    callId = this.newId('call'),
    deadMan?: AbortSignal,
  ): Promise<ToolOutcome> {
    const rx: Received = { id: callId, at: this.now() };
    const v = this.validator.validate(reply);
    if (!v.ok) return Promise.resolve(this.outcome(null, rx, 'rejected', v.code, v.message));
    progress('validated', { tool: v.call.tool });
    const running = this.run(v.call, progress, rx);
    if (deadMan) this.stopOnAbort(deadMan, this.armsOf(v.call), running);
    return running;
  }

  /** The arms a call sets in motion (arm or gripper); none for stop, state and plan-only calls. */
  private armsOf(call: ToolCall): string[] {
    if (call.tool === 'set_gripper') return Object.keys(call.gripper).filter((a) => call.gripper[a] !== null);
    if (call.tool === 'move_to') return this.model.armNames.filter((a) => call.target[a]);
    if (call.tool === 'move_eef_chunk') return this.model.armNames.filter((a) => call.targets.some((t) => t[a]));
    return [];
  }

  /** Until `running` settles, an abort of `signal` stops `arms` through the ordinary stop path. */
  private stopOnAbort(signal: AbortSignal, arms: string[], running: Promise<unknown>): void {
    if (arms.length === 0) return;
    const stop = () => {
      const each = arms.length === this.model.armNames.length ? [null] : arms;
      for (const arm of each) void this.stop(DISCONNECT_REASON, undefined, arm);
    };
    if (signal.aborted) return stop();
    signal.addEventListener('abort', stop, { once: true });
    void running.finally(() => signal.removeEventListener('abort', stop));
  }

  run(
    call: ToolCall,
    progress: Progress = () => undefined,
    rx: Received = { id: this.newId('call'), at: this.now() },
  ): Promise<ToolOutcome> {
    switch (call.tool) {
      case 'stop':
        return this.stop('tool', rx);
      case 'get_state':
        return Promise.resolve(this.stateOutcome('get_state', rx));
      case 'done':
        return Promise.resolve({
          ...this.stateOutcome('done', rx),
          summary: call.summary,
          message: 'Done noted; the reported state is what the robot measures now (the outcome is not assumed).',
        });
      case 'set_gripper':
        return this.setGripper(call.gripper, rx, progress);
      case 'check_path':
        return this.checkPath(call.targets, rx);
      default:
        return this.move(call.tool, call.tool === 'move_to' ? [call.target] : call.targets, rx, progress);
    }
  }

  /** Publishes a stop of every arm at once (never queued), takes over every motion, reports when at rest. */
  stop(
    reason = 'user',
    rx: Received = { id: this.newId('call'), at: this.now() },
    arm: string | null = null,
  ): Promise<ToolOutcome> {
    const now = this.now();
    const asked = arm === null ? this.model.armNames : [arm];
    // A motion was planned for its arms together (each checked against the others' paths):
    // stopping one of them stops all of them, none is left moving unwatched.
    const arms = [
      ...new Set([
        ...asked,
        ...[...this.motions].filter((m) => m.arms.some((a) => asked.includes(a))).flatMap((m) => m.arms),
      ]),
    ];
    const id = this.sendStop(arms, reason, now);
    for (const m of this.motions) if (m.arms.some((a) => arms.includes(a))) m.interrupt(id, reason, now);
    for (const c of [...this.planning, ...this.gripping]) if (c.arms.some((a) => arms.includes(a))) c.stopped = true;
    for (const a of arms)
      this.waiters.get(a)?.finish('stopped', 'stop', `the gripper of arm ${a} was ${stoppedBy(reason)}`);
    const problem = this.session.problem(now);
    const which =
      this.model.armNames.length === 1
        ? 'the arm is'
        : arms.length === this.model.armNames.length
          ? 'every arm is'
          : arms.length === 1
            ? `arm ${arms[0]} is`
            : `arms ${arms.join(', ')} are`;
    return new Promise((resolve) => {
      const finish = (status: OutcomeStatus, why: string | undefined, message: string) => {
        this.waiters.delete(`*${id}`);
        resolve({
          ...this.stateOutcome('stop', rx),
          ok: status === 'ok',
          status,
          ...(why ? { reason: why } : {}),
          message: status === 'ok' ? `Stopped: ${which} at rest.` : `Stop sent, but not confirmed: ${message}.`,
        });
      };
      this.waiters.set(`*${id}`, {
        ids: new Map([[id, '*']]),
        pending: new Set([id]),
        grasped: new Set(),
        until: now + this.options.stopTimeout,
        timeout: this.options.stopTimeout,
        finish,
      });
      // A controller reporting a fault (no_heartbeat included) still obeys stops.
      if (problem && problem.code !== 'stale_state' && problem.code !== 'controller_fault')
        finish('unavailable', problem.code, problem.message);
    });
  }

  sendTrajectory(m: TrajectoryMsg): string | null {
    return this.deps.sink({ type: 'trajectory', msg: m }, this.options.expiry);
  }

  sendStop(arms: readonly string[], reason: string, now: number): string {
    const id = this.newId('s');
    this.deps.sink(
      {
        type: 'stop',
        msg: { v: 1, id, arm: arms.length === 1 ? arms[0]! : null, time: now, reason: reason.slice(0, 256) },
      },
      null,
    );
    return id;
  }

  // SessionListener: what the controller says reaches the motions and waiters.
  state(s: StateMsg, now: number): void {
    if (this.freshWaiters.length && !this.session.problem(now))
      for (const w of this.freshWaiters.splice(0)) w.resolve();
    for (const m of this.motions) m.state(s, now);
    for (const w of [...this.waiters.values()])
      if (w.doneAt !== undefined && s.time >= w.doneAt) w.finish('ok', undefined, '');
  }

  event(e: EventMsg, now: number): void {
    if (e.id === null) return;
    // What a gripper holds follows the controller's word, also once no call waits for it (a
    // stop or a timeout ended the call while the gripper went on closing).
    const unknown = this.grasps.event(e);
    if (unknown) {
      this.session.invalid++;
      this.session.lastInvalid = unknown;
      return;
    }
    for (const m of this.motions) if (m.owns(e.id)) m.event(e, now);
    for (const w of [...this.waiters.values()]) {
      const arm = w.ids.get(e.id);
      if (arm === undefined) continue;
      if (e.event === 'finished') {
        if (e.command === 'gripper' && e.reason === 'grasped') w.grasped.add(arm);
        w.pending.delete(e.id);
        if (w.pending.size === 0) w.doneAt = e.time;
      } else if (e.event === 'rejected' || e.event === 'aborted' || e.event === 'fault') {
        w.finish(
          e.reason === 'stop' ? 'stopped' : 'failed',
          e.reason,
          `the controller ${e.event === 'rejected' ? 'refused' : 'aborted'} the ${e.command} command${arm === '*' ? '' : ` of arm ${arm}`} (${e.reason}${e.detail ? `: ${e.detail}` : ''})`,
        );
      }
    }
  }

  lost(code: string, message: string, now: number): void {
    if (code === 'controller_restarted') this.grasps.reset();
    // A plan made from the old session's state is not sent to the new one (nor to none).
    for (const c of [...this.planning, ...this.gripping]) c.lost ??= { code, message };
    for (const w of this.freshWaiters.splice(0)) w.resolve();
    for (const m of this.motions) m.lost(code, message, now);
    for (const w of [...this.waiters.values()]) w.finish('failed', code, message);
  }

  /** Deadlines and staleness; call every few tens of milliseconds. */
  poll(now: number): void {
    // Offline, restarts and a lost link arrive as lost(); a state that stops coming shows up here.
    // After a gap in polling the daemon itself was busy (load, a long collection): the states sent meanwhile
    // still wait in sockets and in the embedded broker, so the controller gets stale_after to
    // catch up before its state counts as stale.
    if (now - this.lastPoll > this.session.staleAfter / 2) this.graceUntil = now + this.session.staleAfter;
    this.lastPoll = now;
    const problem = this.session.problem(now);
    if (problem?.code === 'stale_state' && now >= this.graceUntil) {
      for (const m of this.motions) m.lost(problem.code, problem.message, now);
      for (const [key, w] of [...this.waiters])
        if (!key.startsWith('*')) w.finish('failed', problem.code, problem.message);
    }
    for (const m of this.motions) m.poll(now);
    this.freshWaiters = this.freshWaiters.filter((w) => {
      if (now >= w.until) {
        w.resolve();
        return false;
      }
      return true;
    });
    for (const w of [...this.waiters.values()])
      if (now >= w.until) w.finish('failed', 'no_answer', `the controller did not confirm it within ${w.timeout} s`);
  }

  private async move(tool: ToolName, targets: ArmTargets[], rx: Received, progress: Progress): Promise<ToolOutcome> {
    const notMoved = (status: OutcomeStatus, reason: string, message: string, extra: Partial<ToolOutcome> = {}) => ({
      ...this.outcome(tool, rx, status, reason, `Not moved: ${message}.`),
      reached: false,
      ...extra,
    });
    const moving = this.model.armNames.filter((a) => targets.some((t) => t[a]));
    const busy = this.busyMotionArms();
    if (busy.length) {
      const which = busy.filter((a) => moving.includes(a));
      const why = which.length
        ? `arm ${which.join(', ')} is still moving`
        : `arm ${busy.join(', ')} is moving and the plan assumes the other arms stand still`;
      return notMoved('busy', 'busy', `${why}; wait for its result or call stop`);
    }
    // A closing gripper may yet grasp: the plan must know what every arm will carry (a moving
    // arm's own load, and the other arms' envelopes it is checked against).
    const gripping = this.grippersBusy();
    if (gripping)
      return notMoved(
        'busy',
        'busy',
        `the gripper of arm ${gripping} is still moving; a plan is checked against what each gripper holds, so wait for its result or call stop`,
      );
    // The arms are claimed from here until the motion runs; a stop meanwhile cancels it.
    const claim: Claim = { arms: moving, stopped: false, call: { id: rx.id, tool } };
    this.planning.add(claim);
    const cancelled = (when: string) =>
      claim.stopped
        ? notMoved('stopped', 'stop', `a stop call came ${when}`)
        : claim.lost
          ? notMoved('unavailable', claim.lost.code, `${claim.lost.message} ${when}`)
          : null;
    try {
      let problem = await this.usable();
      const first = cancelled('first');
      if (first) return first;
      if (problem) return notMoved('unavailable', problem.code, problem.message);
      // A stop's `finished` may come before the state that shows its arm at rest: one more state.
      if (this.model.armNames.some((a) => ['stop', 'follow'].includes(this.session.latest!.arms[a]!.mode))) {
        await this.nextState();
        const later = cancelled('first');
        if (later) return later;
      }
      for (const a of this.model.armNames) {
        const s = this.session.latest!.arms[a]!;
        if (s.mode === 'fault' && moving.includes(a))
          return notMoved(
            'unavailable',
            'fault',
            `arm ${a} has a latched fault (${s.faults.join(', ')}); call stop to clear it`,
          );
        // Every arm must rest: the plan checks the moving arms against the others standing still.
        if (s.mode === 'stop') return notMoved('busy', 'stopping', `arm ${a} is still braking to rest`);
        if (s.mode === 'follow') return notMoved('busy', 'busy', `arm ${a} is still following a trajectory`);
      }
      const planned = await this.planner(this.measured(), targets, this.grasps.grasped());
      const planMs = round6((this.now() - rx.at) * 1000);
      const during = cancelled('while the motion was being planned');
      if (during) return during;
      if (!planned.ok)
        return {
          ...this.outcome(tool, rx, 'infeasible', planned.code, `Not moved: ${sized(tool, planned)}.`),
          reached: false,
          timing_ms: { plan: planMs },
        };
      problem = await this.usable();
      const after = cancelled('while the motion was being planned');
      if (after) return after;
      if (problem) return notMoved('unavailable', problem.code, problem.message, { timing_ms: { plan: planMs } });
      progress('planned', {
        duration_s: round6(planned.plan.duration),
        points: planned.plan.arms[0]!.count,
        arms: planned.plan.arms.map((a) => a.arm),
      });
      const motion = new Motion(this, { id: rx.id, tool, receivedAt: rx.at, planMs }, planned.plan, progress);
      this.motions.add(motion);
      void motion.done.then(() => this.motions.delete(motion));
      motion.start(this.now());
      return await motion.done;
    } finally {
      this.planning.delete(claim);
    }
  }

  /** Whether `arm`'s own gripper command (not another arm's of the same call) awaits `finished`. */
  private gripperPending(arm: string): boolean {
    const w = this.waiters.get(arm);
    return w !== undefined && [...w.pending].some((id) => w.ids.get(id) === arm);
  }

  /** An arm whose gripper command awaits `finished` or is about to be sent (a set_gripper waiting for a fresh state). */
  private grippersBusy(): string | undefined {
    return this.model.armNames.find((a) => this.gripperPending(a)) ?? [...this.gripping].flatMap((c) => c.arms)[0];
  }

  /** Resolves on the next fresh state, or after the staleness limit. */
  private nextState(): Promise<void> {
    return new Promise<void>((resolve) =>
      this.freshWaiters.push({ until: this.now() + this.session.staleAfter, resolve }),
    );
  }

  /**
   * Why no command may be sent now, or null. A state that is just over the staleness limit
   * (a hiccup) gets up to that limit again to be fresh before the call is refused.
   */
  private async usable(): Promise<LinkProblem | null> {
    const problem = this.session.problem(this.now());
    if (problem?.code !== 'stale_state') return problem;
    await this.nextState();
    return this.session.problem(this.now());
  }

  private async checkPath(targets: ArmTargets[], rx: Received): Promise<ToolOutcome> {
    const problem = await this.usable();
    if (problem) return this.outcome('check_path', rx, 'unavailable', problem.code, `Cannot plan: ${problem.message}.`);
    const planned = await this.planner(this.measured(), targets, this.grasps.grasped());
    if (!planned.ok)
      return this.outcome(
        'check_path',
        rx,
        'infeasible',
        planned.code,
        `Not feasible: ${sized('check_path', planned)}.`,
      );
    const p = planned.plan;
    return {
      ...this.outcome(
        'check_path',
        rx,
        'ok',
        undefined,
        `Feasible: the path takes ${p.duration.toFixed(2)} s; nothing moved.`,
      ),
      plan: { duration_s: round6(p.duration), points: p.arms[0]!.count },
    };
  }

  private async setGripper(
    positions: Record<string, number | null>,
    rx: Received,
    progress: Progress,
  ): Promise<ToolOutcome> {
    const arms = Object.entries(positions).filter((e): e is [string, number] => e[1] !== null);
    // Claimed while a stale state gets its chance to freshen: a stop meanwhile comes first.
    const claim: Claim = { arms: arms.map(([a]) => a), stopped: false };
    this.gripping.add(claim);
    const problem = await this.usable().finally(() => this.gripping.delete(claim));
    const now = this.now();
    const noGripper = arms.find(([a]) => !this.model.arm(a).hasGripper);
    const busy = arms.find(([a]) => this.waiters.get(a)?.pending.size);
    const refuse = (status: OutcomeStatus, reason: string, message: string) =>
      Promise.resolve({ ...this.outcome('set_gripper', rx, status, reason, message), gripper: positions });
    if (noGripper) return refuse('infeasible', 'no_gripper', `Not done: arm ${noGripper[0]} has no gripper.`);
    if (claim.stopped) return refuse('stopped', 'stop', 'Not done: a stop call came first.');
    if (claim.lost) return refuse('unavailable', claim.lost.code, `Not done: ${claim.lost.message}.`);
    if (problem) return refuse('unavailable', problem.code, `Not done: ${problem.message}.`);
    if (busy)
      return refuse(
        'busy',
        'busy',
        `Not done: the gripper of arm ${busy[0]} is still moving; wait for it or call stop.`,
      );
    // Any motion under way was checked against what each gripper holds now (its own arm's load and
    // the other arms' envelopes): a grasp mid-path would be carried along an unchecked path.
    const motion = [...this.planning][0];
    if (motion)
      return refuse(
        'busy',
        'busy',
        `Not done: arm ${motion.arms.join(', ')} is still moving or being planned (${motion.call ? `${motion.call.tool} ${motion.call.id}` : 'a motion'}); no gripper is set while a motion runs, since its path was checked against what each gripper holds now; wait for its result or call stop.`,
      );
    const tc = this.session.controllerTime(now)!;
    const ids = new Map<string, string>();
    for (const [arm, position] of arms) {
      const id = this.newId('g');
      const sent = this.deps.sink(
        { type: 'gripper', msg: { v: 1, id, arm, position, time: now, expires_at: tc + this.options.expiry } },
        this.options.expiry,
      );
      if (sent) return refuse('failed', 'link_down', `Not done: could not send the gripper command (${sent}).`);
      ids.set(id, arm);
      this.grasps.sent(id, arm);
    }
    progress('sent', { grippers: Object.fromEntries([...ids].map(([id, arm]) => [arm, id])) });
    return new Promise((resolve) => {
      const w: Waiter = {
        ids,
        pending: new Set(ids.keys()),
        grasped: new Set(),
        until: now + this.options.gripperTimeout,
        timeout: this.options.gripperTimeout,
        finish: (status, reason, message) => {
          for (const [arm] of arms) if (this.waiters.get(arm) === w) this.waiters.delete(arm);
          const ok = status === 'ok';
          const state = this.stateOutcome('set_gripper', rx);
          resolve({
            ...state,
            ok,
            status,
            ...(reason ? { reason } : {}),
            gripper: positions,
            ...(ok ? { grasped: Object.fromEntries(arms.map(([a]) => [a, w.grasped.has(a)])) } : {}),
            message: ok ? grippedText(w.grasped) : `Gripper not set: ${message}.`,
          });
        },
      };
      for (const [arm] of arms) this.waiters.set(arm, w);
    });
  }

  private busyMotionArms(): string[] {
    return [...new Set([...[...this.motions].flatMap((m) => m.arms), ...[...this.planning].flatMap((c) => c.arms)])];
  }

  private measured(): Record<string, readonly number[]> {
    const s = this.session.latest!;
    return Object.fromEntries(this.model.armNames.map((a) => [a, s.arms[a]!.q]));
  }

  private stateOutcome(tool: ToolName, rx: Received): ToolOutcome {
    const now = this.now();
    const s = this.session.latest;
    if (!s)
      return this.outcome(
        tool,
        rx,
        'unavailable',
        'no_state',
        `No state: ${this.session.problem(now)?.message ?? 'no state yet'}.`,
      );
    const problem = this.session.problem(now);
    const arms = armReports(this.model, s);
    const stale = problem ? ` (${problem.message})` : '';
    return { ...this.outcome(tool, rx, 'ok', undefined, `State as measured${stale}.`), ...(arms ? { arms } : {}) };
  }

  private outcome(
    tool: ToolName | null,
    rx: Received,
    status: OutcomeStatus,
    reason: string | undefined,
    message: string,
  ): ToolOutcome {
    return {
      call_id: rx.id,
      tool,
      ok: status === 'ok',
      status,
      ...(reason ? { reason } : {}),
      message,
      duration_s: round6(this.now() - rx.at),
    };
  }
}

/** The model's sentence for a gripper call that arrived: which grippers stopped on an object. */
function grippedText(grasped: Set<string>): string {
  return grasped.size ? `Gripper set; closed on an object (arm ${[...grasped].join(', ')}).` : 'Gripper set.';
}
