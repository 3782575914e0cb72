// Tool targets → the motion planner (robot/motion/planner) → timed joint references for the
// arms that move, or a result code. The planner validates, samples the Cartesian path with
// sequential IK, times it (dual-arm synchronised, resampled with a final hold) and safety-checks
// the references of every arm, held arms standing still; the validated tool poses are already its
// targets, and its references become what the link sends. Also the jerk-limited stop from a moving state.
import { fromPose } from '../math/quaternion.js';
import { poseDistance } from '../kinematics/pose-error.js';
import { forwardKinematics } from '../kinematics/forward.js';
import type { ArmReferences, PlanFailure, PoseTarget } from '../motion/planner/planner.js';
import type { RobotModel } from './robot-model.js';
import { planScene, type SceneSnapshot } from './plan-scene.js';
import type { ArmTargets } from './validate.js';

export interface PlannedArm {
  arm: string;
  joints: string[];
  /** Row i (joints entries) is the reference at i/rate after the start: positions, velocities, accelerations. */
  count: number;
  q: Float64Array;
  dq: Float64Array;
  ddq: Float64Array;
  /** The last target of this arm (setup frame); null for a stop. */
  goal: PoseTarget | null;
}

export interface MotionPlan {
  rate: number;
  /** Time until every arm rests at its goal (s); the final hold follows. */
  duration: number;
  arms: PlannedArm[];
}

/** code: the planner's code in snake_case (unreachable, joint_jump, outside_workspace, self_collision, …). */
export type PlanResult =
  | { ok: true; plan: MotionPlan }
  | { ok: false; code: string; arm: string | null; message: string };

/**
 * Plans a path through `targets` (each names every arm; null holds that arm for that step)
 * from the measured joints `start` (every arm), the arms in `grasped` holding an object, checked
 * against a simulated workcell's objects when `scene` is given. Only the arms with a target are returned.
 */
export function planCartesianMotion(
  model: RobotModel,
  start: Record<string, readonly number[]>,
  targets: ArmTargets[],
  grasped: readonly string[] = [],
  scene?: SceneSnapshot,
): PlanResult {
  model.planner.setGrasped(grasped);
  model.planner.setScene(scene ? planScene(model, scene, start, grasped) : null);
  const moving = model.armNames.filter((a) => targets.some((t) => t[a]));
  const perArm = Object.fromEntries(moving.map((a) => [a, targets.map((t) => t[a] ?? null)]));
  const r = model.planner.planCartesian({ measured: start, targets: perArm });
  if (!r.ok) return refused(r);
  const goal = (arm: string) => targets.findLast((t) => t[arm])![arm]!;
  return {
    ok: true,
    plan: {
      rate: model.planner.rate,
      duration: r.duration,
      arms: r.arms.filter((a) => moving.includes(a.arm)).map((a) => planned(a, goal(a.arm))),
    },
  };
}

/**
 * A jerk-limited stop of `arms` from the reference state they follow (q, dq, ddq per arm); the
 * other arms stand at `still`. Each joint brakes as fast as its limits allow.
 */
export function planStopFrom(
  model: RobotModel,
  moving: Record<string, { q: ArrayLike<number>; dq: ArrayLike<number>; ddq: ArrayLike<number> }>,
  still: Record<string, readonly number[]>,
): PlanResult {
  // Braking stays on the path already checked with the held object; only the links are re-checked.
  model.planner.setGrasped([]);
  model.planner.setScene(null);
  const state = Object.fromEntries(
    model.armNames.map((a) => [a, moving[a] ?? { q: still[a]!, dq: still[a]!.map(() => 0) }]),
  );
  const r = model.planner.planStop({ state });
  if (!r.ok) return refused(r);
  return {
    ok: true,
    plan: {
      rate: model.planner.rate,
      duration: r.duration,
      arms: r.arms.filter((a) => a.arm in moving).map((a) => planned(a, null)),
    },
  };
}

/** A 5 mm move of the first arm from every arm's home pose: planned once or twice so that the planner is compiled before the first call. */
export function warmUpRequest(model: RobotModel): { start: Record<string, readonly number[]>; targets: ArmTargets[] } {
  const start = Object.fromEntries(model.setup.arms.map((a) => [a.name, a.robot.home]));
  const arm = model.armNames[0]!;
  const p = model.tcpPose(arm, start[arm]!);
  const target: PoseTarget = { position: [p[0]! + 0.005, p[1]!, p[2]!], orientation: p.slice(3) };
  return { start, targets: [Object.fromEntries(model.armNames.map((a) => [a, a === arm ? target : null]))] };
}

/** Position and rotation error of an arm's TCP at joints q from a pose (m, rad). */
export function poseErrorTo(
  model: RobotModel,
  arm: string,
  q: ArrayLike<number>,
  goal: PoseTarget,
): { position: number; rotation: number } {
  const current = forwardKinematics(model.arm(arm).chain, q, new Float64Array(12));
  return poseDistance(fromPose(goal.position, goal.orientation), current);
}

function planned(a: ArmReferences, goal: PoseTarget | null): PlannedArm {
  return { arm: a.arm, joints: a.joints, count: a.count, q: a.q, dq: a.dq, ddq: a.ddq, goal };
}

function refused(r: PlanFailure): PlanResult {
  return { ok: false, code: r.code.replace(/-/g, '_'), arm: r.arm ?? null, message: r.message };
}
