// The simulated workcell: objects on a table, the arms' bodies, grasps and collisions. Pure and
// deterministic for a seed: the simulated controller calls update() after every step with the
// measured joints and gripper positions, and acts on what it returns (docs/scenes.md).
import type { SetupDescription } from '../../description/types.js';
import type { SimCollision, SimObstacle, SimSceneMsg } from '../../link/sim-scene.js';
import { quatFromTransform } from '../../math/quaternion.js';
import { compose, invert, type Transform } from '../../math/transform.js';
import { bottomZ } from './geometry.js';
import { evaluateAll } from './predicates.js';
import { isContainer } from './scene-layout.js';
import type { ObjectState, SceneDescription, SceneObject, SceneObstacle } from './types.js';
import { ArmBody } from './world-arm.js';
import { armContacts, heldContacts, type Contact } from './world-collide.js';
import { dropPose, noisyPoses, settleAll, type Ground, type Placed } from './world-settle.js';

/** A collision counts again only once it is this much deeper than when it was last reported (m). */
export const DEEPER = 0.001;

export type WorldEvent =
  | {
      kind: 'grasp';
      arm: string;
      object: string;
      /** Gripper position (0–1) where the fingers stop. */
      gripper: number;
    }
  | { kind: 'release'; arm: string; object: string }
  | { kind: 'collision'; contact: Contact };

interface Grip {
  object: number;
  tcpFromObject: Transform;
  position: number;
}

export class SimWorld {
  /** The scene as simulated: each object's restZ is where it settled at start (after the noise). */
  readonly scene: SceneDescription;
  readonly objects: ObjectState[];
  private readonly ground: Ground;
  private readonly arms: ArmBody[];
  private readonly grips = new Map<string, Grip>();
  /** Pairs in contact now → the depth at which they were last reported. */
  private readonly contacts = new Map<string, number>();
  private collisions = 0;
  private lastCollision: SimCollision | null = null;
  private time = 0;
  private changes = 0;

  constructor(
    scene: SceneDescription,
    setup: SetupDescription,
    readonly seed: number,
  ) {
    this.arms = setup.arms.map((a) => new ArmBody(a));
    this.ground = { table: scene.table.height, obstacles: scene.obstacles };
    const poses = settleAll(scene.objects, noisyPoses(scene.objects, seed), this.ground);
    this.scene = {
      ...scene,
      objects: scene.objects.map((o, i) => ({ ...o, restZ: bottomZ(o.shape, poses[i]!) })),
    };
    this.objects = scene.objects.map((o, i) => ({ name: o.name, pose: poses[i]!, heldBy: null }));
  }

  /** Counts every change of the ground truth (a publisher sends on change). */
  get version(): number {
    return this.changes;
  }

  /** The gripper position (0–1) below which `arm`'s fingers cannot close: they hold an object. */
  gripStop(arm: string): number | null {
    return this.grips.get(arm)?.position ?? null;
  }

  /**
   * One step at time `now` (s): places the arms at their measured joints, carries held objects,
   * grasps (a closing gripper whose jaw encloses an object), releases (an opening gripper) and
   * reports new or deeper collisions.
   */
  update(
    now: number,
    joints: ReadonlyMap<string, ArrayLike<number>>,
    grippers: ReadonlyMap<string, number | null>,
  ): WorldEvent[] {
    this.time = now;
    const events: WorldEvent[] = [];
    for (const arm of this.arms) {
      const q = joints.get(arm.name);
      if (!q) continue;
      arm.place(q);
      const before = arm.gripper;
      arm.gripper = grippers.get(arm.name) ?? null;
      const grip = this.grips.get(arm.name);
      if (grip && arm.gripper !== null && arm.gripper > grip.position + 1e-9) events.push(this.release(arm, grip));
      else if (grip) this.carry(arm, grip);
      else if (arm.gripper !== null && before !== null && arm.gripper < before) {
        const e = this.grasp(arm);
        if (e) events.push(e);
      }
    }
    events.push(...this.collide(now));
    return events;
  }

  /** The ground truth now, with the scene's predicates evaluated and each task's required ones. */
  truth(): SimSceneMsg {
    const q = new Float64Array(4);
    return {
      v: 1,
      scene: this.scene.name,
      seed: this.seed,
      time: this.time,
      objects: this.objects.map((o, i) => {
        quatFromTransform(q, o.pose);
        const object = this.scene.objects[i]!;
        return {
          name: o.name,
          pose: [o.pose[3]!, o.pose[7]!, o.pose[11]!, q[0]!, q[1]!, q[2]!, q[3]!],
          held_by: o.heldBy,
          shape: object.shape,
          container: isContainer(object),
        };
      }),
      predicates: evaluateAll(this.scene, this.objects),
      tasks: Object.fromEntries(this.scene.tasks.map((t) => [t.name, t.success])),
      collisions: { count: this.collisions, last: this.lastCollision },
      obstacles: this.scene.obstacles.map(wireObstacle),
      grasp_tolerance: this.scene.graspTolerance,
    };
  }

