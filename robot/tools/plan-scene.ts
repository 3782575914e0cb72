// A simulator's ground truth (`sim/scene`) → the scene the planner's safety check covers: the
// objects nobody holds, the scene's obstacles, per arm the measured gripper position and the
// object its gripper holds, placed relative to the TCP by FK of the measured joints.
import type { Obstacle, Triple } from '../description/types.js';
import type { SimObstacle, SimSceneMsg } from '../link/sim-scene.js';
import { forwardKinematics } from '../kinematics/forward.js';
import { boundingRadius } from '../sim/scene/world-shapes.js';
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
 * finished on an object): the one the ground truth names, or, while the ground truth is older than
 * the grasp, the free object whose centre lies nearest the arm's TCP within the object's bounding
 * radius (the one the closed jaw holds). Any other object is checked where it is.
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
  const holder = heldBy(model, snap, start, grasped);
  for (const o of snap.msg.objects) {
    if (!o.shape) continue;
    const pose = fromPose(o.pose.slice(0, 3), o.pose.slice(3));
    // heldBy names only arms of the model that have measured joints.
    const by = holder.get(o.name);
    const arm = by === undefined ? undefined : scene.arms[by];
    const q = by === undefined ? undefined : start[by];
    if (arm && q) {
      const tcp = forwardKinematics(model.arm(by!).chain, q, new Float64Array(12));
      arm.held = {
        name: o.name,
        shape: o.shape,
        tcpFromObject: compose(new Float64Array(12), invert(new Float64Array(12), tcp), pose),
      };
    } else scene.objects.push({ name: o.name, shape: o.shape, pose, tags: o.container ? ['container'] : [] });
  }
  return scene;
}

/** Object name → the grasped arm holding it (see planScene). */
function heldBy(
  model: RobotModel,
  snap: SceneSnapshot,
  start: Record<string, readonly number[]>,
  grasped: readonly string[],
): Map<string, string> {
  // Only the model's arms, as own keys of `start`: a name like `constructor` must not reach model.arm().
  const arms = model.armNames.filter((a) => grasped.includes(a) && Object.hasOwn(start, a));
  const out = new Map<string, string>();
  for (const o of snap.msg.objects) if (o.held_by !== null && arms.includes(o.held_by)) out.set(o.name, o.held_by);
  const named = new Set(out.values());
  for (const arm of arms) {
    const q = start[arm]!;
    if (named.has(arm)) continue;
    const tcp = forwardKinematics(model.arm(arm).chain, q, new Float64Array(12));
    let best: { name: string; d: number } | undefined;
    for (const o of snap.msg.objects) {
      if (!o.shape || o.held_by !== null || out.has(o.name)) continue;
      const d = Math.hypot(o.pose[0]! - tcp[3]!, o.pose[1]! - tcp[7]!, o.pose[2]! - tcp[11]!);
      if (d <= boundingRadius(o.shape) && (!best || d < best.d)) best = { name: o.name, d };
    }
    if (best) out.set(best.name, arm);
  }
  return out;
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
