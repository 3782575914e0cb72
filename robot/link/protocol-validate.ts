// Validators for every protocol message: the schema, then the rules a schema cannot say
// (lengths that must agree, time order, fields required by another field's value).
import { type Issue, formatIssue, formatIssues } from '../common/validation/issue.js';
import { type Check, compileSchema } from '../common/validation/json-schema.js';
import type {
  Availability,
  DescriptionMsg,
  EventMsg,
  GripperMsg,
  HeartbeatMsg,
  JointLimitsDescription,
  RobotTopic,
  StateMsg,
  StopMsg,
  TrajectoryMsg,
} from './protocol.js';
import {
  descriptionSchema,
  eventSchema,
  gripperSchema,
  heartbeatSchema,
  stateSchema,
  stopSchema,
  trajectorySchema,
  MAX_JOINTS,
  MAX_POINTS,
} from './protocol-schemas.js';
import { type SimSceneMsg, validateSimScene } from './sim-scene.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; issues: Issue[]; message: string };

const checkDescription = compileSchema(descriptionSchema);
const checkState = compileSchema(stateSchema);
const checkTrajectoryAjv = compileSchema(trajectorySchema);

/**
 * The trajectory schema, with the points checked by hand when every one has the plain shape
 * (Ajv over 100,000 points blocks a controller's event loop for ~0.4 s): the header and two
 * points still go through Ajv; anything else (a bad point, an `x_` extension) gets the full
 * check and its messages.
 */
function checkTrajectory(v: unknown): Issue[] {
  const pts = (v as { points?: unknown } | null)?.points;
  if (!Array.isArray(pts) || pts.length <= 2 || pts.length > MAX_POINTS || !pts.every(plainPoint))
    return checkTrajectoryAjv(v);
  return checkTrajectoryAjv({ ...(v as object), points: pts.slice(0, 2) });
}

const joints = (a: unknown): boolean =>
  Array.isArray(a) && a.length >= 1 && a.length <= MAX_JOINTS && a.every((x) => typeof x === 'number');

/** A point the schema accepts, with nothing but t, q and optionally dq and ddq. */
function plainPoint(p: unknown): boolean {
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return false;
  const o = p as Record<string, unknown>;
  for (const k of Object.keys(o)) if (k !== 't' && k !== 'q' && k !== 'dq' && k !== 'ddq') return false;
  const t = o.t;
  return (
    typeof t === 'number' &&
    t >= 0 &&
    t <= 86_400 &&
    joints(o.q) &&
    (o.dq === undefined || joints(o.dq)) &&
    (o.ddq === undefined || joints(o.ddq))
  );
}
const checkGripper = compileSchema(gripperSchema);
const checkStop = compileSchema(stopSchema);
const checkEvent = compileSchema(eventSchema);
const checkHeartbeat = compileSchema(heartbeatSchema);

function checked<T>(root: string, check: Check, v: unknown, rules: (m: T) => Issue[]): Checked<T> {
  let issues = check(v);
  if (issues.length === 0) issues = rules(v as T);
  if (issues.length === 0) return { ok: true, value: v as T };
  return { ok: false, issues, message: formatIssues(issues, { root }) };
}

export function validateDescription(v: unknown): Checked<DescriptionMsg> {
  return checked<DescriptionMsg>('description', checkDescription, v, (m) => {
    const seen = new Set<string>();
    const out: Issue[] = [];
    m.arms.forEach((a, i) => {
      if (seen.has(a.name)) out.push({ path: `arms[${i}].name`, rule: 'must be unique among arms', value: a.name });
      seen.add(a.name);
      if (a.limits && a.limits.length !== a.joints.length)
        out.push({
          path: `arms[${i}].limits`,
          rule: `must have one entry per joint (${a.joints.length})`,
          value: a.limits.length,
        });
      a.limits?.forEach((l, j) => {
        if (l.lower !== null && l.upper !== null && l.lower > l.upper)
          out.push({
            path: `arms[${i}].limits[${j}].lower`,
            rule: `must not exceed upper (${l.upper})`,
            value: l.lower,
          });
      });
    });
    return out;
  });
}

