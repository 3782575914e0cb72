// Cartesian path sampling: straight-line segments between consecutive TCP targets (position by
// linear interpolation, orientation by short-arc SLERP), each cut into
//   N = max(2, ceil(max(L/Δp, θ/Δθ, T_nom·rate))),  T_nom = max(L/v_tcp, θ/ω_tcp, 1/rate)
// equal steps, then solved by sequential IK: the first sample seeded from the measured joints,
// every next one from the previous solution, no random restarts (they would jump branches).
// A sample counts only within the IK acceptance tolerances. Result codes, no exceptions.
import type { PathSampling, TcpSpeedLimits } from '../description/types.js';
import { fromPose, quat, quatAngle, quatFromTransform, quatNorm, slerp, type Quat } from '../math/quaternion.js';
import { distance3, isFiniteVec, lerp3, vec3 } from '../math/vec3.js';
import { forwardKinematics } from '../kinematics/forward.js';
import type { IkCode, IkSolver } from '../kinematics/ik.js';

/** A TCP target in the chain's frame: position (m) and quaternion [x, y, z, w]. */
export interface PoseTarget {
  position: ArrayLike<number>;
  orientation: ArrayLike<number>;
}

export interface PathSegment {
  /** Index of the target this segment ends at. */
  target: number;
  /** Straight-line length (m) and rotation angle (rad) of the segment. */
  length: number;
  angle: number;
  /** max(L/v_tcp, θ/ω_tcp, 1/rate) (s). */
  nominalDuration: number;
  /** Number of points including the segment's start: N + 1. */
  points: number;
  /** points × dof joint samples at s = i/N, row 0 = the segment's start (measured or previous end). */
  q: Float64Array;
}

export type PathResult =
  | { code: 'ok'; dof: number; segments: PathSegment[] }
  | { code: 'invalid-start'; message: string }
  | { code: 'invalid-target'; target: number; message: string }
  | { code: 'unreachable'; target: number; sample: number; positionError: number; rotationError: number; ik: IkCode }
  | { code: 'joint-jump'; target: number; sample: number; joint: string; step: number };

export interface PathOptions {
  sampling: PathSampling;
  tcpSpeed: TcpSpeedLimits;
  /** Largest joint change between consecutive samples (rad or m) before the path is refused as
   * a branch switch; consecutive samples are ≤ Δp and Δθ apart, so real motion is far smaller. */
  maxJointStep?: number;
}

const DEFAULT_MAX_JOINT_STEP = 0.5;
/** Accepted quaternion norms before normalisation (as GPT-Policy's validator). */
const QUAT_NORM_MIN = 0.99;
const QUAT_NORM_MAX = 1.01;

/** Samples per segment from its length and angle. */
export function segmentSamples(
  length: number,
  angle: number,
  o: PathOptions,
): { count: number; nominalDuration: number } {
  const rate = o.sampling.rateHz;
  const nominalDuration = Math.max(length / o.tcpSpeed.linear, angle / o.tcpSpeed.angular, 1 / rate);
  // A ratio within 1e-9 of an integer is that integer: rounding noise must not add a sample.
  const count = Math.max(
    2,
    Math.ceil(
      Math.max(length / o.sampling.positionStep, angle / o.sampling.rotationStep, nominalDuration * rate) - 1e-9,
    ),
  );
  return { count, nominalDuration };
}

export type PoseTargetCheck =
  | { code: 'ok'; orientation: Quat }
  | { code: 'non-finite' | 'invalid-quaternion'; message: string };

/** Finite position and quaternion with norm in [0.99, 1.01]; gives the normalised quaternion. */
export function checkPoseTarget(t: PoseTarget): PoseTargetCheck {
  if (t.position.length !== 3 || !isFiniteVec(t.position))
    return { code: 'non-finite', message: 'position must be three finite numbers' };
  if (t.orientation.length !== 4 || !isFiniteVec(t.orientation))
    return { code: 'non-finite', message: 'quaternion must be four finite numbers' };
  const norm = quatNorm(t.orientation);
  if (!(norm >= QUAT_NORM_MIN && norm <= QUAT_NORM_MAX)) {
    return {
      code: 'invalid-quaternion',
      message: `quaternion norm ${norm} is outside [${QUAT_NORM_MIN}, ${QUAT_NORM_MAX}]`,
    };
  }
  return {
    code: 'ok',
    orientation: quat(
      t.orientation[0] / norm,
      t.orientation[1] / norm,
      t.orientation[2] / norm,
      t.orientation[3] / norm,
    ),
  };
}

export function sampleCartesianPath(
  solver: IkSolver,
  measured: ArrayLike<number>,
  targets: PoseTarget[],
  options: PathOptions,
): PathResult {
  const chain = solver.chain;
  const n = chain.dof;
  if (measured.length !== n || !isFiniteVec(measured))
    return { code: 'invalid-start', message: `measured joints must be ${n} finite values` };
  if (targets.length === 0) return { code: 'invalid-target', target: 0, message: 'no targets' };
  const orientations: Quat[] = [];
  for (let k = 0; k < targets.length; k++) {
    const v = checkPoseTarget(targets[k]);
    if (v.code !== 'ok') return { code: 'invalid-target', target: k, message: v.message };
    orientations.push(v.orientation);
  }
  const maxJointStep = options.maxJointStep ?? DEFAULT_MAX_JOINT_STEP;
  const startPose = forwardKinematics(chain, measured, new Float64Array(12));
  let fromP = vec3(startPose[3], startPose[7], startPose[11]);
  let fromQ = quatFromTransform(quat(), startPose);
  let previous: Float64Array = Float64Array.from(measured);
  const p = vec3();
  const r = quat();
  const pose = new Float64Array(12);
  const segments: PathSegment[] = [];
  for (let k = 0; k < targets.length; k++) {
    const toP = vec3(targets[k].position[0], targets[k].position[1], targets[k].position[2]);
    const toQ = orientations[k];
    const length = distance3(fromP, toP);
    const angle = quatAngle(fromQ, toQ);
    const { count, nominalDuration } = segmentSamples(length, angle, options);
    const q = new Float64Array((count + 1) * n);
    q.set(previous, 0);
    for (let i = 1; i <= count; i++) {
      const s = i / count;
      lerp3(p, fromP, toP, s);
      slerp(r, fromQ, toQ, s);
      const res = solver.solve(fromPose(p, r, pose), previous);
      if (res.code !== 'ok') {
        return {
          code: 'unreachable',
          target: k,
          sample: i,
          positionError: res.positionError,
          rotationError: res.rotationError,
          ik: res.code,
        };
      }
      for (let j = 0; j < n; j++) {
        const step = Math.abs(res.q[j] - previous[j]);
        if (step > maxJointStep) return { code: 'joint-jump', target: k, sample: i, joint: chain.jointNames[j], step };
      }
      q.set(res.q, i * n);
      previous = res.q;
    }
    segments.push({ target: k, length, angle, nominalDuration, points: count + 1, q });
    fromP = toP;
    fromQ = toQ;
  }
  return { code: 'ok', dof: n, segments };
}
