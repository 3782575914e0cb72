// Robot controller protocol, version 1: message types, topics and delivery rules shared by the
// daemon and controllers (docs/protocol.md is the normative text).
// All times and durations are seconds (float); `time`-like fields name whose clock they use.

export const PROTOCOL_VERSION = 1;
export const DEFAULT_BASE = 'brainstem';

export type Availability = 'online' | 'offline';

/** What a controller enforces on one joint; `lower`/`upper` null for a continuous joint. */
export interface JointLimitsDescription {
  lower: number | null;
  upper: number | null;
  /** rad/s (m/s), > 0. */
  velocity: number;
  /** rad/s² (m/s²), > 0. */
  acceleration: number;
}

/** A joint's limits as a description carries them (JSON has no infinity: an unbounded side is null). */
export function describeLimits(l: { lower: number; upper: number; velocity: number; acceleration: number }) {
  const bound = (x: number) => (Number.isFinite(x) ? x : null);
  return { lower: bound(l.lower), upper: bound(l.upper), velocity: l.velocity, acceleration: l.acceleration };
}

export interface ArmDescription {
  name: string;
  joints: string[];
  gripper: boolean;
  /** Optional: one entry per joint, in joint order; the controller refuses trajectories outside them. */
  limits?: JointLimitsDescription[];
}

/** Controller → daemon, retained: what the controller drives. A new `session` = a restart. */
export interface DescriptionMsg {
  v: 1;
  robot: string;
  session: string;
  /** Controller clock. */
  time: number;
  controller: { name: string; version: string };
  arms: ArmDescription[];
  state_rate: number;
  /** The heartbeat timeout the controller enforces at most (it uses min(this, heartbeat.timeout)). */
  heartbeat_timeout: number;
}

export type ArmMode = 'hold' | 'follow' | 'stop' | 'fault';

export interface ArmState {
  q: number[];
  dq: number[];
  /** 0 = closed, 1 = fully open; null when the arm has no gripper. */
  gripper: number | null;
  mode: ArmMode;
  /** Id of the trajectory being followed (mode `follow`), else null. */
  trajectory: string | null;
  faults: string[];
}

/** The last heartbeat the controller received, echoed for round-trip clock estimation. */
export interface HeartbeatEcho {
  seq: number;
  daemon_time: number;
  /** Controller clock at reception. */
  rx_time: number;
}

/** Controller → daemon, QoS 0, 50–1000 Hz. */
export interface StateMsg {
  v: 1;
  seq: number;
  /** Controller clock at sampling. */
  time: number;
  arms: Record<string, ArmState>;
  faults: string[];
  hb: HeartbeatEcho | null;
}

export interface TrajectoryPoint {
  /** Seconds after `start_time`; the first point is at 0, strictly increasing. */
  t: number;
  q: number[];
  dq?: number[];
  ddq?: number[];
}

/** Daemon → controller, QoS 1: timed joint references for one arm. */
export interface TrajectoryMsg {
  v: 1;
  id: string;
  arm: string;
  joints: string[];
  /** Daemon clock at sending. */
  time: number;
  /** Controller clock: when point t = 0 is due. A late arrival starts at once (shifted). */
  start_time: number;
  /** Controller clock: a trajectory processed after this is rejected with `expired`. */
  expires_at: number;
  points: TrajectoryPoint[];
}

/** Daemon → controller, QoS 1. */
export interface GripperMsg {
  v: 1;
  id: string;
  arm: string;
  /** 0 = closed, 1 = fully open. */
  position: number;
  time: number;
  expires_at: number;
}

/** Daemon → controller, QoS 1. Never expires; `arm: null` stops every arm. */
export interface StopMsg {
  v: 1;
  id: string;
  arm: string | null;
  time: number;
  reason?: string;
}

export type CommandKind = 'trajectory' | 'gripper' | 'stop';
export type EventKind = 'accepted' | 'rejected' | 'started' | 'finished' | 'aborted' | 'fault';

