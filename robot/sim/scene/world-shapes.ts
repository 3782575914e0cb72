// Geometry of the simulated workcell's objects, which always stand upright (a rotation about
// world z only): heights, footprints, widths across a direction, and a capsule's signed
// distance to an object. A `container` is hollow: only its wall and floor are solid.
import type { Transform } from '../../math/transform.js';
import { rotationZ } from '../../math/transform.js';
import { segmentBoxDistance, segmentCylinderDistance } from '../../safety/obstacle-distance.js';
import { segmentDistance } from '../../safety/segment-distance.js';
import { halfHeight } from './geometry.js';
import { isContainer } from './scene-layout.js';
import type { Triple } from '../../description/types.js';
import type { SceneObject, Shape } from './types.js';

/** Thickness of a container's floor (m): objects dropped into it rest this far above its bottom. */
export const CONTAINER_FLOOR = 0.005;
/** Thickness of a container's side wall (m): an arm may reach into the cavity inside it. */
export const CONTAINER_WALL = 0.005;

/** Radius of a sphere about the centre that encloses the shape (m). */
export function boundingRadius(s: Shape): number {
  if (s.kind === 'box') return 0.5 * Math.hypot(s.size[0], s.size[1], s.size[2]);
  if (s.kind === 'cylinder') return Math.hypot(s.radius, s.height / 2);
  return s.radius;
}

/**
 * The capsule bounding a shape placed by `frame` (endpoints in frame's parent): a box over its
 * longest axis with the half-diagonal of the other two as radius, a cylinder over its axis, a
 * sphere exactly. How a held object is checked, by the planner and the simulator alike.
 */
export function boundingCapsule(s: Shape, frame: Transform): { a: Triple; b: Triple; radius: number } {
  const a = [0, 0, 0],
    b = [0, 0, 0];
  let radius = s.kind === 'box' ? 0 : s.radius;
  if (s.kind === 'box') {
    const h = s.size.map((x) => x / 2);
    const i = h.indexOf(Math.max(...h));
    a[i] = -h[i]!;
    b[i] = h[i]!;
    radius = Math.hypot(...h.filter((_, j) => j !== i));
  } else if (s.kind === 'cylinder') {
    a[2] = -s.height / 2;
    b[2] = s.height / 2;
  }
  const put = (p: number[]): Triple => {
    const out = [0, 0, 0] as Triple;
    for (let r = 0; r < 3; r++)
      out[r] = frame[r * 4]! * p[0]! + frame[r * 4 + 1]! * p[1]! + frame[r * 4 + 2]! * p[2]! + frame[r * 4 + 3]!;
    return out;
  };
  return { a: put(a), b: put(b), radius };
}

/** Heading of a pose: the angle of its x axis projected onto the world xy plane (rad). */
export function yawOf(pose: Transform): number {
  return Math.atan2(pose[4], pose[0]);
}

/** The upright pose at (x, y, z) with heading `yaw`. */
export function uprightPose(x: number, y: number, z: number, yaw: number): Transform {
  const t = rotationZ(new Float64Array(12), yaw);
  t[3] = x;
  t[7] = y;
  t[11] = z;
  return t;
}

/** Extent of an object at `pose` along the world unit direction u (m). */
export function widthAlong(s: Shape, pose: Transform, u: ArrayLike<number>): number {
  if (s.kind === 'sphere') return 2 * s.radius;
  if (s.kind === 'cylinder') return 2 * s.radius * Math.hypot(u[0], u[1]) + s.height * Math.abs(u[2]);
  let w = 0;
  for (let i = 0; i < 3; i++) w += Math.abs(u[0] * pose[i] + u[1] * pose[4 + i] + u[2] * pose[8 + i]) * s.size[i];
  return w;
}

const cavityPose = new Float64Array(12);
const point = new Float64Array(3);
const end = new Float64Array(6);

/**
 * Signed surface distance (m) from the capsule (axis e[0..5], radius r) to an object at `pose`.
 * A container counts as solid only where the capsule is not wholly inside its cavity (the
 * shape shrunk by the wall, from the floor up, open above): the arm may reach in, not through the wall.
 */
export function objectDistance(
  e: Float64Array,
  r: number,
  o: Pick<SceneObject, 'shape' | 'tags'>,
  pose: Transform,
): number {
  const s = o.shape;
  let d: number;
  if (s.kind === 'sphere') {
    point[0] = pose[3];
    point[1] = pose[7];
    point[2] = pose[11];
    return segmentDistance(e, 0, 3, point, 0, 0) - r - s.radius;
  }
  if (s.kind === 'box') d = segmentBoxDistance(e, pose, [s.size[0] / 2, s.size[1] / 2, s.size[2] / 2]) - r;
  else d = segmentCylinderDistance(e, pose, s.radius, s.height / 2) - r;
  if (d >= 0 || !isContainer(o)) return d;
  // Wholly in the cavity: clear. Else it reaches into the wall or floor by at most as far as it
  // sticks out of the cavity (a touch of the floor is a touch, not the solid shape's depth).
  const out = cavityProtrusion(e, r, s, pose);
  return out <= 0 ? 0 : Math.max(d, -out);
}

/**
 * How far (m) the capsule sticks out of the container's cavity: the larger of its two ends'
 * (the signed distance to a convex cavity is convex along the axis, so an end holds the maximum);
 * ≤ 0 when it lies wholly inside.
 */
function cavityProtrusion(e: Float64Array, r: number, s: Shape, pose: Transform): number {
  const h = halfHeight(s, pose);
  // The cavity as a solid from the floor to far above the rim: centred, tall, shifted up.
  const reach = 10;
  cavityPose.set(pose);
  cavityPose[11] = pose[11] - h + CONTAINER_FLOOR + reach;
  let out = -Infinity;
  for (const k of [0, 3]) {
    end.set(e.subarray(k, k + 3), 0);
    end.set(e.subarray(k, k + 3), 3);
    const inside =
      s.kind === 'box'
        ? segmentBoxDistance(end, cavityPose, [s.size[0] / 2 - CONTAINER_WALL, s.size[1] / 2 - CONTAINER_WALL, reach])
        : segmentCylinderDistance(end, cavityPose, s.radius - CONTAINER_WALL, reach);
    out = Math.max(out, inside + r);
  }
  return out;
}
