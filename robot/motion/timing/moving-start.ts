// Time-optimal jerk-limited motion from a moving state (0, v0, a0) to rest at d, and the
// fastest stop wherever it ends: used to re-target or stop a move without waiting for it.
// Shape: brake (Ruckig's rule, only when the start state cannot stay within the limits) →
// ramp toward ±vMax for a time ts → time-optimal stop. Maximising the end position for a given duration has exactly
// this shape (jerk +, −, + with limit arcs), so the ts whose stop ends at d is time-optimal;
// the end position grows monotonically with ts and ts is found by bisection per ramp arc.
import {
  type JerkProfile,
  type TimingCode,
  finishAtRest,
  isPositiveFinite,
  pushSegment,
  startProfile,
} from './profile.js';
import { pushBrake, stopDisplacement, velocityChangeArcs } from './velocity-change.js';

// Scratch for arcs and stop results (module-level: the solvers are synchronous, no allocation).
const rampDur = new Float64Array(3);
const rampJerk = new Float64Array(3);
const stopDur = new Float64Array(3);
const stopJerk = new Float64Array(3);
const stopRes = new Float64Array(2);

/** Fastest stop from (0, v0, a0): brake if needed, then the time-optimal velocity change to 0. */
export function stopFrom(
  v0: number,
  a0: number,
  vMax: number,
  aMax: number,
  jMax: number,
  out: JerkProfile,
): TimingCode {
  const code = checkInputs(0, v0, a0, vMax, aMax, jMax);
  if (code !== 'ok') return code;
  startProfile(out, 0, v0, a0);
  pushBrake(out, vMax, aMax, jMax);
  out.brakeSegments = out.count;
  pushStop(out, aMax, jMax);
  out.direction = out.p[out.count] < 0 ? -1 : 1;
  out.limits = 'NONE';
  finishAtRest(out, out.p[out.count]);
  return 'ok';
}

/** Time-optimal profile from (0, v0, a0) to rest at d under symmetric limits. */
export function movingToRest(
  d: number,
  v0: number,
  a0: number,
  vMax: number,
  aMax: number,
  jMax: number,
  out: JerkProfile,
): TimingCode {
  const code = checkInputs(d, v0, a0, vMax, aMax, jMax);
  if (code !== 'ok') return code;
  startProfile(out, 0, v0, a0);
  pushBrake(out, vMax, aMax, jMax);
  out.brakeSegments = out.count;
  out.limits = 'NONE';
  const n = out.count;
  const p = out.p[n],
    v = out.v[n],
    a = out.a[n];
  stopDisplacement(v, a, aMax, jMax, stopDur, stopJerk, stopRes);
  const gap = d - (p + stopRes[0]);
  const s = gap < 0 ? -1 : 1;
  out.direction = s;
  // A gap of rounding size (1e-12 relative) is no gap: closing it would cost ~cbrt(gap/J)
  // of extra time; the end is then set to d exactly and endError records the gap.
  const negligible = 1e-12 * (Math.abs(d) + Math.abs(p) + Math.abs(stopRes[0]));
  if (Math.abs(gap) > negligible) ramp(d, s, vMax, aMax, jMax, out);
  pushStop(out, aMax, jMax);
  finishAtRest(out, d);
  return 'ok';
}

/** Appends the part of the ramp toward s·vMax (and cruise) after which the stop ends at d. */
function ramp(d: number, s: number, vMax: number, aMax: number, jMax: number, out: JerkProfile): void {
  const n0 = out.count;
  let p = out.p[n0],
    v = out.v[n0],
    a = out.a[n0];
  const k = velocityChangeArcs(v, a, s * vMax, aMax, jMax, rampDur, rampJerk, 0);
  for (let i = 0; i < k; i++) {
    const dur = rampDur[i],
      j = rampJerk[i];
    if (s * overshoot(d, p, v, a, j, dur, aMax, jMax) >= 0) {
      pushSegment(out, switchTime(d, s, p, v, a, j, dur, out.duration, aMax, jMax), j);
      return;
    }
    pushSegment(out, dur, j);
    const m = out.count;
    p = out.p[m];
    v = out.v[m];
    a = out.a[m];
  }
  // Cruise at s·vMax until the stop ends exactly at d.
  stopDisplacement(v, a, aMax, jMax, stopDur, stopJerk, stopRes);
  pushSegment(out, Math.max(0, (d - p - stopRes[0]) / (s * vMax)), 0);
}

/** End position of "follow the arc for tau, then stop" minus d. */
function overshoot(
  d: number,
  p: number,
  v: number,
  a: number,
  j: number,
  tau: number,
  aMax: number,
  jMax: number,
): number {
  const pt = p + tau * (v + tau * (0.5 * a + (tau * j) / 6));
  const vt = v + tau * (a + 0.5 * tau * j);
  stopDisplacement(vt, a + tau * j, aMax, jMax, stopDur, stopJerk, stopRes);
  return pt + stopRes[0] - d;
}

/** Bisection for the time on an arc where the stop ends at d, to ~1 ulp of the total time. */
function switchTime(
  d: number,
  s: number,
  p: number,
  v: number,
  a: number,
  j: number,
  dur: number,
  t0: number,
  aMax: number,
  jMax: number,
): number {
  let lo = 0,
    hi = dur;
  while (hi - lo > 2.5e-16 * (t0 + hi)) {
    const mid = 0.5 * (lo + hi);
    if (s * overshoot(d, p, v, a, j, mid, aMax, jMax) >= 0) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** Appends the time-optimal velocity change from the profile's end state to (0, 0). */
function pushStop(out: JerkProfile, aMax: number, jMax: number): void {
  const n = out.count;
  const k = velocityChangeArcs(out.v[n], out.a[n], 0, aMax, jMax, stopDur, stopJerk, 0);
  for (let i = 0; i < k; i++) pushSegment(out, stopDur[i], stopJerk[i]);
}

function checkInputs(d: number, v0: number, a0: number, vMax: number, aMax: number, jMax: number): TimingCode {
  if (!Number.isFinite(d) || !Number.isFinite(v0) || !Number.isFinite(a0)) return 'invalid_input';
  if (!isPositiveFinite(vMax) || !isPositiveFinite(aMax) || !isPositiveFinite(jMax)) return 'invalid_limits';
  return 'ok';
}
