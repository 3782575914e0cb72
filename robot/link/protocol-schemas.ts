// JSON Schemas of the protocol's JSON messages (version 1). Unknown fields are rejected except
// `x_`-prefixed vendor extensions, so a misspelt optional field is an error, not a silent default.
import type { Schema } from '../common/validation/json-schema.js';
import { ROBOT_ID_PATTERN } from './protocol.js';

export const MAX_JOINTS = 64;
/** Points of one trajectory message: the schema's bound, and the planner's (robot/motion/planner/references.ts). */
export const MAX_POINTS = 100_000;
/**
 * Bytes of one trajectory message as JSON: the daemon plans nothing larger (a bound from the
 * points' rounding, robot/link/trajectory-size.ts), and its MQTT packet limit (embedded broker,
 * generated Mosquitto max_packet_size) is at least this plus 64 KiB. 100,000 points of 6 joints
 * with dq and ddq are ~20 MB, past the default 8 MiB + 64 KiB packet: the bytes bind first.
 */
export const MAX_TRAJECTORY_BYTES = 8 << 20;
/** Arms of one robot: a description lists at most this many, a state reports at most this many. */
export const MAX_ARMS = 16;

export const version: Schema = { type: 'integer', const: 1, description: 'Protocol version' };
export const time: Schema = { type: 'number', description: 'Seconds on the named clock' };
const id: Schema = {
  type: 'string',
  minLength: 1,
  maxLength: 128,
  pattern: '^[\\x21-\\x7e]+$',
  description: 'Printable ASCII without spaces',
};
export const name: Schema = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.:-]+$' };
const code: Schema = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9_]*$' };
const seq: Schema = { type: 'integer', minimum: 0 };
const vector: Schema = { type: 'array', minItems: 1, maxItems: MAX_JOINTS, items: { type: 'number' } };
const unit: Schema = { type: 'number', minimum: 0, maximum: 1 };
const extensions = { '^x_': {} };

export function message(properties: Record<string, Schema>, optional: string[] = []): Schema {
  return {
    type: 'object',
    properties,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    additionalProperties: false,
    patternProperties: extensions,
  };
}

const positive: Schema = { type: 'number', exclusiveMinimum: 0 };
const jointLimits: Schema = message({
  lower: { type: ['number', 'null'], description: 'null: continuous joint' },
  upper: { type: ['number', 'null'], description: 'null: continuous joint' },
  velocity: positive,
  acceleration: positive,
});

export const descriptionSchema: Schema = message({
  v: version,
  robot: { type: 'string', pattern: ROBOT_ID_PATTERN },
  session: id,
  time,
  controller: message({
    name: { type: 'string', minLength: 1, maxLength: 128 },
    version: { type: 'string', minLength: 1, maxLength: 64 },
  }),
  arms: {
    type: 'array',
    minItems: 1,
    maxItems: MAX_ARMS,
    items: message(
      {
        name,
        joints: { type: 'array', minItems: 1, maxItems: MAX_JOINTS, uniqueItems: true, items: name },
        gripper: { type: 'boolean' },
        limits: { type: 'array', minItems: 1, maxItems: MAX_JOINTS, items: jointLimits },
      },
      ['limits'],
    ),
  },
  state_rate: { type: 'number', minimum: 1, maximum: 10_000, description: 'Hz' },
  heartbeat_timeout: { type: 'number', exclusiveMinimum: 0, maximum: 60 },
});

export const stateSchema: Schema = message({
  v: version,
  seq,
  time,
  arms: {
    type: 'object',
    minProperties: 1,
    maxProperties: MAX_ARMS,
    propertyNames: name,
    additionalProperties: message({
      q: vector,
      dq: vector,
      gripper: { type: ['number', 'null'], minimum: 0, maximum: 1 },
      mode: { type: 'string', enum: ['hold', 'follow', 'stop', 'fault'] },
      trajectory: { ...id, type: ['string', 'null'] },
      faults: { type: 'array', maxItems: 32, items: code },
    }),
  },
  faults: { type: 'array', maxItems: 32, items: code },
  hb: { ...message({ seq, daemon_time: time, rx_time: time }), type: ['object', 'null'] },
});

