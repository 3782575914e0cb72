// The policy model's tools as JSON Schemas, built for a robot's arms: one arm takes bare poses,
// several arms take {<arm>: pose | null} with every arm named (null holds that arm). The same
// schemas are handed to models and enforced by the validator.
import type { Schema } from '../common/validation/json-schema.js';

export const TOOL_NAMES = [
  'move_to',
  'move_eef_chunk',
  'check_path',
  'set_gripper',
  'get_state',
  'stop',
  'done',
] as const;
export type ToolName = (typeof TOOL_NAMES)[number];

/** Most targets in one chunk / path check. */
export const MAX_CHUNK = 64;
/** Positions beyond this many metres from the base are not plausible targets. */
export const MAX_REACH_M = 10;
export const QUAT_NORM_RANGE = [0.99, 1.01] as const;

const note: Schema = {
  type: 'string',
  maxLength: 500,
  description: 'Optional short note on why (kept in the log, not executed).',
};

export const poseSchema: Schema = {
  type: 'object',
  description:
    'A tool-centre-point pose in the robot base frame (for several arms: the shared world frame of the setup).',
  properties: {
    pose_xyzquat: {
      type: 'array',
      minItems: 7,
      maxItems: 7,
      items: { type: 'number' },
      description: '[x, y, z, qx, qy, qz, qw]: position in metres, orientation as a unit quaternion (x, y, z, w).',
    },
  },
  required: ['pose_xyzquat'],
  additionalProperties: false,
};

function object(properties: Record<string, Schema>, required: string[]): Schema {
  return { type: 'object', properties, required, additionalProperties: false };
}

/** A target: a pose for one arm, or {<arm>: pose | null} for several. */
function targetSchema(arms: readonly string[]): Schema {
  if (arms.length === 1) return poseSchema;
  const props = Object.fromEntries(
    arms.map((a) => [
      a,
      { ...poseSchema, type: ['object', 'null'], description: `Pose for the ${a} arm, or null to hold it.` } as Schema,
    ]),
  );
  return {
    ...object(props, [...arms]),
    description: `One pose per arm (${arms.join(', ')}); null holds that arm; at least one must move.`,
  };
}

export interface ToolDefinition {
  name: ToolName;
  description: string;
  parameters: Schema;
}

/** Tool definitions for a robot whose arms are `arms` (in the robot config's order). */
export function toolDefinitions(arms: readonly string[]): ToolDefinition[] {
  if (arms.length === 0) throw new Error('toolDefinitions: a robot needs at least one arm');
  const target = targetSchema(arms);
  const chunk: Schema = {
    type: 'array',
    minItems: 1,
    maxItems: MAX_CHUNK,
    items: target,
    description: 'Targets visited in order.',
  };
  const gripper: Schema = { type: 'number', minimum: 0, maximum: 1, description: '0 = closed, 1 = fully open.' };
  const grippers: Schema =
    arms.length === 1
      ? object({ gripper, note }, ['gripper'])
      : object(
          {
            positions: {
              ...object(
                Object.fromEntries(
                  arms.map((a) => [
                    a,
                    {
                      ...gripper,
                      type: ['number', 'null'],
                      description: `0 = closed, 1 = open, null = hold the ${a} gripper.`,
                    } as Schema,
                  ]),
                ),
                [...arms],
              ),
              description: `Gripper opening per arm (${arms.join(', ')}); every arm must be named.`,
            },
            note,
          },
          ['positions'],
        );
  return [
    {
      name: 'move_to',
      description: 'Move the tool to one target pose along a straight line, then report the reached pose.',
      parameters: object({ target, note }, ['target']),
    },
    {
      name: 'move_eef_chunk',
      description: 'Move the tool through several target poses in order, in one motion.',
      parameters: object({ poses: chunk, note }, ['poses']),
    },
    {
      name: 'check_path',
      description: 'Plan a path through the poses without moving; reports whether it is feasible and why not.',
      parameters: object({ poses: chunk, note }, ['poses']),
    },
    { name: 'set_gripper', description: 'Open or close the gripper(s).', parameters: grippers },
    { name: 'get_state', description: 'Report joint positions, tool poses and grippers.', parameters: object({}, []) },
    { name: 'stop', description: 'Stop all motion at once.', parameters: object({}, []) },
    {
      name: 'done',
      description: 'End the task with a summary (the outcome is re-checked independently).',
      parameters: object(
        { summary: { type: 'string', minLength: 1, maxLength: 2000 }, hindsight: { type: 'string', maxLength: 2000 } },
        ['summary'],
      ),
    },
  ];
}

/** The definitions in the OpenAI `tools` request format. */
export function openaiTools(arms: readonly string[]): { type: 'function'; function: ToolDefinition }[] {
  return toolDefinitions(arms).map((d) => ({ type: 'function', function: d }));
}
