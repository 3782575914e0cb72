// The checks a controller makes before it accepts a trajectory, in the order the protocol
// specifies; each failure is a rejection reason code plus a detail a person can act on.
import type { TrajectoryMsg } from '../link/protocol.js';
import type { SimArm } from './robot.js';

export interface Rejection {
  reason: string;
  detail: string;
}

/** Joint names must be the arm's, in the arm's order. */
export function checkJoints(m: TrajectoryMsg, arm: SimArm): Rejection | null {
  const want = arm.joints.map((j) => j.name);
  if (m.joints.length === want.length && m.joints.every((n, i) => n === want[i])) return null;
  return {
    reason: 'joint_mismatch',
    detail: `joints must be [${want.join(', ')}] in this order (got [${m.joints.join(', ')}])`,
  };
}

/** Every point within the joint position limits. */
export function checkLimits(m: TrajectoryMsg, arm: SimArm): Rejection | null {
  for (let i = 0; i < m.points.length; i++) {
    const q = m.points[i]!.q;
    for (let j = 0; j < q.length; j++) {
      const { name, lower, upper } = arm.joints[j]!;
      if (q[j]! < lower || q[j]! > upper) {
        return {
          reason: 'joint_limit',
          detail: `points[${i}].q[${j}] = ${q[j]} is outside [${lower}, ${upper}] (joint ${name})`,
        };
      }
    }
  }
  return null;
}

/** The first point must be where the arm's reference will be at the start, within `tol` rad. */
export function checkStart(m: TrajectoryMsg, reference: readonly number[], tol: number): Rejection | null {
  const q0 = m.points[0]!.q;
  for (let j = 0; j < q0.length; j++) {
    const err = Math.abs(q0[j]! - reference[j]!);
    if (err > tol) {
      return {
        reason: 'start_mismatch',
        detail: `points[0].q[${j}] = ${q0[j]} is ${err.toFixed(4)} rad from the arm's position ${reference[j]!.toFixed(4)} (tolerance ${tol})`,
      };
    }
  }
  return null;
}