const point: Schema = message(
  { t: { type: 'number', minimum: 0, maximum: 86_400 }, q: vector, dq: vector, ddq: vector },
  ['dq', 'ddq'],
);

export const trajectorySchema: Schema = message({
  v: version,
  id,
  arm: name,
  joints: { type: 'array', minItems: 1, maxItems: MAX_JOINTS, uniqueItems: true, items: name },
  time,
  start_time: time,
  expires_at: time,
  points: { type: 'array', minItems: 2, maxItems: MAX_POINTS, items: point },
});

export const gripperSchema: Schema = message({ v: version, id, arm: name, position: unit, time, expires_at: time });

export const stopSchema: Schema = message(
  {
    v: version,
    id,
    arm: { ...name, type: ['string', 'null'] },
    time,
    reason: { type: 'string', maxLength: 256 },
  },
  ['reason'],
);

export const eventSchema: Schema = message(
  {
    v: version,
    seq,
    time,
    id: { ...id, type: ['string', 'null'] },
    arm: { ...name, type: ['string', 'null'] },
    command: { type: ['string', 'null'], enum: ['trajectory', 'gripper', 'stop', null] },
    event: { type: 'string', enum: ['accepted', 'rejected', 'started', 'finished', 'aborted', 'fault'] },
    reason: code,
    detail: { type: 'string', maxLength: 2048 },
  },
  ['reason', 'detail'],
);

export const heartbeatSchema: Schema = message({
  v: version,
  session: id,
  seq,
  time,
  period: { type: 'number', exclusiveMinimum: 0, maximum: 10 },
  timeout: { type: 'number', exclusiveMinimum: 0, maximum: 60 },
});

export const envelopeSchema: Schema = {
  type: 'object',
  properties: {
    type: {
      type: 'string',
      enum: [
        'availability',
        'description',
        'state',
        'events',
        'trajectory',
        'gripper',
        'stop',
        'heartbeat',
        'sim_scene',
      ],
    },
    robot: { type: 'string', pattern: ROBOT_ID_PATTERN },
    payload: {},
  },
  required: ['type', 'payload'],
  additionalProperties: false,
};

const cameraName: Schema = { type: 'string', minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.-]+$' };
const pixels: Schema = { type: 'integer', minimum: 1, maximum: 16_384 };
const focal: Schema = { type: 'number', exclusiveMinimum: 0, description: 'pixels' };

/** A camera frame's metadata: MQTT sidecar JSON, the WebSocket frame header, MQTT 5 user properties. */
export const cameraMetaSchema: Schema = message(
  {
    v: version,
    seq,
    time,
    kind: { type: 'string', enum: ['color', 'depth'] },
    encoding: { type: 'string', enum: ['jpeg', 'png'] },
    width: pixels,
    height: pixels,
    intrinsics: message({ fx: focal, fy: focal, cx: { type: 'number' }, cy: { type: 'number' } }),
    extrinsics: message({
      frame: { type: 'string', minLength: 1, maxLength: 128 },
      pose: { type: 'array', minItems: 7, maxItems: 7, items: { type: 'number' }, description: 'x y z qx qy qz qw' },
    }),
    depth_scale: { type: 'number', exclusiveMinimum: 0, description: 'metres per depth unit' },
  },
  ['kind', 'intrinsics', 'extrinsics', 'depth_scale'],
);

/** The JSON header of a binary WebSocket camera frame. */
export const cameraHeaderSchema: Schema = message({
  type: { type: 'string', const: 'camera' },
  robot: { type: 'string', pattern: ROBOT_ID_PATTERN },
  camera: cameraName,
  meta: {},
});

export const CAMERA_NAME_PATTERN = cameraName.pattern!;
