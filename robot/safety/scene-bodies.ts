// Objects of a simulated workcell in the safety check (its ground truth, `sim/scene`): link
// capsules against the objects nobody holds, and the object an arm holds against those objects
// and its own links but the gripper's. Allowed contact, and nothing more: the gripper's capsules
// may enclose an object in the jaw's channel that fits the current opening (it is about to be
// grasped, the simulator's rule), and a held object may rest on a surface below it.
import type { HeldObject } from '../description/types.js';
import { compose, type Transform } from '../math/transform.js';
import { topZ } from '../sim/scene/geometry.js';
import type { SceneObject, Shape } from '../sim/scene/types.js';
import { CONTACT_SLACK } from '../sim/scene/world-collide.js';
import { boundingCapsule, boundingRadius, objectDistance, widthAlong } from '../sim/scene/world-shapes.js';
import { heldLink } from './held-object.js';
import { closingAxis, inJaw } from './jaw.js';
import { segmentDistance } from './segment-distance.js';
import type { ArmSafetyModel, SafetyEnvelope, SafetyViolation } from './trajectory-check.js';

/** An object of the scene nobody holds, in the planner's frame (`tags` as the scene's: `container` is hollow). */
export type SceneBody = Pick<SceneObject, 'name' | 'shape' | 'pose' | 'tags'>;

/** An object an arm holds: its shape and its pose relative to the TCP. */
export interface HeldBody {
  name: string;
  shape: Shape;
  tcpFromObject: Transform;
}

/** How far a held object may sink into the surface it is set down on (m): the simulator's resting contact. */
export const REST_SLACK = CONTACT_SLACK;

/** The capsule (TCP frame) bounding a held body. */
export function heldCapsule(body: HeldBody): HeldObject {
  return { name: body.name, ...boundingCapsule(body.shape, body.tcpFromObject) };
}

const objectPose = new Float64Array(12);

/** How far the held body reaches below the table plane at this TCP pose (m; ≤ 0 when clear): its exact shape. */
export function heldBodyDepth(body: HeldBody, tcp: Transform, env: SafetyEnvelope): number {
  compose(objectPose, tcp, body.tcpFromObject);
  const n = env.table.normal;
  const centre = n[0] * objectPose[3]! + n[1] * objectPose[7]! + n[2] * objectPose[11]!;
  return env.table.offset - (centre - support(body.shape, objectPose, n));
}

/** Lowest world z of the held body at this TCP pose. */
export function heldBodyBottom(body: HeldBody, tcp: Transform): number {
  compose(objectPose, tcp, body.tcpFromObject);
  return objectPose[11]! - support(body.shape, objectPose, [0, 0, 1]);
}

/** Half the shape's extent along the unit direction u at `pose` (any rotation). */
function support(s: Shape, pose: Transform, u: readonly number[]): number {
  if (s.kind === 'sphere') return s.radius;
  const along = (i: number) => Math.abs(u[0]! * pose[i]! + u[1]! * pose[4 + i]! + u[2]! * pose[8 + i]!);
  if (s.kind === 'box') return (along(0) * s.size[0] + along(1) * s.size[1] + along(2) * s.size[2]) / 2;
  const c = Math.min(1, along(2));
  return (c * s.height) / 2 + s.radius * Math.sqrt(1 - c * c);
}

const seg = new Float64Array(6);
const axis = new Float64Array(3);

/**
 * The first link capsule of `arm` reaching into an object nobody holds at sample k. The
 * gripper's capsules (on the last chain frame) may enclose an object whose centre is in the
 * jaw's channel at the arm's opening and whose width fits it (the simulator's grasp approach).
 */
export function objectHit(
  arm: ArmSafetyModel,
  tcp: Transform,
  env: SafetyEnvelope,
  k: number,
): SafetyViolation | undefined {
  const objects = env.objects ?? [];
  if (objects.length === 0) return undefined;
  const c = arm.capsules;
  const tol = env.graspTolerance ?? 0;
  for (let i = 0; i < c.count; i++) {
    const o = i * 6;
    for (const body of objects) {
      const p = body.pose;
      const reach = boundingRadius(body.shape) + c.halfLength[i]! + c.radius[i]!;
      const mx = 0.5 * (c.world[o]! + c.world[o + 3]!),
        my = 0.5 * (c.world[o + 1]! + c.world[o + 4]!),
        mz = 0.5 * (c.world[o + 2]! + c.world[o + 5]!);
      if (Math.hypot(p[3]! - mx, p[7]! - my, p[11]! - mz) > reach) continue;
      if (c.frame[i] === arm.chain.dof && enclosed(arm, tcp, body, tol)) continue;
      seg.set(c.world.subarray(o, o + 6));
      const d = objectDistance(seg, c.radius[i]!, body, p);
      if (d < 0)
        return {
          code: 'object',
          arm: arm.name,
          link: c.links[i]!,
          object: body.name,
          sample: k,
          distance: d,
          clearance: 0,
        };
    }
  }
  return undefined;
}

function enclosed(arm: ArmSafetyModel, tcp: Transform, body: SceneBody, tol: number): boolean {
  const jaw = arm.jaw;
  if (!jaw) return false;
  const p = body.pose;
  if (!inJaw(jaw, arm.opening, tcp, p[3]!, p[7]!, p[11]!, tol, true)) return false;
  return widthAlong(body.shape, p, closingAxis(jaw, tcp, axis)) <= arm.opening + tol;
}

/**
 * The held object (placed capsule w) reaching into an object nobody holds, or into a link of its
 * own arm other than the gripper's, at sample k. A held object resting on top of an object (its
 * exact bottom no more than REST_SLACK below the other's top) is not in it, whatever its bounding capsule says.
 */
export function heldBodyHit(
  arm: ArmSafetyModel,
  tcp: Transform,
  w: Float64Array,
  env: SafetyEnvelope,
  k: number,
): SafetyViolation | undefined {
  const held = arm.held!;
  const link = heldLink(held);
  const bottom = arm.heldBody ? heldBodyBottom(arm.heldBody, tcp) : -Infinity;
  for (const body of env.objects ?? []) {
    const d = objectDistance(w, held.radius, body, body.pose);
    if (d < 0 && bottom < topZ(body.shape, body.pose) - REST_SLACK)
      return { code: 'object', arm: arm.name, link, object: body.name, sample: k, distance: d, clearance: 0 };
  }
  const c = arm.capsules;
  for (let i = 0; i < c.count; i++) {
    if (c.frame[i] === arm.chain.dof) continue;
    const d = segmentDistance(w, 0, 3, c.world, i * 6, i * 6 + 3) - held.radius - c.radius[i]!;
    if (d < 0) return { code: 'self-collision', arm: arm.name, links: [link, c.links[i]!], sample: k, distance: d };
  }
  return undefined;
}
