// Where objects rest: seeded start-up noise, settling every object straight down at start, and
// the drop of a released object. An object rests on the highest surface under its centre: the
// table top (an unbounded plane), the top of another object, or a container's floor.
import { Prng } from '../../common/prng.js';
import type { Transform } from '../../math/transform.js';
import type { SceneObject } from './types.js';
import { CONTAINER_FLOOR, footprintContains, halfHeight, isContainer, uprightPose, yawOf } from './world-shapes.js';

/** A released object rests on a surface up to this far above its bottom (m): it was pressed into it. */
export const DROP_SLACK = 0.005;

export interface Placed {
  object: SceneObject;
  pose: Transform;
}

/** Initial poses with seeded uniform noise: per object in scene order, dx, dy (± noise.xy) and dyaw (± noise.yaw). */
export function noisyPoses(objects: readonly SceneObject[], seed: number): Transform[] {
  const rng = new Prng(seed);
  return objects.map((o) => {
    const dx = rng.uniform(-o.noise.xy, o.noise.xy);
    const dy = rng.uniform(-o.noise.xy, o.noise.xy);
    const dyaw = rng.uniform(-o.noise.yaw, o.noise.yaw);
    const p = o.pose;
    return uprightPose(p[3] + dx, p[7] + dy, p[11], yawOf(p) + dyaw);
  });
}

/** The height (m) an object lands on at (x, y): the highest surface of `others` at or below `ceiling`, else the table. */
export function surfaceBelow(x: number, y: number, ceiling: number, table: number, others: readonly Placed[]): number {
  let z = table;
  for (const { object, pose } of others) {
    if (!footprintContains(object.shape, pose, x, y)) continue;
    const h = halfHeight(object.shape);
    const s = isContainer(object) ? pose[11] - h + CONTAINER_FLOOR : pose[11] + h;
    if (s <= ceiling && s > z) z = s;
  }
  return z;
}

/**
 * Start-up: objects settle lowest first (containers first among equals, then scene order), each
 * straight down onto what settled before it; every object ends upright with its heading kept.
 */
export function settleAll(objects: readonly SceneObject[], poses: readonly Transform[], table: number): Transform[] {
  const order = objects
    .map((o, i) => ({ i, bottom: poses[i]![11] - halfHeight(o.shape), container: isContainer(o) }))
    .sort((a, b) => a.bottom - b.bottom || Number(b.container) - Number(a.container) || a.i - b.i);
  const out: Transform[] = new Array(objects.length);
  const settled: Placed[] = [];
  for (const { i } of order) {
    const o = objects[i]!;
    const p = poses[i]!;
    const z = surfaceBelow(p[3], p[7], Infinity, table, settled) + halfHeight(o.shape);
    out[i] = uprightPose(p[3], p[7], z, yawOf(p));
    settled.push({ object: o, pose: out[i]! });
  }
  return out;
}

/** Where a released object comes to rest: straight down from `pose`, upright, heading kept. */
export function dropPose(object: SceneObject, pose: Transform, table: number, others: readonly Placed[]): Transform {
  const h = halfHeight(object.shape);
  const z = surfaceBelow(pose[3], pose[7], pose[11] - h + DROP_SLACK, table, others) + h;
  return uprightPose(pose[3], pose[7], z, yawOf(pose));
}
