// `sim/scene`: the ground truth a simulated workcell publishes beside the protocol (object poses,
// who holds what, predicates, the predicates each task requires, collisions). Only simulators send it; it is never an
// input to a policy, only to tests and completion checks (docs/protocol.md, "Simulator topics").
import { type Issue, formatIssues } from '../common/validation/issue.js';
import { type Schema, compileSchema } from '../common/validation/json-schema.js';
import { message, name, time, version } from './protocol-schemas.js';
import type { Checked } from './protocol-validate.js';

export const MAX_SCENE_OBJECTS = 256;

export interface SimCollision {
  arm: string;
  link: string;
  /** An object's or obstacle's name, or `table`. */
  object: string;
  /** How far the link reached into it (m). */
  depth: number;
  /** Controller time of the contact (s). */
  time: number;
}

/** An object's shape in its own frame, centred (m); a cylinder's axis is its local z. */
export type SimShape =
  | { kind: 'box'; size: [number, number, number] }
  | { kind: 'cylinder'; radius: number; height: number }
  | { kind: 'sphere'; radius: number };

/** A fixed obstacle (world frame, m): a box at a pose [x, y, z, qx, qy, qz, qw], a sphere, a capsule. */
export type SimObstacle =
  | { name: string; shape: 'box'; pose: number[]; size: number[] }
  | { name: string; shape: 'sphere'; center: number[]; radius: number }
  | { name: string; shape: 'capsule'; a: number[]; b: number[]; radius: number };

export interface SimSceneObject {
  name: string;
  /** World pose [x, y, z, qx, qy, qz, qw] (m, unit quaternion). */
  pose: number[];
  held_by: string | null;
  /** Geometry, for the daemon's safety check (optional: a sender without it is not checked against). */
  shape?: SimShape;
  /** An open vessel (scene tag `container`): only its wall and floor are solid. */
  container?: boolean;
}

export interface SimSceneMsg {
  v: 1;
  scene: string;
  /** The seed of the scene's start pose noise. */
  seed: number;
  /** Controller time (s). */
  time: number;
  objects: SimSceneObject[];
  predicates: Record<string, boolean>;
  /** Each task of the scene: the names of the predicates that must all hold. */
  tasks: Record<string, string[]>;
  collisions: { count: number; last: SimCollision | null };
  obstacles?: SimObstacle[];
  /** The scene's grasp_tolerance_m: slack of the jaw test (m). */
  grasp_tolerance?: number;
}

/** `<base>/robots/<id>/sim/scene`. */
export function simSceneTopic(base: string, robot: string): string {
  return `${base}/robots/${robot}/sim/scene`;
}

/** The robot id of a `sim/scene` topic under `base`, or null. */
export function simSceneRobot(base: string, topic: string): string | null {
  const prefix = `${base}/robots/`;
  if (!topic.startsWith(prefix) || !topic.endsWith('/sim/scene')) return null;
  const robot = topic.slice(prefix.length, -'/sim/scene'.length);
  return /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(robot) ? robot : null;
}

const finite: Schema = { type: 'number' };
const positive: Schema = { type: 'number', exclusiveMinimum: 0 };
const triple = (items: Schema): Schema => ({ type: 'array', minItems: 3, maxItems: 3, items });
const pose7: Schema = { type: 'array', minItems: 7, maxItems: 7, items: finite };
// One flat schema per union; which fields a kind needs is checked in validateSimScene.
const shape: Schema = message(
  {
    kind: { type: 'string', enum: ['box', 'cylinder', 'sphere'] },
    size: triple(positive),
    radius: positive,
    height: positive,
  },
  ['size', 'radius', 'height'],
);
const obstacle: Schema = message(
  {
    name,
    shape: { type: 'string', enum: ['box', 'sphere', 'capsule'] },
    pose: pose7,
    size: triple(positive),
    center: triple(finite),
    a: triple(finite),
    b: triple(finite),
    radius: positive,
  },
  ['pose', 'size', 'center', 'a', 'b', 'radius'],
);
const collision: Schema = message({ arm: name, link: name, object: name, depth: finite, time });

export const simSceneSchema: Schema = message(
  {
    v: version,
    scene: name,
    seed: { type: 'integer', minimum: 0 },
    time,
    objects: {
      type: 'array',
      maxItems: MAX_SCENE_OBJECTS,
      items: message(
        {
          name,
          pose: pose7,
          held_by: { type: ['string', 'null'], minLength: 1, maxLength: 64 },
          shape,
          container: { type: 'boolean' },
        },
        ['shape', 'container'],
      ),
    },
    predicates: {
      type: 'object',
      maxProperties: MAX_SCENE_OBJECTS,
      propertyNames: name,
      additionalProperties: { type: 'boolean' },
    },
    tasks: {
      type: 'object',
      maxProperties: MAX_SCENE_OBJECTS,
      propertyNames: name,
      additionalProperties: { type: 'array', minItems: 1, maxItems: MAX_SCENE_OBJECTS, items: name },
    },
    collisions: message({
      count: { type: 'integer', minimum: 0 },
      last: { ...collision, type: ['object', 'null'] },
    }),
    obstacles: { type: 'array', maxItems: MAX_SCENE_OBJECTS, items: obstacle },
    grasp_tolerance: { type: 'number', minimum: 0, maximum: 0.1 },
  },
  ['obstacles', 'grasp_tolerance'],
);

const check = compileSchema(simSceneSchema);

/** The fields each kind of object shape or obstacle needs (the schemas list them all as optional). */
const SHAPE_NEEDS: Record<string, string[]> = { box: ['size'], cylinder: ['radius', 'height'], sphere: ['radius'] };
const OBSTACLE_NEEDS: Record<string, string[]> = {
  box: ['pose', 'size'],
  sphere: ['center', 'radius'],
  capsule: ['a', 'b', 'radius'],
};

function missingFields(m: SimSceneMsg): Issue[] {
  const out: Issue[] = [];
  const need = (path: string, o: object, fields: string[], kind: string) => {
    for (const f of fields)
      if (!(f in o)) out.push({ path: `${path}.${f}`, rule: `is required for ${kind}`, value: undefined });
  };
  m.objects.forEach(
    (o, i) => o.shape && need(`objects[${i}].shape`, o.shape, SHAPE_NEEDS[o.shape.kind]!, o.shape.kind),
  );
  m.obstacles?.forEach((o, i) => need(`obstacles[${i}]`, o, OBSTACLE_NEEDS[o.shape]!, o.shape));
  return out;
}

export function validateSimScene(v: unknown): Checked<SimSceneMsg> {
  let issues: Issue[] = check(v);
  if (issues.length === 0) issues = missingFields(v as SimSceneMsg);
  if (issues.length === 0) return { ok: true, value: v as SimSceneMsg };
  return { ok: false, issues, message: formatIssues(issues, { root: 'sim_scene' }) };
}
