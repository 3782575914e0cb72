// Robot config (parsed YAML) → validated RobotDescription. Pure: a URDF referenced by the
// config is read through the `readText` callback the loader supplies.
import { fromXyzRpy, identity } from '../math/transform.js';
import { isRecord } from '../common/validation/values.js';
import { Checker, type Obj } from './checker.js';
import { dhChain, type DhConvention, type DhRow } from './dh.js';
import type {
  Box,
  CapsuleSpec,
  GripperRange,
  IkTolerances,
  Jaw,
  JointDescription,
  KinematicChainSpec,
  PathSampling,
  Plane,
  RobotDescription,
  SettleCriteria,
  TcpSpeedLimits,
  Triple,
  Validated,
} from './types.js';
import { readHeld } from './obstacles-config.js';
import { urdfCollisionCapsules } from './urdf-collision.js';
import { importUrdf, type UrdfLimits } from './urdf.js';

/** Defaults from GPT-Policy's robot profiles (FACTS.md). */
export const DEFAULT_IK: IkTolerances = {
  stopPosition: 1e-4,
  stopRotation: 5e-4,
  acceptPosition: 0.002,
  acceptRotation: Math.PI / 180,
  characteristicLength: 0.4,
  maxStep: 0.5,
  maxIterations: 60,
  coldStartBudget: 0.01,
};
export const DEFAULT_PATH: PathSampling = { positionStep: 0.005, rotationStep: 0.035, rateHz: 100 };
export const DEFAULT_TCP_SPEED: TcpSpeedLimits = { linear: 0.08, angular: 0.5 };
export const DEFAULT_SETTLE: SettleCriteria = {
  positionTolerance: 0.03,
  velocityTolerance: 0.05,
  samples: 10,
  minWindow: 0.3,
  span: 0.002,
  timeout: 3,
};

const NAME = /^[a-z0-9][a-z0-9_-]*$/;
const TOP_KEYS = [
  'name',
  'description',
  'kinematics',
  'limits',
  'tcp',
  'home',
  'ik',
  'path',
  'tcp_speed',
  'settle',
  'gripper',
  'grasp_envelope',
  'capsules',
  'self_collision_ignore',
  'workspace',
  'table',
];

export interface ConfigSource {
  /** Text of a file next to the config (a URDF), undefined when it cannot be read. */
  readText(file: string): string | undefined;
}

export function parseRobotConfig(raw: unknown, source: ConfigSource): Validated<RobotDescription> {
  const name = isRecord(raw) && typeof raw.name === 'string' ? raw.name : '?';
  const c = new Checker(name);
  if (!isRecord(raw)) {
    c.issue('config', raw, 'must be a mapping');
    return { ok: false, issues: c.issues };
  }
  c.string(raw, 'name', 'name', NAME);
  c.knownKeys(raw, TOP_KEYS, '');
  const kin = c.section(raw, 'kinematics', '', true);
  const built = kin ? readKinematics(c, kin, source) : undefined;
  const joints = built ? readLimits(c, raw, built.chain, built.urdfLimits) : [];
  const tcpSec = c.section(raw, 'tcp', '', false) ?? {};
  c.knownKeys(tcpSec, ['xyz', 'rpy'], 'tcp.');
  const tcp = fromXyzRpy(c.triple(tcpSec, 'xyz', 'tcp.xyz', [0, 0, 0]), c.triple(tcpSec, 'rpy', 'tcp.rpy', [0, 0, 0]));
  const linkNames = new Set(built?.chain.links.map((l) => l.name) ?? []);
  const envelope = readHeld(c, raw.grasp_envelope, 'grasp_envelope');
  const description: RobotDescription = {
    name,
    summary: c.optionalString(raw, 'description', 'description'),
    baseLink: built?.chain.baseLink ?? '',
    joints,
    links: built?.chain.links ?? [],
    flange: built?.chain.flange ?? identity(),
    tcp,
    home: readHome(c, raw, joints),
    ik: readIk(c, raw),
    path: readPath(c, raw),
    tcpSpeed: readTcpSpeed(c, raw),
    settle: readSettle(c, raw),
    gripper: readGripper(c, raw),
    ...(envelope && { graspEnvelope: envelope }),
    capsules: readCapsules(c, raw, linkNames, built?.urdfText),
    selfCollisionIgnore: readIgnorePairs(c, raw, linkNames),
    workspace: readBox(c, raw, 'workspace') ?? { min: [0, 0, 0], max: [0, 0, 0] },
    table: readPlane(c, raw, 'table') ?? { normal: [0, 0, 1], offset: 0 },
  };
  return c.issues.length ? { ok: false, issues: c.issues } : { ok: true, value: description };
}

