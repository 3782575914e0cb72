// Pose error between a target and a current TCP pose, both in the same (base or world) frame:
// position difference and the rotation vector of R_target·Rᵀ (the rotation still to apply).
import { rotationVector, type Transform } from '../math/transform.js';

const scratchR = new Float64Array(12);
const scratchW = new Float64Array(3);

/** e[0..2] = p_t − p, e[3..5] = rotation vector of R_t·Rᵀ (rad, angle ≤ π). */
export function poseErrorVector(target: Transform, current: Transform, e: Float64Array): Float64Array {
  e[0] = target[3] - current[3];
  e[1] = target[7] - current[7];
  e[2] = target[11] - current[11];
  // R_err(i,j) = Σ_k Rt(i,k)·R(j,k)
  for (let i = 0; i < 3; i++) {
    const ti = 4 * i;
    for (let j = 0; j < 3; j++) {
      const cj = 4 * j;
      scratchR[ti + j] = target[ti] * current[cj] + target[ti + 1] * current[cj + 1] + target[ti + 2] * current[cj + 2];
    }
  }
  rotationVector(scratchW, scratchR);
  e[3] = scratchW[0];
  e[4] = scratchW[1];
  e[5] = scratchW[2];
  return e;
}

export interface PoseDistance {
  /** m */
  position: number;
  /** rad */
  rotation: number;
}

export function poseDistance(target: Transform, current: Transform): PoseDistance {
  const e = poseErrorVector(target, current, new Float64Array(6));
  return { position: Math.hypot(e[0], e[1], e[2]), rotation: Math.hypot(e[3], e[4], e[5]) };
}