export function validateState(v: unknown): Checked<StateMsg> {
  return checked<StateMsg>('state', checkState, v, (m) => {
    const out: Issue[] = [];
    for (const [name, a] of Object.entries(m.arms)) {
      if (a.dq.length !== a.q.length)
        out.push({ path: `arms.${name}.dq`, rule: `must have as many entries as q (${a.q.length})`, value: a.dq });
      if ((a.mode === 'follow') !== (a.trajectory !== null)) {
        out.push({
          path: `arms.${name}.trajectory`,
          rule: 'must be a trajectory id exactly when mode is "follow"',
          value: a.trajectory,
        });
      }
    }
    if (m.hb && m.hb.rx_time > m.time)
      out.push({ path: 'hb.rx_time', rule: `must not be after time (${m.time})`, value: m.hb.rx_time });
    return out;
  });
}

const DERIVATIVES = ['dq', 'ddq'] as const;

export function validateTrajectory(v: unknown): Checked<TrajectoryMsg> {
  return checked<TrajectoryMsg>('trajectory', checkTrajectory, v, (m) => {
    const out: Issue[] = [];
    const n = m.joints.length;
    const withDq = m.points[0]!.dq !== undefined;
    const withDdq = m.points[0]!.ddq !== undefined;
    if (withDdq && !withDq) out.push({ path: 'points[0].dq', rule: 'is required when ddq is given', value: undefined });
    if (m.points[0]!.t !== 0)
      out.push({ path: 'points[0].t', rule: 'must be 0 (times are relative to start_time)', value: m.points[0]!.t });
    m.points.forEach((p, i) => {
      const at = (): string => `points[${i}]`;
      if (i > 0 && !(p.t > m.points[i - 1]!.t))
        out.push({
          path: `${at()}.t`,
          rule: `must be greater than points[${i - 1}].t = ${m.points[i - 1]!.t}`,
          value: p.t,
        });
      if (p.q.length !== n) out.push({ path: `${at()}.q`, rule: `must have one entry per joint (${n})`, value: p.q });
      for (const key of DERIVATIVES) {
        const given = p[key] !== undefined;
        if (given !== (key === 'dq' ? withDq : withDdq)) {
          out.push({
            path: `${at()}.${key}`,
            rule: `must be given on every point or on none (points[0] ${given ? 'has none' : 'has it'})`,
            value: p[key],
          });
        } else if (given && p[key]!.length !== n)
          out.push({ path: `${at()}.${key}`, rule: `must have one entry per joint (${n})`, value: p[key] });
      }
    });
    return out.slice(0, 10);
  });
}

export function validateGripper(v: unknown): Checked<GripperMsg> {
  return checked<GripperMsg>('gripper', checkGripper, v, () => []);
}

export function validateStop(v: unknown): Checked<StopMsg> {
  return checked<StopMsg>('stop', checkStop, v, () => []);
}

export function validateEvent(v: unknown): Checked<EventMsg> {
  return checked<EventMsg>('events', checkEvent, v, (m) => {
    const out: Issue[] = [];
    if (['rejected', 'aborted', 'fault'].includes(m.event) && m.reason === undefined) {
      out.push({ path: 'reason', rule: `is required for event "${m.event}"`, value: undefined });
    }
    if (m.event !== 'fault' && m.id === null)
      out.push({ path: 'id', rule: `is required for event "${m.event}" (only fault may have id null)`, value: null });
    if ((m.id === null) !== (m.command === null))
      out.push({ path: 'command', rule: 'must name the command kind exactly when id is given', value: m.command });
    return out;
  });
}

export function validateHeartbeat(v: unknown): Checked<HeartbeatMsg> {
  return checked<HeartbeatMsg>('heartbeat', checkHeartbeat, v, (m) =>
    m.timeout > m.period
      ? []
      : [{ path: 'timeout', rule: `must be greater than period (${m.period})`, value: m.timeout }],
  );
}

/** Availability payloads are the bare strings `online` / `offline` (the MQTT last will is `offline`). */
export function validateAvailability(v: unknown): Checked<Availability> {
  if (v === 'online' || v === 'offline') return { ok: true, value: v };
  const e: Issue = { path: '', rule: 'must be "online" or "offline"', value: v };
  return { ok: false, issues: [e], message: formatIssue(e, { root: 'availability' }) };
}

export interface MessageBySuffix {
  availability: Availability;
  description: DescriptionMsg;
  state: StateMsg;
  trajectory: TrajectoryMsg;
  gripper: GripperMsg;
  stop: StopMsg;
  events: EventMsg;
  heartbeat: HeartbeatMsg;
  /** A simulator's ground truth (WebSocket envelope type; on MQTT the topic `sim/scene`). */
  sim_scene: SimSceneMsg;
}

