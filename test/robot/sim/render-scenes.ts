// Hand-built workcell scenes and camera poses for the renderer's tests (no scene files needed).
import { fromXyzRpy, type Transform } from '../../../robot/math/transform.js';
import type { Triple } from '../../../robot/description/types.js';
import { bottomZ } from '../../../robot/sim/scene/geometry.js';
import { lookAt as sceneLookAt } from '../../../robot/sim/scene/scene-cameras.js';
import type { Rgb, SceneCamera, SceneDescription, SceneObject, Shape } from '../../../robot/sim/scene/types.js';

/** 640×480, fx = fy = 500, principal point at the image centre. */
export const INTRINSICS = { width: 640, height: 480, fx: 500, fy: 500, cx: 320, cy: 240 };

/** World-from-optical of a camera at `eye` looking straight down (+x right in the image, +y world up the image). */
export function lookingDown(eye: Triple): Transform {
  return fromXyzRpy(eye, [Math.PI, 0, 0]);
}

/** World-from-optical of a camera at `eye` looking at `target` with world +z up in the image. */
export const lookAt = (eye: Triple, target: Triple): Transform => sceneLookAt(eye, target)!;

export function camera(name: string, pose: Transform, extra: Partial<SceneCamera> = {}): SceneCamera {
  return { name, ...INTRINSICS, mount: { kind: 'world' }, pose, rate: 10, encoding: 'png', depth: true, ...extra };
}

export function object(name: string, shape: Shape, color: Rgb, xyz: Triple, yaw = 0): SceneObject {
  const pose = fromXyzRpy(xyz, [0, 0, yaw]);
  return { name, shape, mass: 0.1, color, pose, tags: [], noise: { xy: 0, yaw: 0 }, restZ: bottomZ(shape, pose) };
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
    predicates: [],
    tasks: [],
    graspTolerance: 0.01,
  };
}

/** Objects where the scene puts them, none held. */
export function atRest(s: SceneDescription) {
  return s.objects.map((o) => ({ name: o.name, pose: o.pose, heldBy: null }));
}