function readKinematics(
  c: Checker,
  kin: Obj,
  source: ConfigSource,
): { chain: KinematicChainSpec; urdfLimits?: Map<string, UrdfLimits>; urdfText?: string } | undefined {
  const type = c.oneOf(kin, 'type', 'kinematics.type', ['dh-standard', 'dh-modified', 'urdf'] as const);
  if (type === 'urdf') {
    c.knownKeys(kin, ['type', 'urdf', 'base_link', 'tip_link'], 'kinematics.');
    const file = c.string(kin, 'urdf', 'kinematics.urdf');
    if (!file) return undefined;
    const text = source.readText(file);
    if (text === undefined) {
      c.issue('kinematics.urdf', file, 'file cannot be read');
      return undefined;
    }
    const base = typeof kin.base_link === 'string' ? kin.base_link : undefined;
    const tip = typeof kin.tip_link === 'string' ? kin.tip_link : undefined;
    const r = importUrdf(text, { baseLink: base, tipLink: tip });
    if (!r.ok) {
      for (const e of r.errors) c.issue('kinematics.urdf', file, e);
      return undefined;
    }
    if (r.chain.joints.length === 0) c.issue('kinematics.urdf', file, 'chain has no moving joints');
    return { chain: r.chain, urdfLimits: r.chain.limits, urdfText: text };
  }
  c.knownKeys(kin, ['type', 'base_link', 'joints', 'flange'], 'kinematics.');
  const baseLink = kin.base_link === undefined ? 'base' : c.string(kin, 'base_link', 'kinematics.base_link');
  const list = kin.joints;
  if (!Array.isArray(list) || list.length === 0) {
    c.issue('kinematics.joints', list, 'must be a non-empty list of DH rows');
    return undefined;
  }
  const rows: DhRow[] = [];
  const seen = new Set<string>([`link:${baseLink}`]);
  list.forEach((item, i) => {
    const q = `kinematics.joints[${i}]`;
    if (!isRecord(item)) {
      c.issue(q, item, 'must be a mapping');
      return;
    }
    const jn = c.string(item, 'name', `${q}.name`);
    const joint = jn || undefined;
    c.knownKeys(item, ['name', 'link', 'type', 'a', 'd', 'alpha', 'theta'], '', joint);
    const link = c.string(item, 'link', 'link', undefined, joint);
    for (const [what, v] of [
      ['name', jn],
      ['link', link],
    ] as const) {
      if (v && seen.has(`${what}:${v}`)) c.issue(what, v, `must be unique (repeated in ${q})`, joint);
      seen.add(`${what}:${v}`);
    }
    rows.push({
      name: jn,
      link,
      type: c.oneOf(item, 'type', 'type', ['revolute', 'prismatic'] as const, 'revolute', joint),
      a: c.number(item, 'a', 'a', {}, undefined, joint),
      d: c.number(item, 'd', 'd', {}, undefined, joint),
      alpha: c.number(item, 'alpha', 'alpha', {}, undefined, joint),
      theta: c.number(item, 'theta', 'theta', {}, 0, joint),
    });
  });
  const fl = c.section(kin, 'flange', 'kinematics.', false);
  let flange: Pick<DhRow, 'a' | 'd' | 'alpha' | 'theta'> | undefined;
  if (fl) {
    c.knownKeys(fl, ['a', 'd', 'alpha', 'theta'], 'kinematics.flange.');
    flange = {
      a: c.number(fl, 'a', 'kinematics.flange.a', {}, 0),
      d: c.number(fl, 'd', 'kinematics.flange.d', {}, 0),
      alpha: c.number(fl, 'alpha', 'kinematics.flange.alpha', {}, 0),
      theta: c.number(fl, 'theta', 'kinematics.flange.theta', {}, 0),
    };
  }
  const convention: DhConvention = type === 'dh-standard' ? 'standard' : 'modified';
  return { chain: dhChain(convention, baseLink, rows, flange) };
}

