// Independent checks of planner output, for the planner suites: rates from plain backward
// differences on the uniform tick grid, rest at the end, derivative consistency, and capsule
// clearances from densely sampled points (not the closed-form segment distance under test).
import assert from 'node:assert/strict';
import type { RobotDescription, SetupDescription } from '../../../../robot/description/types.js';
import { forwardKinematics } from '../../../../robot/kinematics/forward.js';
import type { PlanOk, PlanResult } from '../../../../robot/motion/planner/planner.js';
import {
  type ArmSafetyModel,
  type SafetyEnvelope,
  robotSafety,
  setupSafety,
} from '../../../../robot/safety/trajectory-check.js';

export interface Models {
  arms: ArmSafetyModel[];
  envelope: SafetyEnvelope;
}

export function models(description: RobotDescription | SetupDescription): Models {
  return 'arms' in description ? setupSafety(description) : robotSafety(description);
}

export function ok(r: PlanResult, what: string): PlanOk {
  assert.ok(r.ok, `${what}: ${r.ok ? '' : `${r.code}: ${r.message}`}`);
  return r;
}

/**
 * Every property the references must have, or '' : one time grid t_i = i/rate for all arms,
 * the start at `start`, positions within limits, |Δq|·rate, |Δ²q|·rate², |Δ³q|·rate³ within the
 * velocity, acceleration and jerk limits, the hold at rest (identical samples, dq = ddq = 0),
 * and dq, ddq matching central differences of q and dq.
 */
export function referencesViolation(
  plan: PlanOk,
  m: Models,
  hold: number,
  start?: Record<string, ArrayLike<number>>,
): string {
  const rate = plan.arms[0].rate;
  const count = plan.arms[0].count;
  const holdTicks = Math.round(hold * rate);
  if (plan.duration < 0 || !(count >= Math.ceil(plan.duration * rate - 1e-9) + 1 + holdTicks))
    return `count ${count} too small for ${plan.duration} s + hold`;
  for (const [a, ref] of plan.arms.entries()) {
    const arm = m.arms[a];
    const n = arm.chain.dof;
    if (ref.arm !== arm.name || ref.count !== count || ref.rate !== rate) return `arm ${a}: name, count or rate differ`;
    if (ref.joints.join() !== arm.chain.jointNames.join()) return `arm ${ref.arm}: joint names ${ref.joints}`;
    for (let i = 0; i < count; i++) {
      if (ref.t[i] !== i / rate) return `arm ${ref.arm}: t[${i}] = ${ref.t[i]}, not ${i}/${rate}`;
      if (i > 0 && !(ref.t[i] > ref.t[i - 1])) return `arm ${ref.arm}: time not increasing at ${i}`;
    }
    const q = ref.q;
    if (start)
      for (let j = 0; j < n; j++)
        if (q[j] !== start[ref.arm][j]) return `arm ${ref.arm} joint ${j} starts at ${q[j]}, not ${start[ref.arm][j]}`;
    for (let j = 0; j < n; j++) {
      const lim = arm.limits[j];
      const x = (i: number): number => q[i * n + j];
      for (let i = 0; i < count; i++) {
        const where = `arm ${ref.arm} joint ${arm.chain.jointNames[j]} tick ${i}`;
        if (!(x(i) >= lim.lower - 1e-9 && x(i) <= lim.upper + 1e-9))
          return `${where}: position ${x(i)} outside [${lim.lower}, ${lim.upper}]`;
        const slack = 1 + 1e-6;
        if (i >= 1 && Math.abs(x(i) - x(i - 1)) * rate > lim.velocity * slack)
          return `${where}: velocity ${(x(i) - x(i - 1)) * rate} > ${lim.velocity}`;
        if (i >= 2 && Math.abs(x(i) - 2 * x(i - 1) + x(i - 2)) * rate ** 2 > lim.acceleration * slack)
          return `${where}: acceleration > ${lim.acceleration}`;
        if (i >= 3 && Math.abs(x(i) - 3 * x(i - 1) + 3 * x(i - 2) - x(i - 3)) * rate ** 3 > lim.jerk * slack)
          return `${where}: jerk > ${lim.jerk}`;
        // Central differences: O(dt²·jerk) for dq, O(dt·jerk) for ddq (jerk may jump).
        if (i >= 1 && i + 1 < count) {
          const v = (x(i + 1) - x(i - 1)) * (rate / 2);
          if (Math.abs(v - ref.dq[i * n + j]) > lim.jerk / rate ** 2 + 1e-9)
            return `${where}: dq ${ref.dq[i * n + j]} vs central difference ${v}`;
          const acc = (ref.dq[(i + 1) * n + j] - ref.dq[(i - 1) * n + j]) * (rate / 2);
          if (Math.abs(acc - ref.ddq[i * n + j]) > (2 * lim.jerk) / rate + 1e-9)
            return `${where}: ddq ${ref.ddq[i * n + j]} vs central difference ${acc}`;
        }
      }
      for (let i = count - 1 - holdTicks; i < count; i++) {
        if (x(i) !== x(count - 1) || ref.dq[i * n + j] !== 0 || ref.ddq[i * n + j] !== 0)
          return `arm ${ref.arm} joint ${j}: not at rest in the final hold (tick ${i})`;
      }
    }
  }
  return '';
}

