// A simulator's ground truth (`sim/scene`) → the scene the planner's safety check covers: the
// objects nobody holds, the scene's obstacles, per arm the measured gripper position and the
// object its gripper holds, placed relative to the TCP by FK of the measured joints.
import type { Obstacle, Triple } from '../description/types.js';
import type { SimObstacle, SimSceneMsg } from '../link/sim-scene.js';
import { forwardKinematics } from '../kinematics/forward.js';
import { fromPose } from '../math/quaternion.js';
import { compose, invert } from '../math/transform.js';
import type { PlanScene } from '../motion/planner/types.js';
import type { RobotModel } from './robot-model.js';

/** What the daemon knows of a simulated workcell when it plans: its latest ground truth and grippers. */
export interface SceneSnapshot {
  msg: SimSceneMsg;
  /** Measured gripper positions by arm (0 closed … 1 open; null without a gripper). */
  grippers: Record<string, number | null>;
}

/**
 * The planner's scene. An object counts as held only by an arm in `grasped` (its gripper command
 * finished on an object) that the ground truth names; otherwise it is checked where it is, so a
 * ground truth a moment older than the grasp or release never hides an object.
 */
export function planScene(
  model: RobotModel,
  snap: SceneSnapshot,
  start: Record<string, readonly number[]>,
  grasped: readonly string[],
): PlanScene {
  const scene: PlanScene = {
    objects: [],
    obstacles: (snap.msg.obstacles ?? []).map(obstacle),
    graspTolerance: snap.msg.grasp_tolerance ?? 0,
    arms: Object.fromEntries(model.armNames.map((a) => [a, { gripper: snap.grippers[a] ?? null }])),
  };
  for (const o of snap.msg.objects) {
    if (!o.shape) continue;
    const pose = fromPose(o.pose.slice(0, 3), o.pose.slice(3));
    const arm = o.held_by !== null && grasped.includes(o.held_by) ? scene.arms[o.held_by] : undefined;
    const q = arm && start[o.held_by!];
    if (arm && q) {
      const tcp = forwardKinematics(model.arm(o.held_by!).chain, q, new Float64Array(12));
      arm.held = {
        name: o.name,
        shape: o.shape,
        tcpFromObject: compose(new Float64Array(12), invert(new Float64Array(12), tcp), pose),
      };
    } else scene.objects.push({ name: o.name, shape: o.shape, pose, tags: o.container ? ['container'] : [] });
  }
  return scene;
}

function obstacle(o: SimObstacle): Obstacle {
  const t = (v: number[]) => [v[0]!, v[1]!, v[2]!] as Triple;
  if (o.shape === 'sphere') return { name: o.name, shape: 'sphere', center: t(o.center), radius: o.radius };
  if (o.shape === 'capsule') return { name: o.name, shape: 'capsule', a: t(o.a), b: t(o.b), radius: o.radius };
  return {
    name: o.name,
    shape: 'box',
    pose: fromPose(o.pose.slice(0, 3), o.pose.slice(3)),
    half: [o.size[0]! / 2, o.size[1]! / 2, o.size[2]! / 2],
  };
}