function readLimits(
  c: Checker,
  raw: Obj,
  chain: KinematicChainSpec,
  urdf?: Map<string, UrdfLimits>,
): JointDescription[] {
  const sec = c.section(raw, 'limits', '', true) ?? {};
  const names = chain.joints.map((j) => j.name);
  for (const k of Object.keys(sec))
    if (!names.includes(k)) c.issue('limits', k, `names no joint of the chain (${names.join(', ')})`, k);
  return chain.joints.map((j) => {
    const e = sec[j.name];
    const u = urdf?.get(j.name) ?? {};
    if (!isRecord(e)) {
      c.issue('limits', e, 'every joint needs a mapping with velocity, acceleration and jerk', j.name);
      return { ...j, limits: { lower: NaN, upper: NaN, velocity: NaN, acceleration: NaN, jerk: NaN } };
    }
    c.knownKeys(e, ['position', 'velocity', 'acceleration', 'jerk'], '', j.name);
    let lower = -Infinity,
      upper = Infinity;
    const pos =
      e.position ??
      (u.lower !== undefined && u.upper !== undefined && j.type !== 'continuous' ? [u.lower, u.upper] : undefined);
    if (pos !== undefined) {
      if (!Array.isArray(pos) || pos.length !== 2 || !pos.every((x) => typeof x === 'number' && Number.isFinite(x))) {
        c.issue('position', pos, 'must be [lower, upper], two finite numbers', j.name);
      } else if (!(pos[0] < pos[1])) {
        c.issue('position', pos, 'lower must be < upper', j.name);
      } else {
        [lower, upper] = pos as [number, number];
      }
    } else if (j.type !== 'continuous') {
      c.issue('position', undefined, `a ${j.type} joint needs position limits [lower, upper]`, j.name);
    }
    const velocity =
      e.velocity === undefined && u.velocity !== undefined
        ? c.checkNumber(u.velocity, 'velocity (from URDF)', { gt: 0 }, j.name)
        : c.number(e, 'velocity', 'velocity', { gt: 0 }, undefined, j.name);
    return {
      ...j,
      limits: {
        lower,
        upper,
        velocity,
        acceleration: c.number(e, 'acceleration', 'acceleration', { gt: 0 }, undefined, j.name),
        jerk: c.number(e, 'jerk', 'jerk', { gt: 0 }, undefined, j.name),
      },
    };
  });
}

function readIk(c: Checker, raw: Obj): IkTolerances {
  const s = c.section(raw, 'ik', '', false) ?? {};
  c.knownKeys(
    s,
    [
      'stop_position_m',
      'stop_rotation_rad',
      'accept_position_m',
      'accept_rotation_deg',
      'characteristic_length_m',
      'max_step_rad',
      'max_iterations',
      'cold_start_budget_s',
    ],
    'ik.',
  );
  const d = DEFAULT_IK;
  const ik: IkTolerances = {
    stopPosition: c.number(s, 'stop_position_m', 'ik.stop_position_m', { gt: 0 }, d.stopPosition),
    stopRotation: c.number(s, 'stop_rotation_rad', 'ik.stop_rotation_rad', { gt: 0 }, d.stopRotation),
    acceptPosition: c.number(s, 'accept_position_m', 'ik.accept_position_m', { gt: 0 }, d.acceptPosition),
    acceptRotation:
      (c.number(s, 'accept_rotation_deg', 'ik.accept_rotation_deg', { gt: 0 }, (d.acceptRotation * 180) / Math.PI) *
        Math.PI) /
      180,
    characteristicLength: c.number(
      s,
      'characteristic_length_m',
      'ik.characteristic_length_m',
      { gt: 0 },
      d.characteristicLength,
    ),
    maxStep: c.number(s, 'max_step_rad', 'ik.max_step_rad', { gt: 0 }, d.maxStep),
    maxIterations: c.number(s, 'max_iterations', 'ik.max_iterations', { integer: true, min: 1 }, d.maxIterations),
    coldStartBudget: c.number(s, 'cold_start_budget_s', 'ik.cold_start_budget_s', { gt: 0 }, d.coldStartBudget),
  };
  if (ik.stopPosition > ik.acceptPosition)
    c.issue('ik.stop_position_m', ik.stopPosition, `must be ≤ ik.accept_position_m (${ik.acceptPosition})`);
  if (ik.stopRotation > ik.acceptRotation)
    c.issue(
      'ik.stop_rotation_rad',
      ik.stopRotation,
      `must be ≤ ik.accept_rotation_deg in radians (${ik.acceptRotation})`,
    );
  return ik;
}

