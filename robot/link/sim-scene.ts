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

export interface SimSceneMsg {
  v: 1;
  scene: string;
  /** The seed of the scene's start pose noise. */
  seed: number;
  /** Controller time (s). */
  time: number;
  /** World poses [x, y, z, qx, qy, qz, qw] (m, unit quaternion). */
  objects: { name: string; pose: number[]; held_by: string | null }[];
  predicates: Record<string, boolean>;
  /** Each task of the scene: the names of the predicates that must all hold. */
  tasks: Record<string, string[]>;
  collisions: { count: number; last: SimCollision | null };
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
const collision: Schema = message({ arm: name, link: name, object: name, depth: finite, time });

export const simSceneSchema: Schema = message({
  v: version,
  scene: name,
  seed: { type: 'integer', minimum: 0 },
  time,
  objects: {
    type: 'array',
    maxItems: MAX_SCENE_OBJECTS,
    items: message({
      name,
      pose: { type: 'array', minItems: 7, maxItems: 7, items: finite },
      held_by: { type: ['string', 'null'], minLength: 1, maxLength: 64 },
    }),
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
});

const check = compileSchema(simSceneSchema);

export function validateSimScene(v: unknown): Checked<SimSceneMsg> {
  const issues: Issue[] = check(v);
  if (issues.length === 0) return { ok: true, value: v as SimSceneMsg };
  return { ok: false, issues, message: formatIssues(issues, { root: 'sim_scene' }) };
}
