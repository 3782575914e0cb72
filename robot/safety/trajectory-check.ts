// Safety checks on the final sampled joint trajectories (what is sent is what is checked), for
// one arm or several synchronised arms: joint position limits; velocity, acceleration and jerk
// from the divided differences of the timed samples (robot/math/divided-differences.ts, the same
// definition time scaling uses) and of the sent dq, ddq when given (sent-rates.ts); workspace box and table plane for the TCP and every link capsule;
// self-collision of non-adjacent link capsules; arm-against-arm capsule distance with a minimum
// clearance; static obstacles of the setup for the TCP and every link capsule, with their own
// clearance. Sample 0 is the measured state: a joint-limit, workspace, table, self or arm-arm
// violation there is tolerated while the path makes it no worse (start-allowance.ts).
// Independent of any model; returns the earliest violation.
import { apart } from '../common/format.js';
import type {
  Box,
  HeldObject,
  Jaw,
  JointLimits,
  Obstacle,
  Plane,
  RobotDescription,
  SetupDescription,
} from '../description/types.js';
import type { Transform } from '../math/transform.js';
import { KinematicChain } from '../kinematics/chain.js';
import { forwardKinematics } from '../kinematics/forward.js';
import { LinkCapsules, capsulesApart } from './link-capsules.js';
import { placeHeld } from './held-object.js';
import { boundaryHit, heldArmDistance, heldOutside, heldTableDepth, obstacleHit } from './scene-checks.js';
import { jointLimitViolation, startNote } from './joint-limits.js';
import { START_DEPTH_LIMIT, StartAllowance } from './start-allowance.js';
import { type HeldBody, type SceneBody, heldBodyDepth, heldBodyHit, objectHit } from './scene-bodies.js';
import { segmentDistance } from './segment-distance.js';
import { sourceText } from './sent-rates.js';

/** count samples at strictly increasing times (s); q is count × dof, row-major. */
export interface JointTrajectory {
  times: ArrayLike<number>;
  q: ArrayLike<number>;
  /** The velocities and accelerations sent with q (count × dof), checked against the limits (sent-rates.ts). */
  dq?: ArrayLike<number>;
  ddq?: ArrayLike<number>;
}

/** Workspace and table in the arms' common output frame, and the arm–arm clearance (m). */
export interface SafetyEnvelope {
  workspace: Box;
  table: Plane;
  minClearance: number;
  /** Static obstacles in the same frame, and the smallest allowed distance to them (m). */
  obstacles?: Obstacle[];
  obstacleClearance?: number;
  /** Objects of a simulated scene nobody holds (set per plan from its ground truth). */
  objects?: SceneBody[];
  /** The scene's grasp tolerance (m): slack of the jaw channel that lets the gripper enclose an object. */
  graspTolerance?: number;
}

/**
 * A violation that concerns the start: `bound` when sample 0 is already further outside than a
 * path may start (the arm needs an operator); `tolerated` when the item started outside and the
 * path takes it further out than the depth tolerated until then.
 */
export type StartNote = { bound: number } | { tolerated: number };

export type SafetyViolation =
  | { code: 'invalid-trajectory'; arm: string; message: string }
  | {
      code: 'joint-position' | 'joint-velocity' | 'joint-acceleration' | 'joint-jerk';
      arm: string;
      joint: string;
      sample: number;
      value: number;
      limit: number;
      start?: StartNote;
      /** Where a rate came from: the sent dq, ddq or differences of ddq; absent: divided differences of q. */
      source?: 'dq' | 'ddq' | 'ddq-difference';
    }
  /** distance: how far the TCP or capsule reaches past the boundary (m). */
  | { code: 'workspace' | 'table'; arm: string; link: string; sample: number; distance: number; start?: StartNote }
  /** distance: capsule surface distance, ≤ 0 when they overlap (m). */
  | {
      code: 'self-collision';
      arm: string;
      links: [string, string];
      sample: number;
      distance: number;
      start?: StartNote;
    }
  /** distance: surface distance of the TCP or capsule to the obstacle, ≤ 0 when they overlap (m). */
  | {
      code: 'obstacle';
      arm: string;
      link: string;
      obstacle: string;
      sample: number;
      distance: number;
      clearance: number;
    }
  /** distance: surface distance of a capsule or held object to a scene object, < 0 inside it (m). */
  | {
      code: 'object';
      arm: string;
      link: string;
      object: string;
      sample: number;
      distance: number;
      clearance: number;
    }
  | {
      code: 'arm-collision';
      arms: [string, string];
      links: [string, string];
      sample: number;
      distance: number;
      clearance: number;
      start?: StartNote;
    };

export type SafetyResult =
  | { ok: true; minSelfDistance: number; minArmDistance: number }
  | { ok: false; violation: SafetyViolation; message: string };