function readPath(c: Checker, raw: Obj): PathSampling {
  const s = c.section(raw, 'path', '', false) ?? {};
  c.knownKeys(s, ['position_step_m', 'rotation_step_rad', 'rate_hz'], 'path.');
  return {
    positionStep: c.number(s, 'position_step_m', 'path.position_step_m', { gt: 0 }, DEFAULT_PATH.positionStep),
    rotationStep: c.number(s, 'rotation_step_rad', 'path.rotation_step_rad', { gt: 0 }, DEFAULT_PATH.rotationStep),
    rateHz: c.number(s, 'rate_hz', 'path.rate_hz', { gt: 0 }, DEFAULT_PATH.rateHz),
  };
}

function readTcpSpeed(c: Checker, raw: Obj): TcpSpeedLimits {
  const s = c.section(raw, 'tcp_speed', '', false) ?? {};
  c.knownKeys(s, ['linear_m_s', 'angular_rad_s'], 'tcp_speed.');
  return {
    linear: c.number(s, 'linear_m_s', 'tcp_speed.linear_m_s', { gt: 0 }, DEFAULT_TCP_SPEED.linear),
    angular: c.number(s, 'angular_rad_s', 'tcp_speed.angular_rad_s', { gt: 0 }, DEFAULT_TCP_SPEED.angular),
  };
}

function readSettle(c: Checker, raw: Obj): SettleCriteria {
  const s = c.section(raw, 'settle', '', false) ?? {};
  const d = DEFAULT_SETTLE;
  c.knownKeys(
    s,
    ['position_tol_rad', 'velocity_tol_rad_s', 'samples', 'min_window_s', 'span_rad', 'timeout_s'],
    'settle.',
  );
  return {
    positionTolerance: c.number(s, 'position_tol_rad', 'settle.position_tol_rad', { gt: 0 }, d.positionTolerance),
    velocityTolerance: c.number(s, 'velocity_tol_rad_s', 'settle.velocity_tol_rad_s', { gt: 0 }, d.velocityTolerance),
    samples: c.number(s, 'samples', 'settle.samples', { integer: true, min: 2 }, d.samples),
    minWindow: c.number(s, 'min_window_s', 'settle.min_window_s', { gt: 0 }, d.minWindow),
    span: c.number(s, 'span_rad', 'settle.span_rad', { gt: 0 }, d.span),
    timeout: c.number(s, 'timeout_s', 'settle.timeout_s', { gt: 0 }, d.timeout),
  };
}

/** `home: [q...]` within the limits; default: 0 clamped into each joint's range. */
function readHome(c: Checker, raw: Obj, joints: JointDescription[]): number[] {
  const clamp = (j: JointDescription) => Math.min(Math.max(0, j.limits.lower), j.limits.upper);
  const v = raw.home;
  if (v === undefined) return joints.map(clamp);
  if (!Array.isArray(v) || v.length !== joints.length) {
    c.issue('home', v, `must be a list of ${joints.length} joint positions (one per joint)`);
    return joints.map(clamp);
  }
  return joints.map((j, i) => {
    const q = c.checkNumber(v[i], `home[${i}]`, {}, j.name);
    if (q < j.limits.lower || q > j.limits.upper)
      c.issue(`home[${i}]`, q, `must be within the joint limits [${j.limits.lower}, ${j.limits.upper}]`, j.name);
    return q;
  });
}

function readGripper(c: Checker, raw: Obj): GripperRange | undefined {
  const s = c.section(raw, 'gripper', '', false);
  if (!s) return undefined;
  c.knownKeys(s, ['min', 'max', 'unit', 'jaw'], 'gripper.');
  const g: GripperRange = {
    min: c.number(s, 'min', 'gripper.min', {}),
    max: c.number(s, 'max', 'gripper.max', {}),
    unit: c.oneOf(s, 'unit', 'gripper.unit', ['m', 'rad', 'normalized'] as const),
  };
  if (g.min >= g.max) c.issue('gripper.max', g.max, `must be > gripper.min (${g.min})`);
  const jaw = readJaw(c, s);
  if (jaw) g.jaw = jaw;
  return g;
}

