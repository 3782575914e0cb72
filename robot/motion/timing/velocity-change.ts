// Position-free building blocks of moving-start profiles: the time-optimal change of
// (v, a) to (vTarget, 0) under |a| ≤ A, |j| ≤ J, and the brake that first brings a start
// state outside the limits back inside them.
import { type JerkProfile, pushSegment } from './profile.js';

/**
 * Arcs (duration, jerk) of the time-optimal change from (v, a), |a| ≤ aMax, to (vTarget, 0),
 * written at dur[off..], jerk[off..]; returns how many (0–3). Jerk toward vTarget, an
 * acceleration plateau at ±aMax when needed, jerk back to a = 0.
 */
export function velocityChangeArcs(
  v: number,
  a: number,
  vTarget: number,
  aMax: number,
  jMax: number,
  dur: Float64Array,
  jerk: Float64Array,
  off: number,
): number {
  // Velocity reached by bringing a to 0 straight away decides the direction s.
  const vPeak = v + (a * Math.abs(a)) / (2 * jMax);
  if (vPeak === vTarget) {
    if (a === 0) return 0;
    dur[off] = Math.abs(a) / jMax;
    jerk[off] = a > 0 ? -jMax : jMax;
    return 1;
  }
  const s = vPeak < vTarget ? 1 : -1;
  const am = s * a; // mirrored so the change is upward
  const dv = s * (vTarget - v);
  const aPeak = Math.sqrt(Math.max(0, jMax * dv + 0.5 * am * am));
  if (aPeak <= aMax) {
    dur[off] = Math.max(0, (aPeak - am) / jMax);
    jerk[off] = s * jMax;
    dur[off + 1] = aPeak / jMax;
    jerk[off + 1] = -s * jMax;
    return 2;
  }
  dur[off] = Math.max(0, (aMax - am) / jMax);
  jerk[off] = s * jMax;
  dur[off + 1] = Math.max(0, (dv - (2 * aMax * aMax - am * am) / (2 * jMax)) / aMax);
  jerk[off + 1] = 0;
  dur[off + 2] = aMax / jMax;
  jerk[off + 2] = -s * jMax;
  return 3;
}

/**
 * Appends the brake: when |a| > aMax, jerk toward aMax; then, when bringing a to 0 would
 * still end beyond ±vMax (|v + a|a|/(2J)| > vMax), jerk against the motion (plateau at
 * ∓aMax if reached) until it no longer would. Afterwards |a| ≤ aMax and every profile built
 * from the state keeps |v| ≤ max(vMax, current |v|), with |v| falling while above vMax.
 */
export function pushBrake(prof: JerkProfile, vMax: number, aMax: number, jMax: number): void {
  const a0 = prof.a[prof.count];
  if (a0 > aMax) pushSegment(prof, (a0 - aMax) / jMax, -jMax);
  else if (a0 < -aMax) pushSegment(prof, (-aMax - a0) / jMax, jMax);
  const n = prof.count;
  const v = prof.v[n],
    a = prof.a[n];
  const vPeak = v + (a * Math.abs(a)) / (2 * jMax);
  if (vPeak > vMax) brakeVelocity(prof, 1, vMax, aMax, jMax);
  else if (vPeak < -vMax) brakeVelocity(prof, -1, vMax, aMax, jMax);
}

/** Velocity brake for motion in direction s (mirrored to s = +1 below). */
function brakeVelocity(prof: JerkProfile, s: number, vMax: number, aMax: number, jMax: number): void {
  const n = prof.count;
  const v = s * prof.v[n],
    a = s * prof.a[n];
  // On the −J arc, v + a|a|/(2J) falls to vMax once a = −root.
  const root = Math.sqrt(0.5 * a * a + jMax * (v - vMax));
  if (root <= aMax) {
    pushSegment(prof, (a + root) / jMax, -s * jMax);
    return;
  }
  pushSegment(prof, Math.max(0, (a + aMax) / jMax), -s * jMax);
  const v1 = s * prof.v[prof.count];
  pushSegment(prof, Math.max(0, (v1 - (aMax * aMax) / (2 * jMax) - vMax) / aMax), 0);
}

/** Displacement and duration of the time-optimal stop from (v, a); written into res[0..1]. */
export function stopDisplacement(
  v: number,
  a: number,
  aMax: number,
  jMax: number,
  scratchDur: Float64Array,
  scratchJerk: Float64Array,
  res: Float64Array,
): void {
  const k = velocityChangeArcs(v, a, 0, aMax, jMax, scratchDur, scratchJerk, 0);
  let p = 0,
    t = 0;
  for (let i = 0; i < k; i++) {
    const d = scratchDur[i],
      j = scratchJerk[i];
    p += d * (v + d * (0.5 * a + (d * j) / 6));
    v += d * (a + 0.5 * d * j);
    a += d * j;
    t += d;
  }
  res[0] = p;
  res[1] = t;
}