  private object(i: number): SceneObject {
    return this.scene.objects[i]!;
  }

  /** The object nearest the TCP whose centre is in the jaw and whose width the fingers have closed down to. */
  private grasp(arm: ArmBody): WorldEvent | null {
    const tol = this.scene.graspTolerance;
    let best = -1;
    let bestD = Infinity;
    this.objects.forEach((s, i) => {
      if (s.heldBy === arm.name || !arm.inJaw(s.pose, tol)) return;
      const width = arm.widthAcross(this.object(i).shape, s.pose);
      if (arm.opening() > width + tol || width > arm.jaw!.openWidth + tol) return;
      const d = Math.hypot(s.pose[3]! - arm.tcp[3]!, s.pose[7]! - arm.tcp[7]!, s.pose[11]! - arm.tcp[11]!);
      if (d < bestD) [best, bestD] = [i, d];
    });
    if (best < 0) return null;
    const s = this.objects[best]!;
    // A handover: the other arm's fingers no longer hold it.
    if (s.heldBy !== null) this.grips.delete(s.heldBy);
    s.heldBy = arm.name;
    const width = arm.widthAcross(this.object(best).shape, s.pose);
    const position = Math.min(arm.gripper!, arm.positionAt(width));
    const tcpFromObject = compose(new Float64Array(12), invert(new Float64Array(12), arm.tcp), s.pose);
    this.grips.set(arm.name, { object: best, tcpFromObject, position });
    this.changes++;
    return { kind: 'grasp', arm: arm.name, object: s.name, gripper: position };
  }

  private carry(arm: ArmBody, grip: Grip): void {
    compose(this.objects[grip.object]!.pose, arm.tcp, grip.tcpFromObject);
    this.changes++;
  }

  private release(arm: ArmBody, grip: Grip): WorldEvent {
    this.grips.delete(arm.name);
    const s = this.objects[grip.object]!;
    s.heldBy = null;
    s.pose = dropPose(this.object(grip.object), s.pose, this.ground, this.placed(grip.object));
    this.changes++;
    return { kind: 'release', arm: arm.name, object: s.name };
  }

  /** Objects nobody holds, but `except`. */
  private placed(except = -1): Placed[] {
    const out: Placed[] = [];
    this.objects.forEach((s, i) => {
      if (i !== except && s.heldBy === null) out.push({ object: this.object(i), pose: s.pose });
    });
    return out;
  }

  private collide(now: number): WorldEvent[] {
    const free = this.placed();
    const seen = new Set<string>();
    const events: WorldEvent[] = [];
    const { obstacles, table, graspTolerance } = this.scene;
    for (const arm of this.arms) {
      if (!arm.placed) continue;
      const found = armContacts(arm, free, obstacles, table.height, graspTolerance);
      const grip = this.grips.get(arm.name);
      if (grip) {
        const held = this.objects[grip.object]!;
        found.push(...heldContacts(arm.name, this.object(grip.object), held.pose, free, obstacles, table.height));
      }
      for (const c of found) {
        const key = `${c.arm}\u0000${c.link}\u0000${c.object}`;
        seen.add(key);
        const reported = this.contacts.get(key);
        if (reported !== undefined && c.depth <= reported + DEEPER) continue;
        this.contacts.set(key, c.depth);
        this.collisions++;
        this.lastCollision = { ...c, time: now };
        this.changes++;
        events.push({ kind: 'collision', contact: c });
      }
    }
    for (const key of this.contacts.keys()) if (!seen.has(key)) this.contacts.delete(key);
    return events;
  }
}

/** An obstacle as `sim/scene` sends it (a box's pose as [x, y, z, qx, qy, qz, qw]). */
function wireObstacle(o: SceneObstacle): SimObstacle {
  if (o.shape === 'sphere') return { name: o.name, shape: 'sphere', center: [...o.center], radius: o.radius };
  if (o.shape === 'capsule') return { name: o.name, shape: 'capsule', a: [...o.a], b: [...o.b], radius: o.radius };
  const q = quatFromTransform(new Float64Array(4), o.pose);
  return {
    name: o.name,
    shape: 'box',
    pose: [o.pose[3]!, o.pose[7]!, o.pose[11]!, q[0]!, q[1]!, q[2]!, q[3]!],
    size: o.half.map((h) => 2 * h),
  };
}