/** Reason codes of `rejected` events that brainstem's controllers send (the set is open). */
export const REJECT_REASONS = [
  'invalid',
  'expired',
  'unknown_arm',
  'joint_mismatch',
  'no_heartbeat',
  'stopping',
  'fault',
  'start_late',
  'start_too_far',
  'expiry_too_far',
  'sample_spacing',
  'joint_limit',
  'velocity_limit',
  'acceleration_limit',
  'start_mismatch',
  'no_gripper',
] as const;
/** Reason codes of `aborted` events. */
export const ABORT_REASONS = [
  'stop',
  'superseded',
  'heartbeat_lost',
  'daemon_offline',
  'daemon_restarted',
  'tracking_error',
  'goal_tolerance',
  'controller_stall',
  'collision',
  'fault',
] as const;
/** Reason codes of `fault` events. */
export const FAULT_REASONS = [
  'heartbeat_lost',
  'daemon_offline',
  'daemon_restarted',
  'tracking_error',
  'stall',
  'controller_stall',
  'collision',
  'estop',
  'driver',
  'invalid',
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

/** Controller → daemon, QoS 1. */
export interface EventMsg {
  v: 1;
  seq: number;
  time: number;
  id: string | null;
  arm: string | null;
  command: CommandKind | null;
  event: EventKind;
  reason?: string;
  detail?: string;
}

/** Daemon → every controller, QoS 0, never retained. */
export interface HeartbeatMsg {
  v: 1;
  session: string;
  seq: number;
  /** Daemon clock. */
  time: number;
  period: number;
  timeout: number;
}

/** Topic suffixes under `<base>/robots/<id>/`. */
export type RobotTopic = 'availability' | 'description' | 'state' | 'trajectory' | 'gripper' | 'stop' | 'events';
export const CONTROLLER_TOPICS: readonly RobotTopic[] = ['availability', 'description', 'state', 'events'];
export const DAEMON_TOPICS: readonly RobotTopic[] = ['trajectory', 'gripper', 'stop'];

export const ROBOT_ID_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';

/**
 * The largest message a controller sends but a camera image (bytes; over WebSocket: the whole
 * envelope): the daemon drops a larger one before parsing it, the embedded broker retains none.
 */
export const MAX_MESSAGE_BYTES = 256 * 1024;

/** Why a message over MAX_MESSAGE_BYTES is dropped unread. */
export const oversize = (bytes: number) =>
  `the message is ${bytes} bytes: a message other than a camera image must be at most ${MAX_MESSAGE_BYTES} bytes`;

export interface Delivery {
  qos: 0 | 1;
  retain: boolean;
}

/** QoS 1 for commands, events and identity; QoS 0 for the high-rate stream and heartbeats. */
export const DELIVERY: Record<RobotTopic | 'heartbeat' | 'daemon_availability', Delivery> = {
  availability: { qos: 1, retain: true },
  description: { qos: 1, retain: true },
  state: { qos: 0, retain: false },
  events: { qos: 1, retain: false },
  trajectory: { qos: 1, retain: false },
  gripper: { qos: 1, retain: false },
  stop: { qos: 1, retain: false },
  heartbeat: { qos: 0, retain: false },
  daemon_availability: { qos: 1, retain: true },
};

/** Checks a topic base: one or more non-empty levels without wildcards or a leading `$`. */
export function checkBase(base: string): string | null {
  if (base.startsWith('$')) return `topic base must not start with $ (got ${JSON.stringify(base)})`;
  const levels = base.split('/');
  // biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters refused
  if (base === '' || levels.some((l) => l === '' || /[#+\u0000]/.test(l))) {
    return `topic base must be non-empty levels separated by / without + # or empty levels (got ${JSON.stringify(base)})`;
  }
  return null;
}

export function robotTopic(base: string, robot: string, suffix: RobotTopic): string {
  return `${base}/robots/${robot}/${suffix}`;
}

export function daemonTopics(base: string): { heartbeat: string; availability: string } {
  return { heartbeat: `${base}/daemon/heartbeat`, availability: `${base}/daemon/availability` };
}

/** Subscription filter for one suffix of every robot (daemon side). */
export function robotFilter(base: string, suffix: RobotTopic): string {
  return `${base}/robots/+/${suffix}`;
}

/** Splits `<base>/robots/<id>/<suffix>`; null for any other topic. */
export function parseRobotTopic(base: string, topic: string): { robot: string; suffix: RobotTopic } | null {
  const prefix = `${base}/robots/`;
  if (!topic.startsWith(prefix)) return null;
  const rest = topic.slice(prefix.length).split('/');
  if (rest.length !== 2 || !new RegExp(ROBOT_ID_PATTERN).test(rest[0]!)) return null;
  const suffix = rest[1] as RobotTopic;
  return [...CONTROLLER_TOPICS, ...DAEMON_TOPICS].includes(suffix) ? { robot: rest[0]!, suffix } : null;
}

/** MQTT 5 publish properties: JSON content, correlation data = command id, broker-side expiry. */
export function mqtt5Properties(id: string | null, expiresInS?: number): Record<string, unknown> {
  const props: Record<string, unknown> = { payloadFormatIndicator: true, contentType: 'application/json' };
  if (id !== null) props.correlationData = Buffer.from(id, 'utf8');
  if (expiresInS !== undefined) props.messageExpiryInterval = Math.max(1, Math.ceil(expiresInS));
  return props;
}
