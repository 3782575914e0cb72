// Everything the tool layer needs of one served robot, compiled once: the motion planner, and
// per arm its kinematic chain (placed in the setup's world frame) for FK of measured joints,
// its joint names and settle criteria. A single robot is a one-arm setup (arm `arm`).
import type { SettleCriteria, SetupDescription } from '../description/types.js';
import { KinematicChain } from '../kinematics/chain.js';
import { forwardKinematics } from '../kinematics/forward.js';
import { quat, quatFromTransform } from '../math/quaternion.js';
import { createPlanner, type Planner } from '../motion/planner/planner.js';
import type { ExpectedArms } from '../link/protocol-validate.js';
import { describeLimits } from '../link/protocol.js';

export interface ArmModel {
  name: string;
  joints: string[];
  chain: KinematicChain;
  settle: SettleCriteria;
  hasGripper: boolean;
}

export class RobotModel {
  readonly arms: ArmModel[];
  readonly planner: Planner;
  private readonly scratch = new Float64Array(12);

  /** settle: per-field overrides of every arm's settle criteria (from the daemon config). */
  constructor(
    readonly setup: SetupDescription,
    settle: Partial<SettleCriteria> = {},
  ) {
    this.arms = setup.arms.map(({ name, robot, base }) => {
      const chain = new KinematicChain(robot, { base });
      return {
        name,
        joints: chain.jointNames,
        chain,
        settle: { ...robot.settle, ...settle },
        hasGripper: robot.gripper !== undefined,
      };
    });
    this.planner = createPlanner(setup);
  }

  /** What a controller's description must agree with: arms, joint names, and the limits plans stay within. */
  expectedArms(): ExpectedArms {
    return {
      arms: this.setup.arms.map(({ name, robot }) => ({
        name,
        joints: this.arm(name).joints,
        limits: robot.joints.map((j) => describeLimits(j.limits)),
      })),
    };
  }

  get armNames(): string[] {
    return this.arms.map((a) => a.name);
  }

  arm(name: string): ArmModel {
    const a = this.arms.find((x) => x.name === name);
    if (!a) throw new Error(`robot ${this.setup.name} has no arm ${name}`);
    return a;
  }

  /** TCP pose of an arm at joints q, as [x, y, z, qx, qy, qz, qw] in the setup's frame. */
  tcpPose(arm: string, q: ArrayLike<number>): number[] {
    const t = forwardKinematics(this.arm(arm).chain, q, this.scratch);
    const r = quatFromTransform(quat(), t);
    return [t[3], t[7], t[11], r[0], r[1], r[2], r[3]];
  }
}
