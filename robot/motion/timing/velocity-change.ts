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
 * Appends the brake (Ruckig's rule, at most two segments): the least time back inside the
 * limits. a > aMax: jerk down to aMax, and from v < −vMax hold aMax until v = −vMax; a start
 * beyond vMax, or one whose acceleration must carry v past it (also a > aMax): jerk against the
 * motion until v = vMax (plateau at −aMax if reached). Mirrored for the negative side. Neither
 * brake pushes v ∓ a²/(2J) past the opposite limit: it ends there instead.
 */
export function pushBrake(prof: JerkProfile, vMax: number, aMax: number, jMax: number): void {
  const n = prof.count;
  const v = prof.v[n],
    a = prof.a[n];
  const rise = (a * a) / (2 * jMax); // |v change| while a is brought to 0
  if (a > aMax) brakeAcceleration(prof, 1, vMax, aMax, jMax);
  else if (a < -aMax) brakeAcceleration(prof, -1, vMax, aMax, jMax);
  else if ((v > vMax && v - rise > -vMax) || (a > 0 && v + rise > vMax)) brakeVelocity(prof, 1, vMax, aMax, jMax);
  else if ((v < -vMax && v + rise < vMax) || (a < 0 && v - rise < -vMax)) brakeVelocity(prof, -1, vMax, aMax, jMax);
}

/** Acceleration brake for s·a > aMax (mirrored to s = +1 below). */
function brakeAcceleration(prof: JerkProfile, s: number, vMax: number, aMax: number, jMax: number): void {
  const n = prof.count;
  const v = s * prof.v[n],
    a = s * prof.a[n];
  if (v + (a * a) / (2 * jMax) > vMax) {
    brakeVelocity(prof, s, vMax, aMax, jMax);
    return;
  }
  const t0 = (a - aMax) / jMax;
  const v1 = v + t0 * (a - 0.5 * jMax * t0);
  pushSegment(prof, t0, -s * jMax);
  // Still below −vMax: hold aMax until v = −vMax, or until releasing a would end at vMax.
  if (v1 < -vMax)
    pushSegment(prof, Math.max(0, Math.min((-vMax - v1) / aMax, (vMax - v1) / aMax - aMax / (2 * jMax))), 0);
}

/**
 * Velocity brake for motion in direction s (mirrored to s = +1 below): −J until v falls to
 * vMax or v − a²/(2J) (where +J would stop the fall) reaches −vMax, else a plateau at −aMax.
 */
function brakeVelocity(prof: JerkProfile, s: number, vMax: number, aMax: number, jMax: number): void {
  const n = prof.count;
  const v = s * prof.v[n],
    a = s * prof.a[n];
  const toV = (a + Math.sqrt(a * a + 2 * jMax * (v - vMax))) / jMax;
  const floor = 0.5 * a * a + jMax * (v + vMax); // < 0: v − a²/(2J) never reaches −vMax
  const t = Math.min(toV, floor >= 0 ? (a + Math.sqrt(floor)) / jMax : Infinity);
  const toAMin = (a + aMax) / jMax;
  if (!(toAMin < t)) {
    pushSegment(prof, Math.max(0, t), -s * jMax);
    return;
  }
  const v1 = v + toAMin * (a - 0.5 * jMax * toAMin);
  pushSegment(prof, Math.max(0, toAMin), -s * jMax);
  pushSegment(prof, Math.max(0, Math.min((v1 - vMax) / aMax, (v1 + vMax) / aMax - aMax / (2 * jMax))), 0);
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