/** FK of each arm's final reference against its last target (common frame), or ''. */
export function endsAtTargets(
  plan: PlanOk,
  m: Models,
  lastTargets: Record<string, { position: ArrayLike<number>; orientation: ArrayLike<number> } | null>,
  tolerance: { position: number; rotation: number },
): string {
  for (const [a, ref] of plan.arms.entries()) {
    const target = lastTargets[ref.arm];
    if (!target) continue;
    const n = m.arms[a].chain.dof;
    const T = forwardKinematics(m.arms[a].chain, ref.q.subarray((ref.count - 1) * n), new Float64Array(12));
    const dp = Math.hypot(T[3] - target.position[0], T[7] - target.position[1], T[11] - target.position[2]);
    // Angle between the orientation of T and the target quaternion, from the rotation matrix.
    const [x, y, z, w] = Array.from(target.orientation);
    const R = [
      1 - 2 * (y * y + z * z),
      2 * (x * y - z * w),
      2 * (x * z + y * w),
      2 * (x * y + z * w),
      1 - 2 * (x * x + z * z),
      2 * (y * z - x * w),
      2 * (x * z - y * w),
      2 * (y * z + x * w),
      1 - 2 * (x * x + y * y),
    ];
    const Tr = [T[0], T[1], T[2], T[4], T[5], T[6], T[8], T[9], T[10]];
    let trace = 0;
    for (let i = 0; i < 3; i++) for (let k = 0; k < 3; k++) trace += R[i * 3 + k] * Tr[i * 3 + k];
    const angle = Math.acos(Math.max(-1, Math.min(1, (trace - 1) / 2)));
    if (dp > tolerance.position || angle > tolerance.rotation)
      return `arm ${ref.arm} ends ${(dp * 1000).toFixed(3)} mm, ${((angle * 180) / Math.PI).toFixed(3)}° from its last target`;
  }
  return '';
}

const POINTS = 16;

/** Smallest distance between capsule surfaces from POINTS points along each axis (≥ the true distance). */
function sampledDistance(w1: Float64Array, i: number, r1: number, w2: Float64Array, k: number, r2: number): number {
  let best = Infinity;
  for (let u = 0; u < POINTS; u++) {
    const s = u / (POINTS - 1);
    const ax = w1[i] + s * (w1[i + 3] - w1[i]),
      ay = w1[i + 1] + s * (w1[i + 4] - w1[i + 1]),
      az = w1[i + 2] + s * (w1[i + 5] - w1[i + 2]);
    for (let v = 0; v < POINTS; v++) {
      const t = v / (POINTS - 1);
      const bx = w2[k] + t * (w2[k + 3] - w2[k]),
        by = w2[k + 1] + t * (w2[k + 4] - w2[k + 1]),
        bz = w2[k + 2] + t * (w2[k + 5] - w2[k + 2]);
      best = Math.min(best, Math.hypot(ax - bx, ay - by, az - bz));
    }
  }
  return best - r1 - r2;
}

/**
 * Arm–arm capsule distances at every `stride`-th tick (and the last) from sampled points; the
 * smallest, with where. Sampling overestimates, so a value below the clearance is a real violation.
 */
export function sampledArmDistance(plan: PlanOk, m: Models, stride: number): { distance: number; tick: number } {
  const frames = m.arms.map((arm) => new Float64Array((arm.chain.dof + 1) * 12));
  const tcp = new Float64Array(12);
  let best = { distance: Infinity, tick: -1 };
  const count = plan.arms[0].count;
  const ticks = Array.from({ length: Math.ceil(count / stride) }, (_, k) => k * stride).concat(count - 1);
  for (const i of ticks) {
    m.arms.forEach((arm, a) => {
      const n = arm.chain.dof;
      forwardKinematics(arm.chain, plan.arms[a].q.subarray(i * n, (i + 1) * n), tcp, frames[a]);
      arm.capsules.place(frames[a]);
    });
    for (let a = 0; a < m.arms.length; a++) {
      for (let b = a + 1; b < m.arms.length; b++) {
        const ca = m.arms[a].capsules,
          cb = m.arms[b].capsules;
        for (let x = 0; x < ca.count; x++) {
          for (let y = 0; y < cb.count; y++) {
            const d = sampledDistance(ca.world, x * 6, ca.radius[x], cb.world, y * 6, cb.radius[y]);
            if (d < best.distance) best = { distance: d, tick: i };
          }
        }
      }
    }
  }
  return best;
}
