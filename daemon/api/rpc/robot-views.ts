// What a viewer (the operator console) needs beyond state: robots.describe (each arm's kinematic
// chain, limits, capsules and the simulated scene's layout) and robots.plans (the last trajectory
// sent to each arm), so a page can draw the arms by forward kinematics and ghost their plans.
import type { Obstacle, RobotDescription } from '../../../robot/description/types.js';
import { int, obj } from '../../../robot/common/validation/builders.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';
import type { SceneDescription } from '../../../robot/sim/scene/types.js';
import type { RobotLink } from '../../robots/link-service.js';
import type { RpcRegistry } from './registry.js';
import { robotParam, servedRobot } from './robots.js';

const r6 = (x: number) => Math.round(x * 1e6) / 1e6;
const tf = (t: Float64Array) => Array.from(t, r6);
/** ±Infinity (continuous joints) as null: JSON has no infinity. */
const finite = (x: number) => (Number.isFinite(x) ? r6(x) : null);

function arm(name: string, base: Float64Array, r: RobotDescription) {
  return {
    name,
    robot: r.name,
    base: tf(base),
    joints: r.joints.map((j) => ({
      name: j.name,
      type: j.type,
      parent: j.parent,
      child: j.child,
      origin: tf(j.origin),
      axis: j.axis,
      limits: { ...j.limits, lower: finite(j.limits.lower), upper: finite(j.limits.upper) },
    })),
    links: r.links.map((l) => ({ name: l.name, frame: l.frame, offset: tf(l.offset) })),
    flange: tf(r.flange),
    tcp: tf(r.tcp),
    home: r.home,
    capsules: r.capsules,
    gripper: r.gripper ? { min: r.gripper.min, max: r.gripper.max, unit: r.gripper.unit } : null,
  };
}

const obstacle = (o: Obstacle) => (o.shape === 'box' ? { ...o, pose: tf(o.pose) } : o);

/** The layout of a shipped scene the robot's simulator announced (shapes, colours, table), or null. */
function sceneLayout(name: string | undefined): Record<string, unknown> | null {
  if (!name || !/^[a-z0-9][a-z0-9_-]*$/.test(name)) return null;
  const loaded = loadScene(name);
  if (!loaded.ok) return null;
  const s: SceneDescription = loaded.value;
  return {
    name: s.name,
    table: s.table,
    objects: s.objects.map((o) => ({ name: o.name, shape: o.shape, color: o.color, tags: o.tags })),
    obstacles: s.obstacles.map(obstacle),
    // Where each camera is fixed: a link-mounted one's metadata says only its pose at capture.
    cameras: s.cameras.map((c) => ({
      name: c.name,
      mount: c.mount.kind === 'world' ? 'world' : { arm: c.mount.arm, link: c.mount.link },
      pose: tf(c.pose),
    })),
  };
}

/** Every `step`-th point and the last: at most `max` points of a trajectory. */
function thin<T>(points: T[], max: number): T[] {
  if (points.length <= max) return points;
  const step = Math.ceil(points.length / (max - 1));
  const out = points.filter((_, i) => i % step === 0);
  if (out[out.length - 1] !== points[points.length - 1]) out.push(points[points.length - 1]!);
  return out;
}

export function registerRobotViewMethods(rpc: RpcRegistry, link: RobotLink): void {
  rpc.register(
    'robots.describe',
    obj({ robot: robotParam }),
    ({ robot: id }) => {
      const r = servedRobot(link, id);
      const setup = r.model.setup;
      return {
        robot: id,
        kind: r.kind,
        setup: setup.name,
        description: setup.summary,
        arms: setup.arms.map((a) => arm(a.name, a.base, a.robot)),
        table: setup.table,
        workspace: setup.workspace,
        obstacles: setup.obstacles.map(obstacle),
        scene: sceneLayout(r.simScene?.msg.scene),
      };
    },
    'kinematic chains (joint origins and axes, limits), link capsules, base poses, table and the simulated scene layout of a robot, for drawing it',
  );

  rpc.register(
    'robots.plans',
    obj({
      robot: robotParam,
      max_points: int({ min: 2, max: 100_000, default: 500, doc: 'points per arm, thinned evenly' }),
    }),
    ({ robot: id, max_points }) => {
      const r = servedRobot(link, id);
      const now = link.now();
      const plans = Object.fromEntries(
        [...r.plans].map(([armName, { msg, at }]) => [
          armName,
          {
            id: msg.id,
            age_s: r6(now - at),
            start_time: msg.start_time,
            joints: msg.joints,
            duration_s: msg.points[msg.points.length - 1]!.t,
            points: thin(msg.points, max_points),
          },
        ]),
      );
      return { robot: id, controller_time: r.session.latest?.time ?? null, plans };
    },
    'the last trajectory sent to each arm of a robot (times on the controller clock from start_time), thinned to max_points',
  );
}
