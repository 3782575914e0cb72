// The planner's API types: requests for one robot or a multi-arm setup (keyed by arm name),
// timed joint references per arm, and result codes. Plain data; no exceptions on the control path.
import type { PoseTarget } from '../cartesian-path.js';
import type { Obstacle } from '../../description/types.js';
import type { HeldBody, SceneBody } from '../../safety/scene-bodies.js';
import type { SafetyViolation } from '../../safety/trajectory-check.js';

export type { PoseTarget };

/** Cartesian move (move_to / move_eef_chunk): TCP targets in the world (setup) or base (robot) frame. */
export interface CartesianRequest {
  /** Measured joints of every arm (rad or m, in the robot's joint order). */
  measured: Readonly<Record<string, ArrayLike<number>>>;
  /**
   * Per arm, the targets in order (position m, quaternion [x, y, z, w]); null holds that arm
   * for that step, an arm left out holds throughout. Lists given must have the same length:
   * step i of every arm starts and ends together.
   */
  targets: Readonly<Record<string, readonly (PoseTarget | null)[] | undefined>>;
}

/** Joint-space move (e.g. go home): every arm to a joint goal; null or left out holds the arm. */
export interface JointRequest {
  measured: Readonly<Record<string, ArrayLike<number>>>;
  goal: Readonly<Record<string, ArrayLike<number> | null | undefined>>;
}

/** An arm's state while moving: best the reference being followed at the abort tick. */
export interface ArmMotionState {
  q: ArrayLike<number>;
  dq: ArrayLike<number>;
  /** 0 when omitted (controllers report no acceleration). */
  ddq?: ArrayLike<number>;
}

/** Smooth stop, or re-target to new joint goals, from a moving state of every arm. */
export interface StopRequest {
  state: Readonly<Record<string, ArmMotionState>>;
  /** Per arm a new joint goal; null or left out stops that arm wherever its brake ends. */
  goal?: Readonly<Record<string, ArrayLike<number> | null | undefined>>;
}

/** Timed joint references of one arm at the controller rate: sample i at t[i] = i / rate. */
export interface ArmReferences {
  arm: string;
  joints: string[];
  rate: number;
  count: number;
  t: Float64Array;
  /** count × joints, row-major: positions, velocities, accelerations. */
  q: Float64Array;
  dq: Float64Array;
  ddq: Float64Array;
}

export interface PlanSummary {
  kind: 'cartesian' | 'joint' | 'stop';
  /** Reference samples per arm (motion, then the final hold). */
  samples: number;
  /** Cartesian steps (targets per arm); 0 for joint moves and stops. */
  steps: number;
  /** Cartesian: time (s) at which step i ends; every arm is then at rest at its target i. */
  stepEnds: number[];
  /** IK-solved path samples over all arms (Cartesian moves). */
  pathSamples: number;
  /** Uniform stretch applied after resampling (1 = none). */
  extraStretch: number;
  /** Smallest self and arm–arm capsule distances over the references (m; Infinity if none). */
  minSelfDistance: number;
  minArmDistance: number;
  /** Cartesian moves: FK of each arm's final reference against its last target (m, rad). */
  finalError: { arm: string; position: number; rotation: number }[];
}

export type PlanCode =
  | 'invalid-request' // shape: missing or mis-sized joints, list lengths, nothing given
  | 'unknown-arm'
  | 'non-finite' // NaN or ±Infinity in a target, joints, velocities
  | 'invalid-quaternion' // norm outside [0.99, 1.01]
  | 'outside-workspace' // a target outside the workspace box or below the table
  | 'outside-joint-limits' // a joint goal outside the position limits
  | 'unreachable' // IK failed along the path (target and sample index, residuals)
  | 'joint-jump' // neighbouring path samples on different IK branches
  | 'timing' // time scaling failed (message from the timing layer)
  | 'too-long' // more points than a trajectory message may carry (MAX_POINTS)
  | 'too-large' // a trajectory message could exceed MAX_TRAJECTORY_BYTES
  | 'internal-error' // a bug caught at the API boundary: nothing is planned
  | SafetyViolation['code']; // the final references failed a safety check

export interface PlanOk {
  ok: true;
  code: 'ok';
  /** Time (s) at which every arm is at rest at its goal; the final hold follows. */
  duration: number;
  arms: ArmReferences[];
  summary: PlanSummary;
}

/** A refusal: the code, a readable message, and whichever of the fields apply. */
export interface PlanFailure {
  ok: false;
  code: PlanCode;
  message: string;
  arm?: string;
  /** For arm-collision: both arms. */
  arms?: [string, string];
  /** Cartesian target (step) index. */
  target?: number;
  /** Path sample within the target's segment (IK), or reference sample (safety). */
  sample?: number;
  joint?: string;
  links?: [string, string];
  link?: string;
  /** For obstacle: the obstacle's name in the setup config. */
  obstacle?: string;
  /** For object: the scene object's name. */
  object?: string;
  /** m: clearance, or how far past a boundary. */
  distance?: number;
  value?: number;
  limit?: number;
}

export type PlanResult = PlanOk | PlanFailure;

/** Joint names and limits of one arm, as the link layer needs them. */
export interface PlannerArmInfo {
  name: string;
  joints: string[];
}

export interface Planner {
  /** Robot or setup name. */
  readonly name: string;
  readonly arms: readonly PlannerArmInfo[];
  /** Reference rate (Hz) and final hold (s) of every plan. */
  readonly rate: number;
  readonly hold: number;
  /**
   * Arms whose gripper has closed on an object: until the next call their safety check carries
   * the robot's grasp envelope at the TCP (in place of a mounted held object); other arms carry
   * only what the setup mounts.
   */
  setGrasped(arms: readonly string[]): void;
  /**
   * The simulated scene the next plans are checked against (after setGrasped; null: none): its
   * objects nobody holds, its obstacles (beside the setup's), and per arm the gripper position
   * and the object it holds (its bounding capsule replaces the grasp envelope).
   */
  setScene(scene: PlanScene | null): void;
  planCartesian(request: CartesianRequest): PlanResult;
  planJoint(request: JointRequest): PlanResult;
  planStop(request: StopRequest): PlanResult;
}

/** A simulated scene in the planner's frame (robot/tools/plan-scene.ts builds it from `sim/scene`). */
export interface PlanScene {
  objects: SceneBody[];
  obstacles: Obstacle[];
  /** The scene's grasp tolerance (m). */
  graspTolerance: number;
  /** gripper: the measured position (0 closed … 1 open; null: none); held: the object in it. */
  arms: Record<string, { gripper: number | null; held?: HeldBody }>;
}