/** `gripper.jaw`: {open_width_m, depth_m, thickness_m, axis: x|y}, all lengths > 0. */
function readJaw(c: Checker, gripper: Obj): Jaw | undefined {
  const s = c.section(gripper, 'jaw', 'gripper.', false);
  if (!s) return undefined;
  c.knownKeys(s, ['open_width_m', 'depth_m', 'thickness_m', 'axis'], 'gripper.jaw.');
  return {
    openWidth: c.number(s, 'open_width_m', 'gripper.jaw.open_width_m', { gt: 0 }),
    depth: c.number(s, 'depth_m', 'gripper.jaw.depth_m', { gt: 0 }),
    thickness: c.number(s, 'thickness_m', 'gripper.jaw.thickness_m', { gt: 0 }),
    axis: c.oneOf(s, 'axis', 'gripper.jaw.axis', ['x', 'y'] as const),
  };
}

/** `capsules`: a list of {link, radius, a, b}, or `urdf` for capsules bounding the URDF's collision shapes. */
function readCapsules(c: Checker, raw: Obj, links: Set<string>, urdfText?: string): CapsuleSpec[] {
  if (raw.capsules === 'urdf') {
    if (urdfText === undefined) {
      // A URDF that failed to load has its own issue already.
      const kin = raw.kinematics;
      if (!isRecord(kin) || kin.type !== 'urdf') c.issue('capsules', 'urdf', 'needs kinematics.type urdf');
      return [];
    }
    const r = urdfCollisionCapsules(urdfText, links);
    if (!r.ok) for (const e of r.errors) c.issue('capsules', 'urdf', e);
    return r.ok ? r.capsules : [];
  }
  const list = raw.capsules ?? [];
  if (!Array.isArray(list)) {
    c.issue('capsules', list, 'must be a list');
    return [];
  }
  return list.flatMap((item, i) => {
    const q = `capsules[${i}]`;
    if (!isRecord(item)) {
      c.issue(q, item, 'must be a mapping');
      return [];
    }
    c.knownKeys(item, ['link', 'radius', 'a', 'b'], `${q}.`);
    const link = c.string(item, 'link', `${q}.link`);
    if (link && !links.has(link)) c.issue(`${q}.link`, link, `names no link of the chain (${[...links].join(', ')})`);
    return [
      {
        link,
        radius: c.number(item, 'radius', `${q}.radius`, { gt: 0 }),
        a: c.triple(item, 'a', `${q}.a`),
        b: c.triple(item, 'b', `${q}.b`),
      },
    ];
  });
}

function readIgnorePairs(c: Checker, raw: Obj, links: Set<string>): [string, string][] {
  const list = raw.self_collision_ignore ?? [];
  const ok =
    Array.isArray(list) &&
    list.every((p) => Array.isArray(p) && p.length === 2 && p.every((l) => typeof l === 'string' && links.has(l)));
  if (!ok) {
    c.issue('self_collision_ignore', list, 'must be a list of [link, link] pairs naming links of the chain');
    return [];
  }
  return list as [string, string][];
}

export function readBox(c: Checker, raw: Obj, key: string): Box | undefined {
  const s = c.section(raw, key, '', true);
  if (!s) return undefined;
  c.knownKeys(s, ['min', 'max'], `${key}.`);
  const box: Box = { min: c.triple(s, 'min', `${key}.min`), max: c.triple(s, 'max', `${key}.max`) };
  if (![0, 1, 2].every((i) => box.min[i] < box.max[i]))
    c.issue(`${key}.max`, box.max, `must exceed ${key}.min on every axis`);
  return box;
}

export function readPlane(c: Checker, raw: Obj, key: string): Plane | undefined {
  const s = c.section(raw, key, '', true);
  if (!s) return undefined;
  c.knownKeys(s, ['normal', 'offset_m'], `${key}.`);
  const n = c.triple(s, 'normal', `${key}.normal`);
  const len = Math.hypot(n[0], n[1], n[2]);
  if (!(len > 1e-9)) c.issue(`${key}.normal`, n, 'must be a non-zero vector');
  const normal: Triple = [n[0] / len, n[1] / len, n[2] / len];
  return { normal, offset: c.number(s, 'offset_m', `${key}.offset_m`, {}, 0) };
}
