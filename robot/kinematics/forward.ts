// Forward kinematics and the geometric Jacobian of a compiled chain. Allocation-free: callers
// pass the output buffers (frames: (dof+1)·12, Jacobian: 6·dof row-major).
import type { Transform } from '../math/transform.js';
import type { KinematicChain } from './chain.js';

/**
 * Writes the TCP pose into `tcp` and, when `frames` is given, every chain frame: frames[0] is
 * the base, frames[i] joint i's frame after its motion (z = joint axis). The joints are
 * q[offset … offset + dof − 1] (a row of a sampled trajectory without a view per row).
 */
export function forwardKinematics(
  chain: KinematicChain,
  q: ArrayLike<number>,
  tcp: Transform,
  frames?: Float64Array,
  offset = 0,
): Transform {
  const f = chain.fixed;
  const n = chain.dof;
  if (frames) frames.set(chain.base, 0);
  let t00 = f[0],
    t01 = f[1],
    t02 = f[2],
    t03 = f[3];
  let t10 = f[4],
    t11 = f[5],
    t12 = f[6],
    t13 = f[7];
  let t20 = f[8],
    t21 = f[9],
    t22 = f[10],
    t23 = f[11];
  for (let i = 0; i < n; i++) {
    const qi = q[offset + i];
    if (chain.prismatic[i]) {
      t03 += qi * t02;
      t13 += qi * t12;
      t23 += qi * t22;
    } else {
      // T · RotZ(q): columns 0 and 1 rotate.
      const c = Math.cos(qi),
        s = Math.sin(qi);
      const a0 = t00,
        a1 = t10,
        a2 = t20;
      t00 = c * a0 + s * t01;
      t01 = c * t01 - s * a0;
      t10 = c * a1 + s * t11;
      t11 = c * t11 - s * a1;
      t20 = c * a2 + s * t21;
      t21 = c * t21 - s * a2;
    }
    if (frames) {
      const o = (i + 1) * 12;
      frames[o] = t00;
      frames[o + 1] = t01;
      frames[o + 2] = t02;
      frames[o + 3] = t03;
      frames[o + 4] = t10;
      frames[o + 5] = t11;
      frames[o + 6] = t12;
      frames[o + 7] = t13;
      frames[o + 8] = t20;
      frames[o + 9] = t21;
      frames[o + 10] = t22;
      frames[o + 11] = t23;
    }
    // T · fixed[i+1]
    const o = (i + 1) * 12;
    const b00 = f[o],
      b01 = f[o + 1],
      b02 = f[o + 2],
      b03 = f[o + 3];
    const b10 = f[o + 4],
      b11 = f[o + 5],
      b12 = f[o + 6],
      b13 = f[o + 7];
    const b20 = f[o + 8],
      b21 = f[o + 9],
      b22 = f[o + 10],
      b23 = f[o + 11];
    const r00 = t00 * b00 + t01 * b10 + t02 * b20,
      r01 = t00 * b01 + t01 * b11 + t02 * b21,
      r02 = t00 * b02 + t01 * b12 + t02 * b22;
    const r10 = t10 * b00 + t11 * b10 + t12 * b20,
      r11 = t10 * b01 + t11 * b11 + t12 * b21,
      r12 = t10 * b02 + t11 * b12 + t12 * b22;
    const r20 = t20 * b00 + t21 * b10 + t22 * b20,
      r21 = t20 * b01 + t21 * b11 + t22 * b21,
      r22 = t20 * b02 + t21 * b12 + t22 * b22;
    t03 += t00 * b03 + t01 * b13 + t02 * b23;
    t13 += t10 * b03 + t11 * b13 + t12 * b23;
    t23 += t20 * b03 + t21 * b13 + t22 * b23;
    t00 = r00;
    t01 = r01;
    t02 = r02;
    t10 = r10;
    t11 = r11;
    t12 = r12;
    t20 = r20;
    t21 = r21;
    t22 = r22;
  }
  tcp[0] = t00;
  tcp[1] = t01;
  tcp[2] = t02;
  tcp[3] = t03;
  tcp[4] = t10;
  tcp[5] = t11;
  tcp[6] = t12;
  tcp[7] = t13;
  tcp[8] = t20;
  tcp[9] = t21;
  tcp[10] = t22;
  tcp[11] = t23;
  return tcp;
}

/**
 * Geometric Jacobian (6 × dof, row-major; rows vx vy vz ωx ωy ωz in the base/world frame) at the
 * TCP, from frames and tcp filled by forwardKinematics for the same q.
 */
export function geometricJacobian(
  chain: KinematicChain,
  frames: Float64Array,
  tcp: Transform,
  out: Float64Array,
): Float64Array {
  const n = chain.dof;
  const px = tcp[3],
    py = tcp[7],
    pz = tcp[11];
  for (let i = 0; i < n; i++) {
    const o = (i + 1) * 12;
    const zx = frames[o + 2],
      zy = frames[o + 6],
      zz = frames[o + 10];
    if (chain.prismatic[i]) {
      out[i] = zx;
      out[n + i] = zy;
      out[2 * n + i] = zz;
      out[3 * n + i] = 0;
      out[4 * n + i] = 0;
      out[5 * n + i] = 0;
    } else {
      const dx = px - frames[o + 3],
        dy = py - frames[o + 7],
        dz = pz - frames[o + 11];
      out[i] = zy * dz - zz * dy;
      out[n + i] = zz * dx - zx * dz;
      out[2 * n + i] = zx * dy - zy * dx;
      out[3 * n + i] = zx;
      out[4 * n + i] = zy;
      out[5 * n + i] = zz;
    }
  }
  return out;
}
