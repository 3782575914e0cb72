// A parallel jaw (robot config `gripper.jaw`) at a placed TCP: whether a point lies between the
// fingers, or in the channel they sweep as they approach. The simulated workcell grasps with it
// and the safety check lets the gripper's capsules enclose an object in that channel.
import type { Jaw } from '../description/types.js';
import type { Transform } from '../math/transform.js';

/**
 * Whether world point (x, y, z) lies in the jaw box at `opening` (m) with `tol` of slack each
 * way; with `ahead`, the box runs on without end along TCP +z. tcp is world-from-TCP.
 */
export function inJaw(
  jaw: Jaw,
  opening: number,
  tcp: Transform,
  x: number,
  y: number,
  z: number,
  tol: number,
  ahead = false,
): boolean {
  const dx = x - tcp[3],
    dy = y - tcp[7],
    dz = z - tcp[11];
  // TCP-frame coordinates: Rᵀ (p − t).
  const px = tcp[0] * dx + tcp[4] * dy + tcp[8] * dz;
  const py = tcp[1] * dx + tcp[5] * dy + tcp[9] * dz;
  const pz = tcp[2] * dx + tcp[6] * dy + tcp[10] * dz;
  const [across, along] = jaw.axis === 'x' ? [px, py] : [py, px];
  return (
    Math.abs(across) <= opening / 2 + tol &&
    Math.abs(along) <= jaw.thickness / 2 + tol &&
    pz >= -jaw.depth / 2 - tol &&
    (ahead || pz <= jaw.depth / 2 + tol)
  );
}

/** The world direction the fingers close along: the TCP's x or y axis (a column of its rotation). */
export function closingAxis(jaw: Jaw, tcp: Transform, out: Float64Array): Float64Array {
  const k = jaw.axis === 'x' ? 0 : 1;
  for (let i = 0; i < 3; i++) out[i] = tcp[4 * i + k];
  return out;
}
