// A YAM on a table with a block and a bowl, driven through the simulated controller: scene
// objects built in code, TCP poses solved by IK (gripper pointing down, fingers closing along world y).
import assert from 'node:assert/strict';
import { Prng } from '../../../robot/common/prng.js';
import { loadArms } from '../../../robot/description/loader.js';
import type { ArmPlacement, SetupDescription } from '../../../robot/description/types.js';
import { KinematicChain } from '../../../robot/kinematics/chain.js';
import { forwardKinematics } from '../../../robot/kinematics/forward.js';
import { IkSolver } from '../../../robot/kinematics/ik.js';
import type { Transform } from '../../../robot/math/transform.js';
import { simRobotFrom } from '../../../robot/sim/robot.js';
import type { SceneDescription, SceneObject, Shape } from '../../../robot/sim/scene/types.js';
import { uprightPose } from '../../../robot/sim/scene/world-shapes.js';
import { SimWorld } from '../../../robot/sim/scene/world.js';
import { Harness } from './harness.js';

export const JOINTS = ['joint1', 'joint2', 'joint3', 'joint4', 'joint5', 'joint6'];

export function yamSetup(): SetupDescription {
  const r = loadArms('yam');
  assert.ok(r.ok);
  return r.value.setup;
}

export function object(name: string, shape: Shape, xyz: [number, number, number], tags: string[] = []): SceneObject {
  return {
    name,
    shape,
    mass: 0.1,
    color: [200, 30, 30],
    pose: uprightPose(xyz[0], xyz[1], xyz[2], 0),
    tags,
    noise: { xy: 0, yaw: 0 },
    restZ: xyz[2],
  };
}

export const BLOCK = 0.04;

/** A 4 cm block at (0.3, 0) and a bowl (r 7 cm, 5 cm high) at (0.3, 0.15), both dropped from above. */
export function pickScene(extra: Partial<SceneDescription> = {}): SceneDescription {
  return {
    name: 'test-pick',
    description: '',
    robot: 'yam',
    table: { height: 0, size: [1, 1], center: [0.3, 0], color: [120, 120, 120] },
    objects: [
      object('red_block', { kind: 'box', size: [BLOCK, BLOCK, BLOCK] }, [0.3, 0, 0.2]),
      object('bowl', { kind: 'cylinder', radius: 0.07, height: 0.05 }, [0.3, 0.15, 0.1], ['container']),
    ],
    obstacles: [],
    cameras: [],
    predicates: [],
    tasks: [],
    graspTolerance: 0.01,
    ...extra,
  };
}

/** Pose with the TCP at xyz pointing down, TCP x = −world x, TCP y = world y (the jaw axis). */
export function down(x: number, y: number, z: number): Transform {
  return new Float64Array([-1, 0, 0, x, 0, 1, 0, y, 0, 0, -1, z]);
}

export class YamCell {
  readonly setup = yamSetup();
  readonly arm: ArmPlacement = this.setup.arms[0]!;
  readonly chain = new KinematicChain(this.arm.robot, { base: this.arm.base });
  readonly world: SimWorld;
  readonly h: Harness;
  private readonly ik = new IkSolver(this.chain, this.arm.robot.ik);
  private clockT = 0;

  constructor(scene: SceneDescription = pickScene(), seed = 1) {
    this.world = new SimWorld(scene, this.setup, seed);
    // No lag or latency: the measured joints are the reference, so poses are exact.
    this.h = new Harness({ lag: 0, latency: 0, rate: 50 }, simRobotFrom(this.setup), this.world);
  }

  q(): number[] {
    return this.h.lastState().arms.arm!.q;
  }

  gripper(): number {
    return this.h.lastState().arms.arm!.gripper!;
  }

  solve(target: Transform, seed: ArrayLike<number>): number[] {
    const r = this.ik.solve(target, seed, { rng: new Prng(3), clock: () => (this.clockT += 1e-4), maxAttempts: 300 });
    assert.equal(r.code, 'ok', `IK for (${target[3]}, ${target[7]}, ${target[11]}): ${r.code}`);
    return [...r.q];
  }

  tcp(q: ArrayLike<number>): Transform {
    return forwardKinematics(this.chain, q, new Float64Array(12));
  }

  /** Moves to `target` in joint space (one straight joint move at ≤ 0.3 rad/s); returns the trajectory id. */
  jointMoveTo(target: Transform, settle = 0.5): string {
    const q0 = this.q();
    const q1 = this.solve(target, q0);
    const t = Math.max(0.01, ...q1.map((v, j) => Math.abs(v - q0[j]!) / 0.3));
    return this.send(
      [
        { t: 0, q: q0 },
        { t, q: q1 },
      ],
      settle,
    );
  }

  /** Moves the TCP along a straight line to `target` (IK every 5 mm, joints at ≤ 0.3 rad/s); returns the trajectory id. */
  moveTo(target: Transform, settle = 0.5): string {
    const q0 = this.q();
    const from = this.tcp(q0);
    const d = Math.hypot(target[3]! - from[3]!, target[7]! - from[7]!, target[11]! - from[11]!);
    const n = Math.max(1, Math.ceil(d / 0.005));
    const points = [{ t: 0, q: q0 }];
    let q = q0;
    let t = 0;
    for (let k = 1; k <= n; k++) {
      const p = Float64Array.from(target);
      for (const i of [3, 7, 11]) p[i] = from[i]! + ((target[i]! - from[i]!) * k) / n;
      const next = this.solve(p, q);
      const step = Math.max(...next.map((v, j) => Math.abs(v - q[j]!)));
      t += Math.max(step / 0.3, 0.01);
      points.push({ t, q: next });
      q = next;
    }
    return this.send(points, settle);
  }

  private send(points: { t: number; q: number[] }[], settle: number): string {
    const m = this.h.trajectory('arm', JOINTS, points);
    this.h.send('trajectory', m);
    this.h.run(this.h.t + points.at(-1)!.t + settle);
    return m.id;
  }

  /** Commands the gripper to `position` (0 closed … 1 open), waits a full stroke; returns the command's events. */
  grip(position: number): string[] {
    const id = `g${this.h.t}`;
    this.h.send('gripper', { v: 1, id, arm: 'arm', position, time: 0, expires_at: this.h.t + 1 });
    this.h.run(this.h.t + 1.2);
    return this.h.eventNames(id);
  }
}
