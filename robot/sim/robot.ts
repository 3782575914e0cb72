// The little the simulated controller needs to know about a robot: arms, joint names and limits,
// and the gripper. Integration point: once robot/description exists, its robot config maps onto
// this interface and `loadSimRobot` reads through it instead of its own YAML form.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { parse } from 'yaml';
import { checkSchema, formatError, type Schema } from '../../daemon/util/json-schema.js';

export interface SimJoint {
  name: string;
  /** Position limits, rad (or m for prismatic joints). */
  lower: number;
  upper: number;
}

export interface SimArm {
  name: string;
  joints: SimJoint[];
  /** Physical stroke (m) and speed (m/s); the protocol reports 0 = closed … 1 = open. */
  gripper?: { min: number; max: number; speed: number };
  /** Initial joint positions; default: 0 clamped into the limits. */
  home?: number[];
}

export interface SimRobot {
  name: string;
  arms: SimArm[];
}

const name: Schema = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.:-]+$' };
const robotSchema: Schema = {
  type: 'object',
  required: ['name', 'arms'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' },
    arms: {
      type: 'array',
      minItems: 1,
      maxItems: 16,
      items: {
        type: 'object',
        required: ['name', 'joints'],
        additionalProperties: false,
        properties: {
          name,
          joints: {
            type: 'array',
            minItems: 1,
            maxItems: 64,
            items: { type: 'object', required: ['name', 'lower', 'upper'], additionalProperties: false, properties: { name, lower: { type: 'number' }, upper: { type: 'number' } } },
          },
          gripper: {
            type: 'object',
            required: ['min', 'max', 'speed'],
            additionalProperties: false,
            properties: { min: { type: 'number' }, max: { type: 'number' }, speed: { type: 'number', exclusiveMinimum: 0 } },
          },
          home: { type: 'array', items: { type: 'number' } },
        },
      },
    },
  },
};

/** Validates a parsed robot; throws an Error naming the field, rule and value. */
export function checkSimRobot(v: unknown, source = 'robot'): SimRobot {
  const errors = checkSchema(robotSchema, v);
  if (errors.length) throw new Error(errors.map((e) => formatError(e, source)).join('; '));
  const robot = v as SimRobot;
  const problems: string[] = [];
  robot.arms.forEach((arm, i) => {
    if (robot.arms.findIndex((a) => a.name === arm.name) !== i) problems.push(`arms[${i}].name: must be unique (got "${arm.name}")`);
    arm.joints.forEach((j, k) => {
      if (!(j.lower < j.upper)) problems.push(`arms[${i}].joints[${k}]: lower must be < upper (got ${j.lower}, ${j.upper})`);
      if (arm.joints.findIndex((o) => o.name === j.name) !== k) problems.push(`arms[${i}].joints[${k}].name: must be unique in the arm (got "${j.name}")`);
    });
    if (arm.gripper && !(arm.gripper.min < arm.gripper.max)) problems.push(`arms[${i}].gripper: min must be < max (got ${arm.gripper.min}, ${arm.gripper.max})`);
    if (arm.home) {
      if (arm.home.length !== arm.joints.length) problems.push(`arms[${i}].home: must have one entry per joint (${arm.joints.length}, got ${arm.home.length})`);
      else arm.home.forEach((q, k) => {
        const j = arm.joints[k]!;
        if (q < j.lower || q > j.upper) problems.push(`arms[${i}].home[${k}]: must be within [${j.lower}, ${j.upper}] (got ${q})`);
      });
    }
  });
  if (problems.length) throw new Error(problems.map((p) => `${source}.${p}`).join('; '));
  return robot;
}

/** Initial joint positions of an arm. */
export function homeOf(arm: SimArm): number[] {
  return arm.home ? [...arm.home] : arm.joints.map((j) => Math.min(Math.max(0, j.lower), j.upper));
}

export const ROBOTS_DIR = fileURLToPath(new URL('../../../configs/sim/', import.meta.url));

/** Loads `configs/sim/<name>.yaml`, or a YAML/JSON file when given a path. */
export function loadSimRobot(nameOrPath: string, dir = ROBOTS_DIR): SimRobot {
  const path = /[\\/]|\.(ya?ml|json)$/.test(nameOrPath) ? nameOrPath : join(dir, `${nameOrPath}.yaml`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`robot "${nameOrPath}": cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let parsed: unknown;
  try {
    parsed = parse(text);
  } catch (err) {
    throw new Error(`robot "${nameOrPath}": ${path} is not valid YAML (${(err as Error).message})`);
  }
  return checkSimRobot(parsed, path);
}
