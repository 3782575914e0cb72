// A robot or setup compiled once for planning: per arm the kinematic chain in the common frame
// (world for setups, base for a single robot), an IK solver on it and the safety model, plus
// the safety envelope, reference rate and final hold.
import type { RobotDescription, SetupDescription } from '../../description/types.js';
import { IkSolver } from '../../kinematics/ik.js';
import { type ArmSafetyModel, type SafetyEnvelope, robotSafety, setupSafety } from '../../safety/trajectory-check.js';
import type { RateLimits } from '../timing/joint-move.js';

export interface CompiledArm {
  name: string;
  robot: RobotDescription;
  /** Its chain (safety.chain) outputs poses in the common frame. */
  safety: ArmSafetyModel;
  solver: IkSolver;
  dof: number;
  rateLimits: RateLimits[];
}

export interface CompiledSetup {
  name: string;
  arms: CompiledArm[];
  envelope: SafetyEnvelope;
  rate: number;
  hold: number;
}

export interface PlannerOptions {
  /** Reference rate (Hz); default the robots' `path.rate_hz`. */
  rate?: number;
  /** Final hold at the goal (s); default 0.12 s (GPT-Policy's YAM profile). */
  hold?: number;
}

export const DEFAULT_HOLD_S = 0.12;
/**
 * Path samples are solved to 1e-7 m and 1e-7 rad, not the config's looser numeric stop: the
 * third difference of IK noise at ~10 ms sample spacing shows up as jerk (8ε/Δt³; 1e-4 rad of
 * noise is ~800 rad/s³) and would force large time stretches. Acceptance stays as configured.
 */
const PATH_IK_STOP = 1e-7;

/** Throws (at set-up, never while planning) for more than two arms or arms with different rates. */
export function compileSetup(
  description: RobotDescription | SetupDescription,
  options: PlannerOptions = {},
): CompiledSetup {
  const isSetup = 'arms' in description;
  const { arms: models, envelope } = isSetup ? setupSafety(description) : robotSafety(description);
  const robots = isSetup ? description.arms.map((a) => a.robot) : [description];
  if (models.length < 1 || models.length > 2)
    throw new Error(`planner "${description.name}": one or two arms are supported, got ${models.length}`);
  const rates = new Set(robots.map((r) => r.path.rateHz));
  if (options.rate === undefined && rates.size > 1)
    throw new Error(
      `planner "${description.name}": arms have different path.rate_hz (${[...rates].join(', ')}); pass a rate`,
    );
  const rate = options.rate ?? robots[0].path.rateHz;
  const hold = options.hold ?? DEFAULT_HOLD_S;
  if (!(rate > 0 && rate < Infinity) || !(hold >= 0 && hold < Infinity))
    throw new Error(`planner "${description.name}": rate must be > 0 and hold ≥ 0, got ${rate}, ${hold}`);
  const arms = models.map((safety, i) => ({
    name: safety.name,
    robot: robots[i],
    safety,
    solver: new IkSolver(safety.chain, { ...robots[i].ik, stopPosition: PATH_IK_STOP, stopRotation: PATH_IK_STOP }),
    dof: safety.chain.dof,
    rateLimits: safety.limits.map(({ velocity, acceleration, jerk }) => ({ velocity, acceleration, jerk })),
  }));
  return { name: description.name, arms, envelope, rate, hold };
}