/** What the checks need of one arm, compiled once. */
export class ArmSafetyModel {
  readonly chain: KinematicChain;
  readonly limits: JointLimits[];
  readonly capsules: LinkCapsules;
  /** Capsule index pairs checked for self-collision (different, non-adjacent frames, not ignored). */
  readonly selfPairs: [number, number][];
  readonly jaw: Jaw | null;
  /** How far outside a joint limit a path may start (rad or m): the settle tolerance. */
  readonly startTolerance: number;
  /** The gripper's opening during the plan (m; set per plan from the measured gripper). */
  opening = 0;
  /** The scene object the gripper holds (set per plan); `held` is then its bounding capsule. */
  heldBody?: HeldBody;

  constructor(
    readonly name: string,
    robot: RobotDescription,
    base?: Transform,
    /** An object held at the TCP, checked like a link (not against the arm's own links); set per plan. */
    public held?: HeldObject,
    /** Whether `held` is a grasped object's envelope (set per plan): it may start inside the table. */
    public grasped = false,
  ) {
    this.chain = new KinematicChain(robot, { base });
    this.limits = robot.joints.map((j) => j.limits);
    this.jaw = robot.gripper?.jaw ?? null;
    this.startTolerance = robot.settle.positionTolerance;
    this.capsules = new LinkCapsules(this.chain, robot.capsules);
    const ignored = new Set(robot.selfCollisionIgnore.flatMap(([a, b]) => [`${a}\0${b}`, `${b}\0${a}`]));
    const c = this.capsules;
    this.selfPairs = [];
    for (let i = 0; i < c.count; i++) {
      for (let j = i + 1; j < c.count; j++) {
        if (Math.abs(c.frame[i] - c.frame[j]) > 1 && !ignored.has(`${c.links[i]}\0${c.links[j]}`))
          this.selfPairs.push([i, j]);
      }
    }
  }
}

export function checkTrajectories(
  arms: ArmSafetyModel[],
  trajectories: JointTrajectory[],
  env: SafetyEnvelope,
): SafetyResult {
  if (arms.length !== trajectories.length || arms.length === 0) {
    return fail({
      code: 'invalid-trajectory',
      arm: '',
      message: `${arms.length} arms but ${trajectories.length} trajectories`,
    });
  }
  const count = trajectories[0].times.length;
  for (let a = 0; a < arms.length; a++) {
    const bad = validate(arms[a], trajectories[a], trajectories[0].times);
    if (bad) return fail({ code: 'invalid-trajectory', arm: arms[a].name, message: bad });
  }
  // Each arm's earliest joint-limit violation, reported when the sample loop reaches it.
  const jointViolations = arms.map((arm, a) => jointLimitViolation(arm, trajectories[a]));
  const frames = arms.map((arm) => new Float64Array((arm.chain.dof + 1) * 12));
  const tcp = new Float64Array(12);
  const heldWorld = arms.map(() => new Float64Array(6));
  // How deep each grasped object's envelope starts below the table (the object rested on it): never deeper.
  const heldStart = arms.map(() => 0);
  // What each check tolerates of a violation present at sample 0 (start-allowance.ts).
  const boxAllow = arms.map((arm) => new StartAllowance(2 * (arm.capsules.count + 1)));
  const selfAllow = arms.map((arm) => new StartAllowance(arm.selfPairs.length));
  const armAllow = arms.map((a) => arms.map((b) => new StartAllowance(a.capsules.count * b.capsules.count + 1)));
  let minSelf = Infinity,
    minArm = Infinity;
  for (let k = 0; k < count; k++) {
    for (let a = 0; a < arms.length; a++) {
      const arm = arms[a];
      const q = trajectories[a].q;
      const n = arm.chain.dof;
      const v = jointViolations[a];
      if (v?.sample === k) return fail(v);
      forwardKinematics(arm.chain, q, tcp, frames[a], k * n);
      arm.capsules.place(frames[a]);
      const outside = boundaryHit(arm, tcp, env, k, boxAllow[a]);
      if (outside) return fail(outside);
      const c = arm.capsules;
      const hit = obstacleHit(arm, tcp, env, k) ?? objectHit(arm, tcp, env, k);
      if (hit) return fail(hit);
      if (arm.held) {
        placeHeld(arm.held, tcp, heldWorld[a]);
        if (k === 0 && (arm.grasped || arm.heldBody))
          heldStart[a] = arm.heldBody
            ? heldBodyDepth(arm.heldBody, tcp, env)
            : heldTableDepth(arm.held, heldWorld[a], env);
        const v =
          heldOutside(arm, arm.held, heldWorld[a], tcp, env, k, heldStart[a]) ??
          heldBodyHit(arm, tcp, heldWorld[a], env, k);
        if (v) return fail(v);
      }
      // A pair provably farther apart than the minimum so far (and than touching: a tolerated
      // start overlap may have taken the minimum below 0) is clear and changes neither.
      const pairs = arm.selfPairs;
      const allow = selfAllow[a];
      for (let p = 0; p < pairs.length; p++) {
        const i = pairs[p][0],
          j = pairs[p][1];
        if (capsulesApart(c, i, c, j, Math.max(minSelf, 0))) {
          allow.clear(p);
          continue;
        }
        const d = segmentDistance(c.world, i * 6, i * 6 + 3, c.world, j * 6, j * 6 + 3) - c.radius[i] - c.radius[j];
        minSelf = Math.min(minSelf, d);
        const verdict = allow.admit(p, k, d <= 0, -d, START_DEPTH_LIMIT);
        if (verdict === 'worse' || verdict === 'beyond')
          return fail({
            code: 'self-collision',
            arm: arm.name,
            links: [c.links[i], c.links[j]],
            sample: k,
            distance: d,
            ...startNote(verdict, allow.allowed[p], START_DEPTH_LIMIT),
          });
      }
    }
    for (let a = 0; a < arms.length; a++) {
      for (let b = a + 1; b < arms.length; b++) {
        const ca = arms[a].capsules,
          cb = arms[b].capsules;
        const allow = armAllow[a][b];
        const clearance = env.minClearance;
        const judge = (item: number, links: [string, string], d: number): SafetyResult | undefined => {
          minArm = Math.min(minArm, d);
          const verdict = allow.admit(item, k, d < clearance, clearance - d, START_DEPTH_LIMIT);
          if (verdict === 'clear' || verdict === 'tolerated') return undefined;
          return fail({
            code: 'arm-collision',
            arms: [arms[a].name, arms[b].name],
            links,
            sample: k,
            distance: d,
            clearance,
            ...startNote(verdict, allow.allowed[item], START_DEPTH_LIMIT),
          });
        };
        for (let i = 0; i < ca.count; i++) {
          for (let j = 0; j < cb.count; j++) {
            if (capsulesApart(ca, i, cb, j, Math.max(minArm, clearance))) {
              allow.clear(i * cb.count + j);
              continue;
            }
            const d =
              segmentDistance(ca.world, i * 6, i * 6 + 3, cb.world, j * 6, j * 6 + 3) - ca.radius[i] - cb.radius[j];
            const bad = judge(i * cb.count + j, [ca.links[i], cb.links[j]], d);
            if (bad) return bad;
          }
        }
        if (arms[a].held || arms[b].held) {
          const { links, distance } = heldArmDistance(arms[a], heldWorld[a], arms[b], heldWorld[b]);
          const bad = judge(ca.count * cb.count, links, distance);
          if (bad) return bad;
        }
      }
    }
  }
  return { ok: true, minSelfDistance: minSelf, minArmDistance: minArm };
}

