// Plain-data simulated workcell: a table, objects that rest, get grasped and drop, fixed
// obstacles, cameras, named predicates over object poses and the tasks they define. Units: m, rad, kg; poses are
// Transforms (world-from-object, robot/math/transform.ts); the world frame is the setup's.
import type { Obstacle, Triple } from '../../description/types.js';
import type { Transform } from '../../math/transform.js';

/** sRGB colour, each channel 0–255. */
export type Rgb = [number, number, number];

/** An object's shape in its own frame, centred on the origin; a cylinder's axis is local z. */
export type Shape =
  | { kind: 'box'; size: Triple }
  | { kind: 'cylinder'; radius: number; height: number }
  | { kind: 'sphere'; radius: number };

export interface SceneObject {
  name: string;
  shape: Shape;
  mass: number;
  color: Rgb;
  /** Initial world-from-object pose; the simulator drops it onto the surface below. */
  pose: Transform;
  /** Free words; `container` makes an object open at the top (others land inside it). */
  tags: string[];
  /** Seeded uniform pose noise at start: ± metres in x and y, ± radians about z. */
  noise: { xy: number; yaw: number };
  /**
   * World z (m) of the object's bottom at rest at the start, computed at load: `pose` dropped
   * straight down onto the table, an obstacle or an object (a container's bottom); `lifted` counts from it.
   */
  restZ: number;
}

/** A fixed shape in the world (reuses the setup's obstacle shapes), drawn in `color`. */
export type SceneObstacle = Obstacle & { color: Rgb };

/** Pinhole camera; optical frame: +z forward, +x right, +y down (ROS optical convention). */
export interface SceneCamera {
  name: string;
  width: number;
  height: number;
  /** Intrinsics in pixels (from fov_deg when not given: fx = fy = (width/2)/tan(fov/2), centre pixel). */
  fx: number;
  fy: number;
  cx: number;
  cy: number;
  /** Where the camera is fixed: the world, or a link of an arm (moves with it). */
  mount: { kind: 'world' } | { kind: 'link'; arm: string; link: string };
  /** Mount-frame-from-optical-frame. */
  pose: Transform;
  /** Frames per second; 0 = only on request. */
  rate: number;
  encoding: 'jpeg' | 'png';
  /** Also render a depth image (m, 0 = nothing hit). */
  depth: boolean;
}

/** A named predicate over object poses (e.g. `inside(red_block, bowl)`). */
export type Predicate =
  | { kind: 'inside'; object: string; container: string }
  | { kind: 'on_top'; object: string; below: string }
  | { kind: 'near'; object: string; xyz: Triple; tolerance: number }
  | { kind: 'lifted'; object: string; height: number }
  | { kind: 'held_by'; object: string; arm: string };

export interface NamedPredicate {
  name: string;
  /** The source text, as written in the scene file. */
  text: string;
  predicate: Predicate;
}

/** A task of the scene: its instruction and the predicates that must all hold for it to be complete. */
export interface SceneTask {
  name: string;
  instruction: string;
  /** Names of `SceneDescription.predicates`; the others are reported but not required. */
  success: string[];
}

export interface SceneDescription {
  name: string;
  description: string;
  /** A robot or setup under configs/robots/ that this scene is laid out for. */
  robot: string;
  /** The table top: a plane at z = height (m), drawn as a slab of `size` (x, y) centred at `center`. */
  table: { height: number; size: [number, number]; center: [number, number]; color: Rgb };
  objects: SceneObject[];
  obstacles: SceneObstacle[];
  cameras: SceneCamera[];
  /** Every predicate, evaluated and reported; a task names those it requires. */
  predicates: NamedPredicate[];
  tasks: SceneTask[];
  /** Grasp test slack (m): how far outside the jaw volume an object may still be caught. */
  graspTolerance: number;
}

/** An object's state while the simulation runs. */
export interface ObjectState {
  name: string;
  pose: Transform;
  /** The arm whose gripper holds it, or null. */
  heldBy: string | null;
}
