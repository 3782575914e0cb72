// Synchronised joint-space moves (e.g. go home): every joint gets its time-optimal rest-to-rest
// profile, the move lasts as long as the slowest joint, and every other joint is re-timed to
// finish exactly then (full jerk, lower cruise velocity), so all joints start and stop together.
import { JerkProfile, type KinState, type TimingCode, newKinState, sampleProfile } from './profile.js';
import { restToRest, restToRestInTime } from './rest-to-rest.js';

/** Per-joint rate limits (magnitudes > 0), the rate fields of a robot's joint limits. */
export interface RateLimits {
  velocity: number;
  acceleration: number;
  jerk: number;
}

export interface JointMove {
  /** Until every joint is at rest (the longest profile). */
  duration: number;
  q0: Float64Array;
  /** Where each joint ends (q0 + its profile's displacement, exactly). */
  q1: Float64Array;
  /** Profile of q[j] − q0[j], one per joint; a stop's joints may end at different times. */
  profiles: JerkProfile[];
}

export type JointMoveResult =
  | { ok: true; move: JointMove }
  | { ok: false; code: Exclude<TimingCode, 'ok'>; joint: number; message: string };

/**
 * Synchronises rest-to-rest profiles of displacements d[off..off+n) into `profiles` (reused);
 * returns the common duration, or the first failing joint as -(joint + 1) with its code in
 * `codeOut[0]`. No allocation: the hot path of multi-joint benchmarks.
 */
export function syncRestToRest(
  n: number,
  off: number,
  d: ArrayLike<number>,
  vMax: ArrayLike<number>,
  aMax: ArrayLike<number>,
  jMax: ArrayLike<number>,
  profiles: JerkProfile[],
  codeOut: TimingCode[],
): number {
  let duration = 0;
  for (let j = 0; j < n; j++) {
    const i = off + j;
    const code = restToRest(d[i], vMax[i], aMax[i], jMax[i], profiles[j]);
    if (code !== 'ok') {
      codeOut[0] = code;
      return -(j + 1);
    }
    if (profiles[j].duration > duration) duration = profiles[j].duration;
  }
  for (let j = 0; j < n; j++) {
    const i = off + j;
    if (profiles[j].duration !== duration) restToRestInTime(d[i], vMax[i], aMax[i], jMax[i], duration, profiles[j]);
  }
  codeOut[0] = 'ok';
  return duration;
}

/** Plans a synchronised move from q0 to q1 (same length as limits). */
export function planJointMove(
  q0: ArrayLike<number>,
  q1: ArrayLike<number>,
  limits: readonly RateLimits[],
): JointMoveResult {
  const n = limits.length;
  if (q0.length !== n || q1.length !== n) {
    return {
      ok: false,
      code: 'invalid_input',
      joint: -1,
      message: `q0 has ${q0.length} and q1 ${q1.length} joints, limits ${n}: lengths must match`,
    };
  }
  const d = new Float64Array(n);
  for (let j = 0; j < n; j++) d[j] = q1[j] - q0[j];
  const profiles = Array.from({ length: n }, () => new JerkProfile());
  const codeOut: TimingCode[] = ['ok'];
  const duration = syncRestToRest(
    n,
    0,
    d,
    limits.map((l) => l.velocity),
    limits.map((l) => l.acceleration),
    limits.map((l) => l.jerk),
    profiles,
    codeOut,
  );
  if (duration < 0) {
    const j = -duration - 1;
    const code = codeOut[0] as Exclude<TimingCode, 'ok'>;
    return { ok: false, code, joint: j, message: describeFailure(code, j, q0[j], q1[j], limits[j]) };
  }
  return { ok: true, move: { duration, q0: Float64Array.from(q0), q1: Float64Array.from(q1), profiles } };
}

function describeFailure(code: TimingCode, j: number, q0: number, q1: number, l: RateLimits): string {
  if (code === 'invalid_input') return `joint ${j}: start ${q0} and goal ${q1} must be finite numbers`;
  return (
    `joint ${j}: velocity ${l.velocity}, acceleration ${l.acceleration} and jerk ${l.jerk} ` +
    `limits must be finite and > 0`
  );
}

const scratch: KinState = newKinState();

/**
 * Joint positions (and optionally velocities, accelerations) at time t into q, qd, qdd from
 * offset on. A joint whose profile has ended (or the move) sits exactly at q1, not q0 + (q1 − q0).
 */
export function sampleJointMove(
  move: JointMove,
  t: number,
  q: Float64Array,
  qd?: Float64Array,
  qdd?: Float64Array,
  offset = 0,
): void {
  for (let j = 0; j < move.profiles.length; j++) {
    const done = t >= Math.min(move.duration, move.profiles[j].duration);
    sampleProfile(move.profiles[j], t, scratch);
    const k = offset + j;
    q[k] = done ? move.q1[j] : move.q0[j] + scratch.p;
    if (qd) qd[k] = done ? 0 : scratch.v;
    if (qdd) qdd[k] = done ? 0 : scratch.a;
  }
}