function validate(arm: ArmSafetyModel, t: JointTrajectory, reference: ArrayLike<number>): string | undefined {
  const count = t.times.length;
  if (count === 0) return 'no samples';
  if (t.q.length !== count * arm.chain.dof)
    return `q has ${t.q.length} values, expected ${count} samples × ${arm.chain.dof} joints`;
  for (let k = 0; k < count; k++) {
    if (!Number.isFinite(t.times[k]) || (k > 0 && !(t.times[k] > t.times[k - 1])))
      return `times must be finite and strictly increasing (sample ${k})`;
    if (t.times[k] !== reference[k])
      return `sample ${k} is at ${t.times[k]} s, the first arm's at ${reference[k]} s: arms must be synchronised`;
  }
  for (const [name, x] of [
    ['q', t.q],
    ['dq', t.dq],
    ['ddq', t.ddq],
  ] as const) {
    if (!x) continue;
    if (x.length !== count * arm.chain.dof)
      return `${name} has ${x.length} values, expected ${count} samples × ${arm.chain.dof} joints`;
    for (let i = 0; i < x.length; i++)
      if (!Number.isFinite(x[i])) return `${name} has a non-finite value at sample ${Math.floor(i / arm.chain.dof)}`;
  }
  return undefined;
}

/** Whether a ball of radius r at p leaves the workspace box or crosses the table plane. */
export function pointOutside(
  env: SafetyEnvelope,
  x: number,
  y: number,
  z: number,
  r: number,
): { code: 'workspace' | 'table'; distance: number } | undefined {
  const { min, max } = env.workspace;
  const out = Math.max(min[0] + r - x, x + r - max[0], min[1] + r - y, y + r - max[1], min[2] + r - z, z + r - max[2]);
  if (out > 0) return { code: 'workspace', distance: out };
  const n = env.table.normal;
  const below = env.table.offset + r - (n[0] * x + n[1] * y + n[2] * z);
  if (below > 0) return { code: 'table', distance: below };
  return undefined;
}

