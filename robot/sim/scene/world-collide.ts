// Contacts of one arm's link capsules with the workcell: objects nobody holds, the scene's fixed
// obstacles, and the table top (no moving capsule may dip below it). The gripper's capsule may
// overlap an object that sits in the jaw's channel and fits between the open fingers: the hand
// is closing around it, not hitting it.
import type { Obstacle } from '../../description/types.js';
import { obstacleDistance } from '../../safety/obstacle-distance.js';
import type { ArmBody } from './world-arm.js';
import type { Placed } from './world-settle.js';
import { boundingRadius, objectDistance } from './world-shapes.js';

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
