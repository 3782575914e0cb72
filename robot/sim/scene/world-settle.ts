// Where objects rest: seeded start-up noise, settling every object straight down at start, and
// the drop of a released object. An object rests on the highest surface under its centre and
// not above its bottom: the table top (an unbounded plane), an obstacle's top, another object's
// top, or a container's floor. Objects always end upright with their heading kept.
import { Prng } from '../../common/prng.js';
import type { Obstacle } from '../../description/types.js';
import type { Transform } from '../../math/transform.js';
import { footprintContains, footprintHas, halfHeight, obstacleSolid } from './geometry.js';
import { isContainer } from './scene-layout.js';
import type { SceneObject } from './types.js';
import { CONTAINER_FLOOR, uprightPose, yawOf } from './world-shapes.js';

/** An object may rest on a surface up to this far above its bottom (m): it was pressed into it. */
export const DROP_SLACK = 0.005;

export interface Placed {
  object: SceneObject;
  pose: Transform;
}

/** What objects rest on: the table height, fixed obstacles, and the objects already resting. */
export interface Ground {
  table: number;
  obstacles: readonly Obstacle[];
}

/** Initial poses with seeded uniform noise: per object in scene order, dx, dy (± noise.xy) and dyaw (± noise.yaw). */
export function noisyPoses(objects: readonly SceneObject[], seed: number): Transform[] {
  const rng = new Prng(seed);
  return objects.map((o) => {
    const dx = rng.uniform(-o.noise.xy, o.noise.xy);
    const dy = rng.uniform(-o.noise.xy, o.noise.xy);
    const dyaw = rng.uniform(-o.noise.yaw, o.noise.yaw);
    const p = o.pose;
    return uprightPose(p[3]! + dx, p[7]! + dy, p[11]!, yawOf(p) + dyaw);
  });
}

/** The height (m) something lands on at (x, y): the highest surface at or below `ceiling`, else the table. */
export function surfaceBelow(x: number, y: number, ceiling: number, ground: Ground, others: readonly Placed[]): number {
  let z = ground.table;
  const consider = (s: number) => {
    if (s <= ceiling && s > z) z = s;
  };
  for (const o of ground.obstacles) {
    const solid = obstacleSolid(o);
    if (footprintHas(solid.footprint, x, y)) consider(solid.zMax);
  }
  for (const { object, pose } of others) {
    if (!footprintContains(object.shape, pose, x, y)) continue;
    const h = halfHeight(object.shape, pose);
    consider(isContainer(object) ? pose[11]! - h + CONTAINER_FLOOR : pose[11]! + h);
  }
  return z;
}

/** Where an object at `pose` comes to rest: straight down, upright, heading kept. */
export function dropPose(object: SceneObject, pose: Transform, ground: Ground, others: readonly Placed[]): Transform {
  const upright = uprightPose(pose[3]!, pose[7]!, pose[11]!, yawOf(pose));
  const h = halfHeight(object.shape, upright);
  const z = surfaceBelow(pose[3]!, pose[7]!, pose[11]! - h + DROP_SLACK, ground, others) + h;
  upright[11] = z;
  return upright;
}

/**
 * Start-up: objects drop lowest first (containers first among equals, then scene order), each
 * onto what rests before it.
 */
export function settleAll(objects: readonly SceneObject[], poses: readonly Transform[], ground: Ground): Transform[] {
  const order = objects
    .map((o, i) => ({ i, bottom: poses[i]![11]! - halfHeight(o.shape, poses[i]!), container: isContainer(o) }))
    .sort((a, b) => a.bottom - b.bottom || Number(b.container) - Number(a.container) || a.i - b.i);
  const out: Transform[] = new Array(objects.length);
  const settled: Placed[] = [];
  for (const { i } of order) {
    out[i] = dropPose(objects[i]!, poses[i]!, ground, settled);
    settled.push({ object: objects[i]!, pose: out[i]! });
  }
  return out;
}
