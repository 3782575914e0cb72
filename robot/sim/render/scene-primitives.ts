// What a camera sees of a workcell: the table slab, the objects where the simulation has them,
// the fixed obstacles, each arm's link capsules placed by forward kinematics and its gripper's
// two fingers; and where a camera is (fixed in the world, or on a link that moves with the joints).
import { alignZTo, KinematicChain } from '../../kinematics/chain.js';
import { forwardKinematics } from '../../kinematics/forward.js';
import { compose, fromXyzRpy, identity, type Transform } from '../../math/transform.js';
import type { Triple } from '../../description/types.js';
import type { SetupDescription } from '../../description/types.js';
import { LinkCapsules } from '../../safety/link-capsules.js';
import type { ObjectState, Rgb, SceneCamera, SceneDescription, Shape } from '../scene/types.js';
import type { Primitive, PrimitiveShape } from './mesh.js';
import type { Frame, Rasterizer, RenderOptions } from './rasterizer.js';

/** The table is drawn as a slab this thick (m) below its top. */
export const TABLE_THICKNESS = 0.04;
/** Link capsules are drawn in these greys, in turn along the chain. */
export const LINK_GREYS: Rgb[] = [
  [150, 150, 150],
  [190, 190, 190],
];
/**
 * A parallel gripper's fingers in the TCP frame: two boxes `depth` long along z and `thickness`
 * wide, centred on the TCP, either side of the opening along `axis` (0 closed … openWidth open).
 */
export interface FingerGeometry {
  openWidth: number;
  depth: number;
  thickness: number;
  axis: 'x' | 'y';
}
/** The fingers drawn on an arm whose robot config has a gripper without a `jaw`. */
export const DEFAULT_FINGERS: FingerGeometry = { openWidth: 0.08, depth: 0.05, thickness: 0.02, axis: 'y' };
/** Each finger's size across the opening (m), and its colour. */
export const FINGER_PAD = 0.012;
export const FINGER_COLOR: Rgb = [70, 70, 75];

/** An arm compiled once for drawing: its chain (world frame) and link capsules, plus FK scratch. */
export interface ArmModel {
  name: string;
  chain: KinematicChain;
  capsules: LinkCapsules;
  /** Null for an arm without a gripper. */
  fingers: FingerGeometry | null;
  frames: Float64Array;
  tcp: Transform;
}

/** An arm where the simulation has it: joint positions and the gripper opening (0 closed … 1 open; null: open). */
export interface ArmView {
  model: ArmModel;
  q: ArrayLike<number>;
  gripper: number | null;
}

export function armModels(setup: SetupDescription): ArmModel[] {
  return setup.arms.map(({ name, robot, base }) => {
    const chain = new KinematicChain(robot, { base });
    return {
      name,
      chain,
      capsules: new LinkCapsules(chain, robot.capsules),
      // A robot config's `gripper.jaw` (the simulator's grasp volume) has the fields of FingerGeometry.
      fingers: robot.gripper ? ((robot.gripper as { jaw?: FingerGeometry }).jaw ?? DEFAULT_FINGERS) : null,
      frames: new Float64Array((chain.dof + 1) * 12),
      tcp: new Float64Array(12),
    };
  });
}

/** Runs forward kinematics into the model's frames and places its capsules. */
function place(view: ArmView): void {
  const m = view.model;
  if (view.q.length !== m.chain.dof)
    throw new Error(`arm "${m.name}": ${view.q.length} joint positions given, the arm has ${m.chain.dof}`);
  forwardKinematics(m.chain, view.q, m.tcp, m.frames);
  m.capsules.place(m.frames);
}

/** Pose of the capsule a–b: local z along the axis, centred on the midpoint. */
function capsulePose(a: ArrayLike<number>, b: ArrayLike<number>): Transform {
  const dx = b[0] - a[0],
    dy = b[1] - a[1],
    dz = b[2] - a[2];
  const len = Math.hypot(dx, dy, dz);
  const pose = len > 0 ? alignZTo([dx / len, dy / len, dz / len]) : identity();
  pose[3] = 0.5 * (a[0] + b[0]);
  pose[7] = 0.5 * (a[1] + b[1]);
  pose[11] = 0.5 * (a[2] + b[2]);
  return pose;
}

