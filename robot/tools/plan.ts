// Tool targets → timed joint references for the moving arms, or a result code. The one place
// the tool layer calls the motion stack: Cartesian path (sequential IK) per arm, time scaling
// (dual-arm synchronised, resampled at the robot's reference rate with a final hold), then the
// safety checks on the resampled references of every arm (held arms stand still).
import { fromPose } from '../math/quaternion.js';
import { poseDistance } from '../kinematics/pose-error.js';
import { forwardKinematics } from '../kinematics/forward.js';
import { sampleCartesianPath, type PoseTarget } from '../motion/cartesian-path.js';
import { planTiming, type ArmTimingRequest } from '../motion/timing/plan-timing.js';
import { checkTrajectories } from '../safety/trajectory-check.js';
import { degText, mmText } from './outcome.js';
import type { RobotModel } from './robot-model.js';
import type { ArmTargets, Pose } from './validate.js';

/** Final hold appended to every trajectory (s), as GPT-Policy's controllers do. */
export const FINAL_HOLD_S = 0.12;

export interface PlannedArm {
  arm: string;
  joints: string[];
  /** Row i (joints entries) is the reference at i/rate after the start. */
  count: number;
  q: Float64Array;
  /** The last target of this arm (setup frame). */
  goal: Pose;
}

export interface MotionPlan {
  rate: number;
  /** Motion time without the final hold (s). */
  duration: number;
  arms: PlannedArm[];
}

export type PlanCode = 'unreachable' | 'joint_jump' | 'invalid_target' | 'invalid_start' | 'timing' | 'safety' | 'planner_error';

export type PlanResult = { ok: true; plan: MotionPlan } | { ok: false; code: PlanCode; arm: string | null; message: string };

const toTarget = (p: Pose): PoseTarget => ({ position: p.xyz, orientation: p.quat });

/**
 * Plans a path through `targets` (each names every arm; null holds that arm at its previous
 * target) from the measured joints `start` (per arm).
 */
export function planCartesianMotion(model: RobotModel, start: Record<string, readonly number[]>, targets: ArmTargets[]): PlanResult {
  const moving = model.arms.filter((a) => targets.some((t) => t[a.name]));
  const requests: ArmTimingRequest[] = [];
  const goals: Pose[] = [];
  for (const arm of moving) {
    // An arm held at step k stays at its previous target (its current pose before the first).
    let prev: Pose = poseOf(model, arm.name, start[arm.name]!);
    const poses = targets.map((t) => (prev = t[arm.name] ?? prev));
    goals.push(prev);
    const path = sampleCartesianPath(arm.solver, start[arm.name]!, poses.map(toTarget), { sampling: armSampling(model, arm.name), tcpSpeed: armRobot(model, arm.name).tcpSpeed });
    if (path.code === 'unreachable') {
      return fail('unreachable', arm.name, `target ${path.target + 1} is not reachable by arm ${arm.name} (IK ${path.ik} at sample ${path.sample}: ${mmText(path.positionError)} and ${degText(path.rotationError)} away)`);
    }
    if (path.code === 'joint-jump') return fail('joint_jump', arm.name, `the path to target ${path.target + 1} makes joint ${path.joint} of arm ${arm.name} jump ${path.step.toFixed(2)} rad between samples (an IK branch switch); choose a target closer to the current pose`);
    if (path.code === 'invalid-target') return fail('invalid_target', arm.name, `target ${path.target + 1} of arm ${arm.name}: ${path.message}`);
    if (path.code === 'invalid-start') return fail('invalid_start', arm.name, `arm ${arm.name}: ${path.message}`);
    const robot = armRobot(model, arm.name);
    requests.push({
      segments: path.segments.map((s) => ({ joints: path.dof, samples: s.points, q: s.q, length: s.length, rotation: s.angle })),
      limits: robot.joints.map((j) => j.limits),
      tcp: robot.tcpSpeed,
    });
  }
  if (moving.length === 0) return fail('invalid_target', null, 'no arm has a target');
  const rate = armSampling(model, moving[0]!.name).rateHz;
  const timing = planTiming(requests, { rate, hold: FINAL_HOLD_S });
  if (!timing.ok) return fail('timing', timing.arm >= 0 ? moving[timing.arm]!.name : null, `timing failed (${timing.code}): ${timing.message}`);
  const count = timing.arms[0]!.trajectory.count;
  const trajectories = model.arms.map((a) => {
    const i = moving.indexOf(a);
    if (i >= 0) return timing.arms[i]!.trajectory.q;
    const q = new Float64Array(count * a.chain.dof);
    for (let k = 0; k < count; k++) q.set(start[a.name]!, k * a.chain.dof);
    return q;
  });
  const times = Float64Array.from({ length: count }, (_, k) => k / rate);
  const safe = checkTrajectories(model.safety.arms, trajectories.map((q) => ({ times, q })), model.safety.envelope);
  if (!safe.ok) return fail('safety', 'arm' in safe.violation ? safe.violation.arm : safe.violation.arms[0], `unsafe: ${safe.message}`);
  return {
    ok: true,
    plan: {
      rate,
      duration: timing.duration,
      arms: moving.map((a, i) => ({ arm: a.name, joints: a.joints, count, q: timing.arms[i]!.trajectory.q, goal: goals[i]! })),
    },
  };
}

/** A 5 mm move of the first arm from every arm's home pose: planned once or twice so that the planner is compiled before the first call. */
export function warmUpRequest(model: RobotModel): { start: Record<string, readonly number[]>; targets: ArmTargets[] } {
  const start = Object.fromEntries(model.setup.arms.map((a) => [a.name, a.robot.home]));
  const arm = model.armNames[0]!;
  const p = poseOf(model, arm, start[arm]!);
  const target: Pose = { xyz: [p.xyz[0] + 0.005, p.xyz[1], p.xyz[2]], quat: p.quat };
  return { start, targets: [Object.fromEntries(model.armNames.map((a) => [a, a === arm ? target : null]))] };
}

/** Position and rotation error of an arm's TCP at joints q from a pose (m, rad). */
export function poseErrorTo(model: RobotModel, arm: string, q: ArrayLike<number>, goal: Pose): { position: number; rotation: number } {
  const current = forwardKinematics(model.arm(arm).chain, q, new Float64Array(12));
  return poseDistance(fromPose(goal.xyz, goal.quat), current);
}

function poseOf(model: RobotModel, arm: string, q: readonly number[]): Pose {
  const p = model.tcpPose(arm, q);
  return { xyz: [p[0]!, p[1]!, p[2]!], quat: [p[3]!, p[4]!, p[5]!, p[6]!] };
}

const armRobot = (model: RobotModel, arm: string) => model.setup.arms.find((a) => a.name === arm)!.robot;
const armSampling = (model: RobotModel, arm: string) => armRobot(model, arm).path;

function fail(code: PlanCode, arm: string | null, message: string): PlanResult {
  return { ok: false, code, arm, message };
}
