// Request validation before any planning: arms known, joint vectors of the right size and
// finite, joint goals inside the position limits, Cartesian targets finite with a unit
// quaternion (norm in [0.99, 1.01], then normalised) and inside the workspace and above the table.
import { type PoseTarget, checkPoseTarget } from '../cartesian-path.js';
import { pointOutside } from '../../safety/trajectory-check.js';
import type { CompiledArm, CompiledSetup } from './compiled.js';
import type { PlanCode, PlanFailure } from './types.js';

export function failure(
  code: PlanCode,
  message: string,
  fields: Omit<PlanFailure, 'ok' | 'code' | 'message'> = {},
): PlanFailure {
  return { ok: false, code, message, ...fields };
}

export function isFailure<T>(x: T | PlanFailure): x is PlanFailure {
  return typeof x === 'object' && x !== null && (x as PlanFailure).ok === false;
}

/** Every key of `record` must name an arm. */
export function checkArmNames(
  setup: CompiledSetup,
  record: object | undefined,
  field: string,
): PlanFailure | undefined {
  if (record === undefined) return undefined;
  if (typeof record !== 'object' || record === null)
    return failure('invalid-request', `${field} must be an object keyed by arm name`);
  for (const key of Object.keys(record)) {
    if (!setup.arms.some((a) => a.name === key)) {
      return failure(
        'unknown-arm',
        `${field}: unknown arm "${key}"; "${setup.name}" has ${setup.arms.map((a) => `"${a.name}"`).join(', ')}`,
        { arm: key },
      );
    }
  }
  return undefined;
}

/** A joint vector (positions, velocities, …) of one arm: dof finite numbers. */
export function jointVector(arm: CompiledArm, value: unknown, field: string): Float64Array | PlanFailure {
  const v = value as ArrayLike<unknown> | undefined;
  if (v === undefined || v === null || typeof v !== 'object' || typeof v.length !== 'number') {
    return failure('invalid-request', `${field}: arm "${arm.name}" needs ${arm.dof} joint values`, { arm: arm.name });
  }
  if (v.length !== arm.dof)
    return failure('invalid-request', `${field}: arm "${arm.name}" has ${arm.dof} joints, got ${v.length} values`, {
      arm: arm.name,
    });
  const out = new Float64Array(arm.dof);
  for (let j = 0; j < arm.dof; j++) {
    const x = v[j];
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      const joint = arm.safety.chain.jointNames[j];
      return failure(
        'non-finite',
        `${field}: arm "${arm.name}" joint "${joint}" must be a finite number, got ${String(x)}`,
        { arm: arm.name, joint },
      );
    }
    out[j] = x;
  }
  return out;
}

/** One joint vector per arm; every arm must be given. */
export function everyArm(
  setup: CompiledSetup,
  record: Readonly<Record<string, unknown>> | undefined,
  field: string,
  pick: (v: unknown) => unknown = (v) => v,
): Float64Array[] | PlanFailure {
  const bad = checkArmNames(setup, record, field);
  if (bad) return bad;
  const out: Float64Array[] = [];
  for (const arm of setup.arms) {
    const v = record?.[arm.name];
    if (v === undefined)
      return failure('invalid-request', `${field}: arm "${arm.name}" is missing (every arm's joints are needed)`, {
        arm: arm.name,
      });
    const q = jointVector(arm, pick(v), field);
    if (isFailure(q)) return q;
    out.push(q);
  }
  return out;
}

