// One served robot: its compiled model, the controller session and the executor, joined to a
// command transport by the link service. Messages arrive validated; the transport decides
// which topic or socket a command leaves on.
import { loadArms } from '../../robot/description/loader.js';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { ControllerSession } from '../../robot/link/controller-session.js';
import type { MessageBySuffix } from '../../robot/link/protocol-validate.js';
import type { TrajectoryMsg } from '../../robot/link/protocol.js';
import type { SimSceneMsg } from '../../robot/link/sim-scene.js';
import { Executor, type CommandSink, type IdSource, type Planner } from '../../robot/tools/executor.js';
import { RobotModel } from '../../robot/tools/robot-model.js';
import type { SceneSnapshot } from '../../robot/tools/plan-scene.js';
import type { CameraStore } from './camera-store.js';
import type { RobotsConfig, ServedRobot } from './config.js';

export type ControllerMessage = 'availability' | 'description' | 'state' | 'events';

export class RobotRuntime {
  readonly id: string;
  readonly kind: 'robot' | 'setup';
  readonly model: RobotModel;
  readonly session: ControllerSession;
  readonly executor: Executor;
  /** The latest ground truth of a simulated workcell (`sim/scene`) and when it arrived (daemon s). */
  simScene: { msg: SimSceneMsg; at: number } | null = null;
  /** The last trajectory sent to each arm and when (daemon s): what `robots.plans` shows. */
  readonly plans = new Map<string, { msg: TrajectoryMsg; at: number }>();

  constructor(
    readonly entry: ServedRobot,
    config: RobotsConfig,
    dir: string,
    now: () => number,
    ids: IdSource,
    sink: CommandSink,
    planner: Planner,
    /** Its camera streams. */
    readonly cameras: CameraStore,
  ) {
    this.id = entry.id;
    const loaded = loadArms(entry.robot, dir);
    if (!loaded.ok) throw new Error(`robot ${entry.id}: ${loaded.issues.map((i) => formatIssue(i)).join('; ')}`);
    this.kind = loaded.value.kind;
    const s = entry.settle;
    this.model = new RobotModel(loaded.value.setup, {
      ...(s.position_tol_rad !== undefined ? { positionTolerance: s.position_tol_rad } : {}),
      ...(s.velocity_tol_rad_s !== undefined ? { velocityTolerance: s.velocity_tol_rad_s } : {}),
      ...(s.samples !== undefined ? { samples: s.samples } : {}),
      ...(s.min_window_s !== undefined ? { minWindow: s.min_window_s } : {}),
      ...(s.span_rad !== undefined ? { span: s.span_rad } : {}),
      ...(s.timeout_s !== undefined ? { timeout: s.timeout_s } : {}),
    });
    this.session = new ControllerSession(entry.id, this.model.expectedArms(), config.stale_ms / 1000);
    this.executor = new Executor({
      robot: entry.id,
      model: this.model,
      session: this.session,
      sink,
      now,
      ids,
      planner,
      options: { trackingLimit: entry.tracking_error_rad, expiry: config.command_expiry_ms / 1000 },
    });
  }

  /** A validated controller message for this robot. */
  receive<K extends ControllerMessage>(type: K, payload: MessageBySuffix[K], now: number): void {
    const s = this.session;
    if (type === 'availability') s.onAvailability(payload as MessageBySuffix['availability'], now);
    else if (type === 'description') s.onDescription(payload as MessageBySuffix['description'], now);
    else if (type === 'state') s.onState(payload as MessageBySuffix['state'], now);
    else s.onEvent(payload as MessageBySuffix['events'], now);
  }

  /** A validated `sim/scene` from this robot's simulator. */
  onSimScene(msg: SimSceneMsg, now: number): void {
    this.simScene = { msg, at: now };
  }

  /** The latest ground truth with the measured grippers, for the planner's safety check; undefined without a simulated scene. */
  sceneSnapshot(): SceneSnapshot | undefined {
    if (!this.simScene) return undefined;
    const arms = this.session.latest?.arms ?? {};
    return {
      msg: this.simScene.msg,
      grippers: Object.fromEntries(this.model.armNames.map((a) => [a, arms[a]?.gripper ?? null])),
    };
  }

  /** What robots.list shows about this robot now. */
  summary(now: number): Record<string, unknown> {
    const s = this.session;
    const problem = s.problem(now);
    const clock = s.clockEstimate(now);
    const age = s.stateAge(now);
    return {
      id: this.id,
      robot: this.entry.robot,
      description: this.model.setup.summary,
      kind: this.kind,
      transport: this.entry.transport,
      arms: this.model.arms.map((a) => ({ name: a.name, joints: a.joints, gripper: a.hasGripper })),
      ready: problem === null,
      problem,
      controller: s.description
        ? {
            session: s.description.session,
            name: s.description.controller.name,
            version: s.description.controller.version,
            state_rate: s.description.state_rate,
          }
        : null,
      availability: s.availability,
      state_age_ms: Number.isFinite(age) ? Math.round(age * 1000) : null,
      clock: clock ? { offset_s: clock.offset, uncertainty_s: clock.uncertainty, source: clock.source } : null,
      busy: this.executor.busyArms(),
      invalid_messages: s.invalid,
      cameras: this.cameras.status(now),
    };
  }
}
