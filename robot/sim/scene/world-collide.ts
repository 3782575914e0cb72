// Contacts of one arm's link capsules with the workcell: objects nobody holds, the scene's fixed
// obstacles, and the table top (no moving capsule may dip below it). The gripper's capsule may
// overlap an object that sits in the jaw's channel and fits between the open fingers: the hand
// is closing around it, not hitting it. A held object hits what its arm carries it into.
import type { Obstacle } from '../../description/types.js';
import type { Transform } from '../../math/transform.js';
import { obstacleDistance } from '../../safety/obstacle-distance.js';
import type { ArmBody } from './world-arm.js';
import type { Placed } from './world-settle.js';
import { bottomZ, obstacleSolid, topZ } from './geometry.js';
import type { SceneObject } from './types.js';
import { boundingCapsule, boundingRadius, objectDistance } from './world-shapes.js';

/** Penetration tolerated before a contact counts (m): resting contact and rounding. */
export const CONTACT_SLACK = 0.001;

export interface Contact {
  arm: string;
  link: string;
  /** An object's or obstacle's name, or `table`. */
  object: string;
  /** How far the capsule reaches into it (m). */
  depth: number;
}

const seg = new Float64Array(6);

/** Every capsule–thing pair of `arm` overlapping by more than CONTACT_SLACK, deepest per pair. */
export function armContacts(
  arm: ArmBody,
  objects: readonly Placed[],
  obstacles: readonly Obstacle[],
  table: number,
  graspTolerance: number,
): Contact[] {
  const c = arm.capsules;
  const found = new Map<string, Contact>();
  const add = (link: string, object: string, d: number) => {
    if (d >= -CONTACT_SLACK) return;
    const key = `${link}\u0000${object}`;
    const prior = found.get(key);
    if (!prior || prior.depth < -d) found.set(key, { arm: arm.name, link, object, depth: -d });
  };
  for (let i = 0; i < c.count; i++) {
    const o = i * 6;
    seg.set(c.world.subarray(o, o + 6));
    const r = c.radius[i]!;
    const link = c.links[i]!;
    const mx = 0.5 * (seg[0]! + seg[3]!),
      my = 0.5 * (seg[1]! + seg[4]!),
      mz = 0.5 * (seg[2]! + seg[5]!);
    for (const { object, pose } of objects) {
      const reach = boundingRadius(object.shape) + c.halfLength[i]! + r;
      if (Math.hypot(pose[3] - mx, pose[7] - my, pose[11] - mz) > reach) continue;
      if (arm.onGripper(i) && arm.inJaw(pose, graspTolerance, true)) {
        if (arm.widthAcross(object.shape, pose) <= arm.opening() + graspTolerance) continue;
      }
      add(link, object.name, objectDistance(seg, r, object, pose));
    }
    for (const ob of obstacles) add(link, ob.name, obstacleDistance(seg, 0, 3, r, ob));
    if (c.frame[i] !== 0) add(link, 'table', Math.min(seg[2]!, seg[5]!) - r - table);
  }
  return [...found.values()];
}

/**
 * Contacts of an object held by `arm`, as its bounding capsule (boundingCapsule, as the planner
 * checks it), with the objects nobody holds, the obstacles and, by its exact bottom, the table.
 * Resting on top of something (its exact bottom no more than CONTACT_SLACK below that one's top)
 * is not a contact; the link is named `held:<object>`.
 */
export function heldContacts(
  arm: string,
  held: SceneObject,
  pose: Transform,
  objects: readonly Placed[],
  obstacles: readonly Obstacle[],
  table: number,
): Contact[] {
  const link = `held:${held.name}`;
  const cap = boundingCapsule(held.shape, pose);
  seg.set(cap.a, 0);
  seg.set(cap.b, 3);
  const bottom = bottomZ(held.shape, pose);
  const out: Contact[] = [];
  const add = (object: string, d: number, top: number) => {
    if (d < -CONTACT_SLACK && bottom < top - CONTACT_SLACK) out.push({ arm, link, object, depth: -d });
  };
  for (const o of objects)
    add(o.object.name, objectDistance(seg, cap.radius, o.object, o.pose), topZ(o.object.shape, o.pose));
  for (const ob of obstacles) add(ob.name, obstacleDistance(seg, 0, 3, cap.radius, ob), obstacleSolid(ob).zMax);
  if (table - bottom > CONTACT_SLACK) out.push({ arm, link, object: 'table', depth: table - bottom });
  return out;
}
