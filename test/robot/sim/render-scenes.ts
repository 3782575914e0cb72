// Hand-built workcell scenes and camera poses for the renderer's tests (no scene files needed).
import { fromXyzRpy, type Transform } from '../../../robot/math/transform.js';
import type { Triple } from '../../../robot/description/types.js';
import type { Rgb, SceneCamera, SceneDescription, SceneObject, Shape } from '../../../robot/sim/scene/types.js';

/** 640×480, fx = fy = 500, principal point at the image centre. */
export const INTRINSICS = { width: 640, height: 480, fx: 500, fy: 500, cx: 320, cy: 240 };

/** World-from-optical of a camera at `eye` looking straight down (+x right in the image, +y world up the image). */
export function lookingDown(eye: Triple): Transform {
  return fromXyzRpy(eye, [Math.PI, 0, 0]);
}

/** World-from-optical of a camera at `eye` looking at `target` with world +z up in the image. */
export function lookAt(eye: Triple, target: Triple): Transform {
  const f = target.map((t, i) => t - eye[i]);
  const fl = Math.hypot(f[0], f[1], f[2]);
  const z = f.map((x) => x / fl);
  const rl = Math.hypot(z[1], z[0]);
  const x = [z[1] / rl, -z[0] / rl, 0];
  const y = [z[1] * x[2] - z[2] * x[1], z[2] * x[0] - z[0] * x[2], z[0] * x[1] - z[1] * x[0]];
  const t = new Float64Array(12);
  for (let i = 0; i < 3; i++) {
    t[4 * i] = x[i];
    t[4 * i + 1] = y[i];
    t[4 * i + 2] = z[i];
    t[4 * i + 3] = eye[i];
  }
  return t;
}

export function camera(name: string, pose: Transform, extra: Partial<SceneCamera> = {}): SceneCamera {
  return { name, ...INTRINSICS, mount: { kind: 'world' }, pose, rate: 10, encoding: 'png', depth: true, ...extra };
}

export function object(name: string, shape: Shape, color: Rgb, xyz: Triple, yaw = 0): SceneObject {
  return { name, shape, mass: 0.1, color, pose: fromXyzRpy(xyz, [0, 0, yaw]), tags: [], noise: { xy: 0, yaw: 0 } };
}

export const TABLE_COLOR: Rgb = [160, 120, 80];

export function scene(objects: SceneObject[], cameras: SceneCamera[], robot = 'yam'): SceneDescription {
  return {
    name: 'test',
    description: 'a hand-built scene',
    robot,
    table: { height: 0, size: [1.2, 1], center: [0.3, 0], color: TABLE_COLOR },
    objects,
    obstacles: [],
    cameras,
    success: [],
    graspTolerance: 0.01,
  };
}

/** Objects where the scene puts them, none held. */
export function atRest(s: SceneDescription) {
  return s.objects.map((o) => ({ name: o.name, pose: o.pose, heldBy: null }));
}
