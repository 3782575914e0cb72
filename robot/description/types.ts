// Plain-data robot descriptions: kinematic structure, limits and motion/safety parameters.
// Units: metres, radians, seconds. Link frames follow URDF semantics: a joint's child link
// frame is the joint frame moved by q (for DH tables: Craig's frame i, on joint i's axis).
import type { Issue } from '../common/validation/issue.js';
import type { Transform } from '../math/transform.js';

export type JointType = 'revolute' | 'continuous' | 'prismatic';
export type Triple = [number, number, number];

/** One actuated joint of a serial chain, limits not yet attached. */
export interface KinematicJoint {
  name: string;
  type: JointType;
  parent: string;
  child: string;
  /** Parent link frame → joint frame at q = 0. */
  origin: Transform;
  /** Unit axis in the joint frame (rotation axis, or translation direction for prismatic). */
  axis: Triple;
}

/** A link attached rigidly to a chain frame: 0 is the base, i the child of joint i (1-based). */
export interface LinkFrame {
  name: string;
  frame: number;
  offset: Transform;
}

/** Serial chain from a base link to the flange, as produced by the DH and URDF importers. */
export interface KinematicChainSpec {
  baseLink: string;
  joints: KinematicJoint[];
  links: LinkFrame[];
  /** Last joint's child link frame → flange. */
  flange: Transform;
}

/** Position in [lower, upper] (±Infinity for continuous joints); rates are magnitudes > 0. */
export interface JointLimits {
  lower: number;
  upper: number;
  velocity: number;
  acceleration: number;
  jerk: number;
}

export interface JointDescription extends KinematicJoint {
  limits: JointLimits;
}

export interface IkTolerances {
  /** Iteration stops below both of these (m, rad). */
  stopPosition: number;
  stopRotation: number;
  /** A solution is accepted within these (m, rad). */
  acceptPosition: number;
  acceptRotation: number;
  /** Rotation error rows are scaled by this length (m) so both halves of the error are metres. */
  characteristicLength: number;
  /** Largest joint step per iteration (rad or m). */
  maxStep: number;
  maxIterations: number;
  /** Time budget for random restarts on a cold start (s). */
  coldStartBudget: number;
}

export interface PathSampling {
  positionStep: number;
  rotationStep: number;
  rateHz: number;
}

export interface TcpSpeedLimits {
  linear: number;
  angular: number;
}

export interface SettleCriteria {
  positionTolerance: number;
  velocityTolerance: number;
  samples: number;
  minWindow: number;
  span: number;
  timeout: number;
}

export interface GripperRange {
  min: number;
  max: number;
  unit: 'm' | 'rad' | 'normalized';
  /** The fingers' grasp volume, for the simulated workcell; absent = the simulator grasps nothing. */
  jaw?: Jaw;
}

/**
 * A parallel jaw in the TCP frame: a box centred on the TCP, `depth` along TCP z, `thickness`
 * along the third axis, the fingers closing along `axis`; the opening is a linear map of the
 * gripper position from min..max to 0..openWidth.
 */
export interface Jaw {
  openWidth: number;
  depth: number;
  thickness: number;
  axis: 'x' | 'y';
}

/** Capsule = all points within `radius` of segment a–b, endpoints in `link`'s frame. */
export interface CapsuleSpec {
  link: string;
  radius: number;
  a: Triple;
  b: Triple;
}

export interface Box {
  min: Triple;
  max: Triple;
}

/** Half-space kept free: points x with normal·x ≥ offset are allowed (normal is unit). */
export interface Plane {
  normal: Triple;
  offset: number;
}

export interface RobotDescription {
  name: string;
  /** The config's `description`: one line for people ('' when absent). */
  summary: string;
  baseLink: string;
  joints: JointDescription[];
  links: LinkFrame[];
  flange: Transform;
  /** Flange → tool centre point. */
  tcp: Transform;
  /** Rest pose, one entry per joint: where a simulated arm starts (default 0 clamped into the limits). */
  home: number[];
  ik: IkTolerances;
  path: PathSampling;
  tcpSpeed: TcpSpeedLimits;
  settle: SettleCriteria;
  gripper?: GripperRange;
  /** What the safety check assumes the gripper holds after it closes on an object (TCP frame). */
  graspEnvelope?: HeldObject;
  capsules: CapsuleSpec[];
  /** Pairs of links whose capsules may touch (e.g. across a short wrist link). */
  selfCollisionIgnore: [string, string][];
  /** In the robot's base frame. */
  workspace: Box;
  table: Plane;
}

export interface ArmPlacement {
  name: string;
  robot: RobotDescription;
  /** World → arm base. */
  base: Transform;
  /** An object held in the gripper (or a mounted tool), moving with the TCP. */
  held?: HeldObject;
}

/** A capsule fixed in the TCP frame (a = b: a sphere), checked like a link of the arm. */
export interface HeldObject {
  name: string;
  a: Triple;
  b: Triple;
  radius: number;
}

/** Several arms sharing one world frame (e.g. a bimanual station). */
export interface SetupDescription {
  name: string;
  /** The config's `description`: one line for people ('' when absent). */
  summary: string;
  arms: ArmPlacement[];
  minClearance: number;
  /** In the world frame. */
  workspace: Box;
  table: Plane;
  /** Static shapes in the world frame that every link capsule and TCP keep clear of. */
  obstacles: Obstacle[];
  /** Smallest allowed surface distance to an obstacle (m). */
  obstacleClearance: number;
}

/** A static obstacle: a box (pose = world-from-box, centred; half = half the size), sphere or capsule. */
export type Obstacle =
  | { name: string; shape: 'box'; pose: Float64Array; half: Triple }
  | { name: string; shape: 'sphere'; center: Triple; radius: number }
  | { name: string; shape: 'capsule'; a: Triple; b: Triple; radius: number };

export type Validated<T> = { ok: true; value: T } | { ok: false; issues: Issue[] };