function fail(violation: SafetyViolation): SafetyResult {
  return { ok: false, violation, message: describeViolation(violation) };
}

/** How a message names a link: the TCP, a held object (heldLink) or a link. */
function part(link: string): string {
  if (link === 'tcp') return 'TCP';
  return link.startsWith('held:') ? `held object "${link.slice(5)}"` : `link "${link}"`;
}

/** A distance in mm with 1 decimal, more (up to 4) where that would read 0.0. */
function mm(d: number): string {
  let k = 1;
  while (k < 4 && Number((d * 1000).toFixed(k)) === 0) k++;
  return `${(d * 1000).toFixed(k)} mm`;
}

/** A joint position with the decimals (5 to 10) that tell it apart from the limit it passed. */
function position(value: number, limit: number): string {
  let k = 5;
  while (k < 10 && value.toFixed(k) === limit.toFixed(k)) k++;
  return value.toFixed(k);
}

/** What a message adds when the violation concerns the start (StartNote); unit 'rad' or 'mm'. */
function startText(start: StartNote | undefined, unit: 'rad' | 'mm'): string {
  if (!start) return '';
  const amount = (x: number) =>
    unit === 'mm' ? mm(x) : `${x < 1e-3 ? x.toExponential(1) : Number(x.toPrecision(3))} rad`;
  if ('bound' in start)
    return `; the arm starts there, more than the ${amount(start.bound)} a path may start past a limit: it is outside its limits and needs an operator to bring it back`;
  return ` (it started ${amount(start.tolerated)} past it: a path may start past a limit only if it never goes further)`;
}

export function describeViolation(v: SafetyViolation): string {
  const gap = (x: { distance: number; clearance: number }) => apart(x.distance, x.clearance, 1000, ' mm', 1);
  switch (v.code) {
    case 'invalid-trajectory':
      return `arm "${v.arm}": invalid trajectory: ${v.message}`;
    case 'joint-position':
      return `arm "${v.arm}" joint "${v.joint}" at sample ${v.sample}: position ${position(v.value, v.limit)} exceeds the limit ${v.limit}${startText(v.start, 'rad')}`;
    case 'joint-velocity':
    case 'joint-acceleration':
    case 'joint-jerk':
      return `arm "${v.arm}" joint "${v.joint}" at sample ${v.sample}: ${v.code.slice(6)}${sourceText(v.source, v.sample)} ${v.value.toPrecision(6)} exceeds the limit ${v.limit}`;
    case 'workspace':
      return `arm "${v.arm}" ${part(v.link)} at sample ${v.sample}: ${mm(v.distance)} outside the workspace box${startText(v.start, 'mm')}`;
    case 'table':
      return `arm "${v.arm}" ${part(v.link)} at sample ${v.sample}: ${mm(v.distance)} below the table plane${startText(v.start, 'mm')}`;
    case 'obstacle':
      return `arm "${v.arm}" ${part(v.link)} at sample ${v.sample} is ${gap(v)[0]} from obstacle "${v.obstacle}", below the clearance ${gap(v)[1]}`;
    case 'object':
      return `arm "${v.arm}" ${part(v.link)} at sample ${v.sample} is ${gap(v)[0]} from object "${v.object}" (inside it), below the clearance ${gap(v)[1]}`;
    case 'self-collision':
      return `arm "${v.arm}" links "${v.links[0]}" and "${v.links[1]}" collide at sample ${v.sample} (distance ${mm(v.distance)})${startText(v.start, 'mm')}`;
    case 'arm-collision':
      return `arm "${v.arms[0]}" ${part(v.links[0])} and arm "${v.arms[1]}" ${part(v.links[1])} are ${gap(v)[0]} apart at sample ${v.sample}, below the clearance ${gap(v)[1]}${startText(v.start, 'mm')}`;
  }
}

/** Safety model of one robot in its own base frame, with its own workspace and table. */
export function robotSafety(robot: RobotDescription): { arms: ArmSafetyModel[]; envelope: SafetyEnvelope } {
  return {
    arms: [new ArmSafetyModel(robot.name, robot)],
    envelope: { workspace: robot.workspace, table: robot.table, minClearance: 0 },
  };
}

/** Safety model of a multi-arm setup in the world frame, with the setup's workspace, table and clearance. */
export function setupSafety(setup: SetupDescription): { arms: ArmSafetyModel[]; envelope: SafetyEnvelope } {
  return {
    arms: setup.arms.map((a) => new ArmSafetyModel(a.name, a.robot, a.base, a.held)),
    envelope: {
      workspace: setup.workspace,
      table: setup.table,
      minClearance: setup.minClearance,
      obstacles: setup.obstacles,
      obstacleClearance: setup.obstacleClearance,
    },
  };
}
