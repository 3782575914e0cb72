// The little the simulated controller needs to know about a robot (arms, joint names and
// limits, gripper, rest pose), taken from the same robot descriptions the daemon drives
// (configs/robots/: a robot is one arm named `arm`, a setup names its arms).
import { basename, dirname, extname } from 'node:path';
import { loadArms, ROBOTS_DIR } from '../description/loader.js';
import { formatIssue } from '../common/validation/issue.js';
import type { SetupDescription } from '../description/types.js';

export interface SimJoint {
  name: string;
  /** Position limits, rad (or m for prismatic joints); ±Infinity for continuous joints. */
  lower: number;
  upper: number;
  /** Rate limits the controller enforces on trajectories: rad/s and rad/s² (m/s, m/s²). */
  velocity: number;
  acceleration: number;
}

export interface SimArm {
  name: string;
  joints: SimJoint[];
  /** Stroke and speed in the description's gripper unit; the protocol reports 0 = closed … 1 = open. */
  gripper?: { min: number; max: number; speed: number };
  /** Initial joint positions; default: 0 clamped into the limits. */
  home?: number[];
}

export interface SimRobot {
  name: string;
  arms: SimArm[];
}

/** A simulated gripper travels its whole stroke in this time (s). */
export const GRIPPER_STROKE_S = 1;

/** The simulator's view of a robot or setup description. */
export function simRobotFrom(setup: SetupDescription): SimRobot {
  return {
    name: setup.name,
    arms: setup.arms.map(({ name, robot }) => ({
      name,
      joints: robot.joints.map(({ name, limits: l }) => ({
        name,
        lower: l.lower,
        upper: l.upper,
        velocity: l.velocity,
        acceleration: l.acceleration,
      })),
      ...(robot.gripper
        ? {
            gripper: {
              min: robot.gripper.min,
              max: robot.gripper.max,
              speed: (robot.gripper.max - robot.gripper.min) / GRIPPER_STROKE_S,
            },
          }
        : {}),
      home: [...robot.home],
    })),
  };
}

/** Initial joint positions of an arm. */
export function homeOf(arm: SimArm): number[] {
  return arm.home ? [...arm.home] : arm.joints.map((j) => Math.min(Math.max(0, j.lower), j.upper));
}

/** `configs/robots/<name>.yaml` (a robot or a setup), or a config file given by its path (URDFs beside it). */
export function loadSimRobot(nameOrPath: string, dir = ROBOTS_DIR): SimRobot {
  return simRobotFrom(loadSimSetup(nameOrPath, dir));
}

/** The description loadSimRobot reads, as arms placed in one world (a robot is one arm named `arm`); throws naming every issue. */
export function loadSimSetup(nameOrPath: string, dir = ROBOTS_DIR): SetupDescription {
  const isPath = /[\\/]/.test(nameOrPath) || /\.ya?ml$/.test(nameOrPath);
  const name = isPath ? basename(nameOrPath, extname(nameOrPath)) : nameOrPath;
  const r = loadArms(name, isPath ? dirname(nameOrPath) : dir);
  if (!r.ok) throw new Error(r.issues.map((i) => formatIssue(i)).join('; '));
  return r.value.setup;
}