function capsule(a: ArrayLike<number>, b: ArrayLike<number>, radius: number, color: Rgb): Primitive {
  const length = Math.hypot(b[0] - a[0], b[1] - a[1], b[2] - a[2]);
  return { shape: { kind: 'capsule', radius, length }, pose: capsulePose(a, b), color };
}

function objectShape(shape: Shape): PrimitiveShape {
  switch (shape.kind) {
    case 'box':
      return { kind: 'box', half: [shape.size[0] / 2, shape.size[1] / 2, shape.size[2] / 2] };
    case 'cylinder':
      return shape;
    case 'sphere':
      return shape;
  }
}

function armPrimitives(view: ArmView, out: Primitive[]): void {
  place(view);
  const c = view.model.capsules;
  for (let i = 0; i < c.count; i++) {
    const w = c.world.subarray(6 * i, 6 * i + 6);
    out.push(capsule(w.subarray(0, 3), w.subarray(3, 6), c.radius[i], LINK_GREYS[i % LINK_GREYS.length]));
  }
  const f = view.model.fingers;
  if (!f) return;
  const opening = f.openWidth * Math.min(1, Math.max(0, view.gripper ?? 1));
  const across = f.axis === 'x' ? 0 : 1;
  const half: Triple = [f.thickness / 2, f.thickness / 2, f.depth / 2];
  half[across] = FINGER_PAD / 2;
  for (const side of [-1, 1]) {
    const xyz: Triple = [0, 0, 0];
    xyz[across] = side * (opening / 2 + FINGER_PAD / 2);
    const pose = compose(new Float64Array(12), view.model.tcp, fromXyzRpy(xyz, [0, 0, 0]));
    out.push({ shape: { kind: 'box', half }, pose, color: FINGER_COLOR });
  }
}

/** Everything a camera draws, in a fixed order: table, obstacles, objects, arms. */
export function scenePrimitives(scene: SceneDescription, objects: ObjectState[], arms: ArmView[]): Primitive[] {
  const out: Primitive[] = [];
  const t = scene.table;
  const slab = fromXyzRpy([t.center[0], t.center[1], t.height - TABLE_THICKNESS / 2], [0, 0, 0]);
  out.push({
    shape: { kind: 'box', half: [t.size[0] / 2, t.size[1] / 2, TABLE_THICKNESS / 2] },
    pose: slab,
    color: t.color,
  });
  for (const o of scene.obstacles) {
    if (o.shape === 'box') out.push({ shape: { kind: 'box', half: o.half }, pose: o.pose, color: o.color });
    else if (o.shape === 'sphere')
      out.push({ shape: { kind: 'sphere', radius: o.radius }, pose: fromXyzRpy(o.center, [0, 0, 0]), color: o.color });
    else out.push(capsule(o.a, o.b, o.radius, o.color));
  }
  const described = new Map(scene.objects.map((o) => [o.name, o]));
  for (const state of objects) {
    const o = described.get(state.name);
    if (!o) throw new Error(`object "${state.name}" is not in scene "${scene.name}"`);
    out.push({ shape: objectShape(o.shape), pose: state.pose, color: o.color });
  }
  for (const view of arms) armPrimitives(view, out);
  return out;
}

/** World-from-optical pose of a camera: its pose, or for a link mount the link's frame (from FK) times its pose. */
export function cameraPose(camera: SceneCamera, arms: ArmView[], out: Transform = new Float64Array(12)): Transform {
  if (camera.mount.kind === 'world') {
    out.set(camera.pose);
    return out;
  }
  const { arm, link } = camera.mount;
  const view = arms.find((a) => a.model.name === arm);
  if (!view) throw new Error(`camera "${camera.name}": mount.arm "${arm}" is not an arm of this scene`);
  place(view);
  const frame = view.model.chain.linkFrame(link, out);
  compose(out, view.model.frames.subarray(12 * frame, 12 * frame + 12), out);
  return compose(out, out, camera.pose);
}

/** One camera's frame of the scene (with depth when the camera asks for it or `options` does). */
export function renderCamera(
  rasterizer: Rasterizer,
  scene: SceneDescription,
  camera: SceneCamera,
  objects: ObjectState[],
  arms: ArmView[],
  options: RenderOptions = {},
): Frame {
  const pose = cameraPose(camera, arms);
  return rasterizer.render(camera, pose, scenePrimitives(scene, objects, arms), {
    ...options,
    depth: options.depth ?? camera.depth,
  });
}
