// Piecewise-constant-jerk motion of one scalar: the common output of every timing solver.
// A profile is a reusable struct (typed arrays, no allocation per solve) so hot loops can
// write thousands of profiles into one object; sampling is exact cubic evaluation.

/** Most segments any solver writes: brake (2) + ramp (3) + cruise (1) + stop (3), rounded up. */
export const MAX_SEGMENTS = 12;

/** Which limits a rest-to-rest profile reaches (Ruckig's names). */
export type LimitsClass = 'ACC0_ACC1_VEL' | 'VEL' | 'ACC0_ACC1' | 'NONE';

/** Result codes of the timing solvers; anything but 'ok' leaves the profile unspecified. */
export type TimingCode =
  | 'ok'
  | 'invalid_input' // a non-finite position, velocity or acceleration
  | 'invalid_limits' // a limit that is not finite and > 0
  | 'infeasible_duration'; // a requested duration below the minimum

/** One backing store for a profile's six arrays: typed arrays over 64 bytes are allocated off
 * the V8 heap, at ~1 µs each, and planners create a profile per path segment. */
const STORE = 2 * MAX_SEGMENTS + 4 * (MAX_SEGMENTS + 1);

export class JerkProfile {
  /** Used segments; segment i runs from t[i] to t[i + 1] with jerk jerk[i]. */
  count = 0;
  private readonly store = new Float64Array(STORE);
  readonly dur = this.store.subarray(0, MAX_SEGMENTS);
  readonly jerk = this.store.subarray(MAX_SEGMENTS, 2 * MAX_SEGMENTS);
  /** State at the start of segment i (index count = end state): time, p, v, a. */
  readonly t = this.store.subarray(2 * MAX_SEGMENTS, 3 * MAX_SEGMENTS + 1);
  readonly p = this.store.subarray(3 * MAX_SEGMENTS + 1, 4 * MAX_SEGMENTS + 2);
  readonly v = this.store.subarray(4 * MAX_SEGMENTS + 2, 5 * MAX_SEGMENTS + 3);
  readonly a = this.store.subarray(5 * MAX_SEGMENTS + 3, STORE);
  /** Total duration (s) = t[count]. */
  duration = 0;
  /** Rest-to-rest shape and sign of the motion (+1 up, -1 down). */
  limits: LimitsClass = 'NONE';
  direction = 1;
  /** Leading segments that only bring an out-of-limit start state back inside the limits. */
  brakeSegments = 0;
  /** |integrated end position − target| before the end state was set exactly (units). */
  endError = 0;
}

/** A sampled kinematic state; reuse one object to avoid allocation. */
export interface KinState {
  p: number;
  v: number;
  a: number;
  j: number;
}

export function newKinState(): KinState {
  return { p: 0, v: 0, a: 0, j: 0 };
}

/** Empties the profile and sets its start state. */
export function startProfile(prof: JerkProfile, p0: number, v0: number, a0: number): void {
  prof.count = 0;
  prof.brakeSegments = 0;
  prof.endError = 0;
  prof.t[0] = 0;
  prof.p[0] = p0;
  prof.v[0] = v0;
  prof.a[0] = a0;
  prof.duration = 0;
}

/** Appends a segment of constant jerk and integrates its end state exactly. */
export function pushSegment(prof: JerkProfile, duration: number, jerk: number): void {
  const i = prof.count;
  const p = prof.p[i],
    v = prof.v[i],
    a = prof.a[i];
  const d = duration;
  prof.dur[i] = d;
  prof.jerk[i] = jerk;
  prof.t[i + 1] = prof.t[i] + d;
  prof.p[i + 1] = p + d * (v + d * (0.5 * a + (d * jerk) / 6));
  prof.v[i + 1] = v + d * (a + 0.5 * d * jerk);
  prof.a[i + 1] = a + d * jerk;
  prof.count = i + 1;
  prof.duration = prof.t[i + 1];
}

/** Records the integration error and sets the end state to exactly (target, 0, 0). */
export function finishAtRest(prof: JerkProfile, target: number): void {
  const n = prof.count;
  prof.endError = Math.abs(prof.p[n] - target);
  prof.p[n] = target;
  prof.v[n] = 0;
  prof.a[n] = 0;
}

/** State at time t (clamped to [0, duration]; jerk is 0 outside the profile). */
export function sampleProfile(prof: JerkProfile, t: number, out: KinState): KinState {
  const n = prof.count;
  if (!(t > 0) || n === 0) {
    out.p = prof.p[0];
    out.v = prof.v[0];
    out.a = prof.a[0];
    out.j = 0;
    return out;
  }
  if (t >= prof.duration) {
    out.p = prof.p[n];
    out.v = prof.v[n];
    out.a = prof.a[n];
    out.j = 0;
    return out;
  }
  let i = 0;
  while (i < n - 1 && t >= prof.t[i + 1]) i++;
  const d = t - prof.t[i];
  const j = prof.jerk[i],
    a = prof.a[i],
    v = prof.v[i];
  out.p = prof.p[i] + d * (v + d * (0.5 * a + (d * j) / 6));
  out.v = v + d * (a + 0.5 * d * j);
  out.a = a + d * j;
  out.j = j;
  return out;
}

/** True when x is a finite number > 0 (limits must be). */
export function isPositiveFinite(x: number): boolean {
  return x > 0 && x < Infinity;
}
