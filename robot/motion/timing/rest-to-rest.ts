// Jerk-limited rest-to-rest motion of a scalar with symmetric limits V, A, J: the
// time-optimal profile in closed form (four shapes: velocity limit reached or not ×
// acceleration limit reached or not) and the same shape stretched to a longer fixed duration.
// Phases follow Ruckig's UDDU layout t0..t6 with jerk (+J, 0, −J, 0, −J, 0, +J)·direction.
import {
  type JerkProfile,
  type LimitsClass,
  type TimingCode,
  finishAtRest,
  isPositiveFinite,
  pushSegment,
  startProfile,
} from './profile.js';

/**
 * Time-optimal profile from rest at 0 to rest at d. Writes 7 segments (t0..t6) into `out`;
 * d = 0 gives a zero-length profile of class NONE.
 */
export function restToRest(d: number, vMax: number, aMax: number, jMax: number, out: JerkProfile): TimingCode {
  if (!(d > -Infinity && d < Infinity)) return 'invalid_input';
  if (!isPositiveFinite(vMax) || !isPositiveFinite(aMax) || !isPositiveFinite(jMax)) return 'invalid_limits';
  const dist = Math.abs(d);
  // Acceleration phase needed to reach vMax: jerk ramps of tj, plateau of ta at aMax if reached.
  let tj: number, ta: number, tc: number;
  let limits: LimitsClass;
  const aSq = aMax * aMax;
  const accToV = vMax * jMax >= aSq;
  const tjV = accToV ? aMax / jMax : Math.sqrt(vMax / jMax);
  const taV = accToV ? vMax / aMax - tjV : 0;
  const distV = vMax * (2 * tjV + taV); // accelerate to vMax and stop again, no cruise
  if (dist >= distV) {
    tj = tjV;
    ta = taV;
    tc = (dist - distV) / vMax;
    limits = taV > 0 ? 'ACC0_ACC1_VEL' : 'VEL';
  } else if (dist * jMax * jMax >= 2 * aSq * aMax) {
    // aMax reached, vMax not: dist = aMax(tj + ta)(2tj + ta), root written without cancellation.
    tj = aMax / jMax;
    ta = (2 * (dist / aMax - 2 * tj * tj)) / (3 * tj + Math.sqrt(tj * tj + (4 * dist) / aMax));
    tc = 0;
    limits = 'ACC0_ACC1';
  } else {
    tj = Math.cbrt(dist / (2 * jMax));
    ta = 0;
    tc = 0;
    limits = 'NONE';
  }
  writeUddu(d, tj, ta, tc, jMax, limits, out);
  return 'ok';
}

/**
 * Rest-to-rest profile that takes exactly `duration` ≥ the minimum time: the same UDDU shape
 * with full jerk and a lower cruise velocity (unique for each duration). Used to finish
 * several joints together. A duration below the minimum by more than 1e-12 relative is
 * 'infeasible_duration'.
 */
export function restToRestInTime(
  d: number,
  vMax: number,
  aMax: number,
  jMax: number,
  duration: number,
  out: JerkProfile,
): TimingCode {
  const code = restToRest(d, vMax, aMax, jMax, out);
  if (code !== 'ok') return code;
  if (!(duration >= 0 && duration < Infinity)) return 'invalid_input';
  const tMin = out.duration;
  if (duration <= tMin) return duration >= tMin * (1 - 1e-12) ? 'ok' : 'infeasible_duration';
  const dist = Math.abs(d);
  if (dist === 0) {
    // Nothing to move: hold for the whole duration (a cruise at zero velocity).
    writeUddu(d, 0, 0, duration, jMax, 'NONE', out);
    return 'ok';
  }
  // Peak velocity of the minimum-time profile bounds the cruise velocity vp from above.
  const vPeak = peakVelocity(out, jMax);
  const vAcc = (aMax * aMax) / jMax; // smallest cruise velocity whose ramps reach aMax
  const tAtVAcc = (2 * aMax) / jMax + dist / vAcc;
  let tj: number, ta: number;
  if (vAcc < vPeak && duration < tAtVAcc) {
    // duration = vp/aMax + aMax/jMax + dist/vp: smaller root of a quadratic in vp.
    const b = duration - aMax / jMax;
    const vp = (2 * dist) / (b + Math.sqrt(Math.max(0, b * b - (4 * dist) / aMax)));
    tj = aMax / jMax;
    ta = Math.max(0, vp / aMax - tj);
  } else {
    tj = rampTimeForDuration(dist, jMax, duration);
    ta = 0;
  }
  const tc = Math.max(0, duration - 4 * tj - 2 * ta);
  writeUddu(d, tj, ta, tc, jMax, classOf(ta, tc), out);
  // Sums of phases may miss the requested end by an ulp: the end time is the request.
  out.t[out.count] = out.duration = duration;
  return 'ok';
}

/** Largest |velocity| of a UDDU profile written by this module (reached after t0..t2). */
function peakVelocity(prof: JerkProfile, jMax: number): number {
  const tj = prof.dur[0],
    ta = prof.dur[1];
  return jMax * tj * (tj + ta);
}

/**
 * Ramp time u of a profile without acceleration plateau that lasts `duration`:
 * duration = 2u + dist/(jMax u²), the smaller positive root. Newton from the lower bound
 * sqrt(dist/(jMax·duration)) converges monotonically (the function is convex, decreasing).
 */
function rampTimeForDuration(dist: number, jMax: number, duration: number): number {
  const k = dist / jMax;
  let u = Math.sqrt(k / duration);
  for (let i = 0; i < 60; i++) {
    const f = 2 * u + k / (u * u) - duration;
    const df = 2 - (2 * k) / (u * u * u);
    const next = u - f / df;
    if (!(next > u)) break; // monotone from below: stop when no further progress
    u = next;
  }
  return u;
}

function classOf(ta: number, tc: number): LimitsClass {
  if (tc > 0) return ta > 0 ? 'ACC0_ACC1_VEL' : 'VEL';
  return ta > 0 ? 'ACC0_ACC1' : 'NONE';
}

/**
 * Writes the 7 UDDU phases. Without cruise or plateau (class NONE) the two −J ramps meet and
 * are reported as one phase t2 = 2tj, t4 = 0, as Ruckig does.
 */
function writeUddu(
  d: number,
  tj: number,
  ta: number,
  tc: number,
  jMax: number,
  limits: LimitsClass,
  out: JerkProfile,
): void {
  const dir = d < 0 ? -1 : 1;
  const j = dir * jMax;
  const merged = limits === 'NONE' && tc === 0;
  startProfile(out, 0, 0, 0);
  pushSegment(out, tj, j);
  pushSegment(out, ta, 0);
  pushSegment(out, merged ? 2 * tj : tj, -j);
  pushSegment(out, tc, 0);
  pushSegment(out, merged ? 0 : tj, -j);
  pushSegment(out, ta, 0);
  pushSegment(out, tj, j);
  out.limits = limits;
  out.direction = dir;
  finishAtRest(out, d);
}