const validators: { [K in keyof MessageBySuffix]: (v: unknown) => Checked<MessageBySuffix[K]> } = {
  availability: validateAvailability,
  description: validateDescription,
  state: validateState,
  trajectory: validateTrajectory,
  gripper: validateGripper,
  stop: validateStop,
  events: validateEvent,
  heartbeat: validateHeartbeat,
  sim_scene: validateSimScene,
};

export function validateMessage<K extends keyof MessageBySuffix>(kind: K, v: unknown): Checked<MessageBySuffix[K]> {
  return validators[kind](v);
}

/** Decodes a raw MQTT payload for a topic suffix (availability is text, the rest JSON) and validates it. */
export function decodeMessage<K extends RobotTopic | 'heartbeat' | 'sim_scene'>(
  kind: K,
  raw: Buffer | string,
): Checked<MessageBySuffix[K]> {
  const text = typeof raw === 'string' ? raw : raw.toString('utf8');
  if (kind === 'availability') return validateMessage(kind, text.trim());
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const e: Issue = { path: '', rule: `must be JSON (${(err as Error).message})`, value: text.slice(0, 40) };
    return { ok: false, issues: [e], message: formatIssue(e, { root: kind }) };
  }
  return validateMessage(kind, value);
}

/** The arms and joint names a robot config expects (robot/description supplies them), and the limits it plans within. */
export interface ExpectedArms {
  arms: { name: string; joints: readonly string[]; limits?: readonly JointLimitsDescription[] }[];
}

/** Differences between a controller's description and the robot config; [] when they agree. */
export function compareDescription(desc: DescriptionMsg, expected: ExpectedArms): string[] {
  const out: string[] = [];
  for (const want of expected.arms) {
    const got = desc.arms.find((a) => a.name === want.name);
    if (!got)
      out.push(
        `arm "${want.name}" is missing from the controller's description (it has ${desc.arms.map((a) => a.name).join(', ')})`,
      );
    else if (got.joints.join('\u0000') !== want.joints.join('\u0000')) {
      out.push(
        `arm "${want.name}" joints are [${got.joints.join(', ')}], the robot config says [${want.joints.join(', ')}]`,
      );
    } else if (got.limits && want.limits) out.push(...tighterLimits(want.name, want.joints, got.limits, want.limits));
  }
  for (const a of desc.arms) {
    if (!expected.arms.some((w) => w.name === a.name)) out.push(`arm "${a.name}" is not in the robot config`);
  }
  return out;
}

/** Limits the controller enforces that are tighter than the robot config's: it would refuse correct plans. */
function tighterLimits(
  arm: string,
  joints: readonly string[],
  got: readonly JointLimitsDescription[],
  want: readonly JointLimitsDescription[],
): string[] {
  const out: string[] = [];
  joints.forEach((name, j) => {
    const c = got[j]!;
    const w = want[j]!;
    const say = (what: string, theirs: unknown, ours: unknown) =>
      out.push(
        `arm "${arm}" joint ${name}: the controller enforces ${what} ${theirs}, the robot config plans with ${ours}`,
      );
    if (c.velocity < w.velocity) say('velocity ≤', c.velocity, w.velocity);
    if (c.acceleration < w.acceleration) say('acceleration ≤', c.acceleration, w.acceleration);
    if ((c.lower ?? -Infinity) > (w.lower ?? -Infinity)) say('lower bound', c.lower, w.lower);
    if ((c.upper ?? Infinity) < (w.upper ?? Infinity)) say('upper bound', c.upper, w.upper);
  });
  return out;
}

/** Differences between a state message and the description it must follow; [] when consistent. */
export function compareState(state: StateMsg, desc: DescriptionMsg): string[] {
  const out: string[] = [];
  for (const arm of desc.arms) {
    const s = state.arms[arm.name];
    if (!s) out.push(`state.arms.${arm.name}: is required (the description lists this arm)`);
    else if (s.q.length !== arm.joints.length)
      out.push(`state.arms.${arm.name}.q: must have ${arm.joints.length} entries (got ${s.q.length})`);
    else if (!arm.gripper && s.gripper !== null)
      out.push(`state.arms.${arm.name}.gripper: must be null, the arm has no gripper (got ${s.gripper})`);
  }
  for (const name of Object.keys(state.arms)) {
    if (!desc.arms.some((a) => a.name === name)) out.push(`state.arms.${name}: is not an arm of the description`);
  }
  return out;
}