/** Joint goals per arm (null or absent: the arm's `hold` vector), inside the position limits. */
export function jointGoals(
  setup: CompiledSetup,
  goal: Readonly<Record<string, unknown>> | undefined,
  hold: (Float64Array | null)[],
  field = 'goal',
): (Float64Array | null)[] | PlanFailure {
  const bad = checkArmNames(setup, goal, field);
  if (bad) return bad;
  const out: (Float64Array | null)[] = [];
  for (const [a, arm] of setup.arms.entries()) {
    const v = goal?.[arm.name];
    if (v === undefined || v === null) {
      out.push(hold[a]);
      continue;
    }
    const q = jointVector(arm, v, field);
    if (isFailure(q)) return q;
    for (let j = 0; j < arm.dof; j++) {
      const { lower, upper } = arm.safety.limits[j];
      if (!(q[j] >= lower && q[j] <= upper)) {
        const joint = arm.safety.chain.jointNames[j];
        return failure(
          'outside-joint-limits',
          `${field}: arm "${arm.name}" joint "${joint}" = ${q[j]} is outside its limits [${lower}, ${upper}]`,
          {
            arm: arm.name,
            joint,
            value: q[j],
            limit: q[j] < lower ? lower : upper,
          },
        );
      }
    }
    out.push(q);
  }
  return out;
}

/** Cartesian targets: per arm a list of `steps` entries (null = hold), checked and in the workspace. */
export function cartesianTargets(
  setup: CompiledSetup,
  targets: CartesianTargets | undefined,
): { steps: number; perArm: (PoseTarget | null)[][] } | PlanFailure {
  if (targets === undefined || targets === null)
    return failure('invalid-request', 'targets: required, an object keyed by arm name');
  const bad = checkArmNames(setup, targets, 'targets');
  if (bad) return bad;
  let steps = -1;
  for (const arm of setup.arms) {
    const list = targets[arm.name];
    if (list === undefined || list === null) continue;
    if (!Array.isArray(list))
      return failure('invalid-request', `targets: arm "${arm.name}" needs a list of poses`, { arm: arm.name });
    if (steps >= 0 && list.length !== steps) {
      return failure(
        'invalid-request',
        `targets: every arm's list must have the same length (step i of all arms runs together); arm "${arm.name}" has ${list.length}, expected ${steps}`,
        { arm: arm.name },
      );
    }
    steps = list.length;
  }
  if (steps <= 0) return failure('invalid-request', 'targets: no target given for any arm');
  const perArm: (PoseTarget | null)[][] = [];
  for (const arm of setup.arms) {
    const list = targets[arm.name] ?? new Array<null>(steps).fill(null);
    const checked: (PoseTarget | null)[] = [];
    for (let k = 0; k < steps; k++) {
      const t = list[k];
      if (t === null || t === undefined) {
        checked.push(null);
        continue;
      }
      const where = { arm: arm.name, target: k };
      if (typeof t !== 'object' || !isArrayLike(t.position) || !isArrayLike(t.orientation)) {
        return failure(
          'invalid-request',
          `targets: arm "${arm.name}" target ${k} needs position [x, y, z] and orientation [x, y, z, w]`,
          where,
        );
      }
      const c = checkPoseTarget(t);
      if (c.code !== 'ok') return failure(c.code, `targets: arm "${arm.name}" target ${k}: ${c.message}`, where);
      const p = t.position;
      const out = pointOutside(setup.envelope, p[0], p[1], p[2], 0);
      if (out) {
        const what = out.code === 'workspace' ? 'outside the workspace box' : 'below the table plane';
        return failure(
          'outside-workspace',
          `targets: arm "${arm.name}" target ${k} at (${fmt(p[0])}, ${fmt(p[1])}, ${fmt(p[2])}) m is ${(out.distance * 1000).toFixed(1)} mm ${what}`,
          {
            ...where,
            distance: out.distance,
          },
        );
      }
      checked.push({ position: [p[0], p[1], p[2]], orientation: c.orientation });
    }
    perArm.push(checked);
  }
  if (perArm.every((list) => list.every((t) => t === null)))
    return failure('invalid-request', 'targets: no target given for any arm (every entry is null)');
  return { steps, perArm };
}

type CartesianTargets = Readonly<Record<string, readonly (PoseTarget | null)[] | undefined | null>>;

function isArrayLike(x: unknown): x is ArrayLike<number> {
  return typeof x === 'object' && x !== null && typeof (x as ArrayLike<number>).length === 'number';
}

function fmt(x: number): string {
  return x.toFixed(4);
}
