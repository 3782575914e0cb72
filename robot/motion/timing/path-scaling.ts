// Time scaling of a sampled joint path: a jerk-limited rest-to-rest progress profile
// s: 0 → 1 whose limits come from the path (joint limits over max |dq/ds| and |d²q/ds²|, TCP
// speed over path length and rotation), timestamps where s first reaches each sample, then
// one uniform stretch α when finite differences of the timed samples exceed a joint limit.
import { JerkProfile, isPositiveFinite } from './profile.js';
import { restToRest } from './rest-to-rest.js';
import type { RateLimits } from './joint-move.js';
import { type LimitRatios, limitRatios, stretchFactor } from './limit-ratios.js';

/** TCP speed limits (m/s, rad/s); Infinity = none. */
export interface TcpLimits {
  linear: number;
  angular: number;
}

/** One path segment: samples × joints positions, row-major, with the TCP's travel. */
export interface JointPath {
  joints: number;
  samples: number;
  q: Float64Array;
  /** Progress of each sample, 0 = s_0 < … < s_{n−1} = 1; default k/(n−1). */
  s?: Float64Array;
  /** TCP path length (m) and rotation angle (rad) of the segment. */
  length: number;
  rotation: number;
}

export interface ProgressLimits {
  velocity: number;
  acceleration: number;
  jerk: number;
}

/** A timed segment: sample k is reached at t[k]; s(t) = profile(t / scale). */
export interface TimedSegment {
  path: JointPath;
  s: Float64Array;
  t: Float64Array;
  duration: number;
  /** Rest-to-rest profile of s over unscaled time, the progress limits it used, and α. */
  profile: JerkProfile;
  limits: ProgressLimits;
  alpha: number;
  /** Time stretch applied to the profile: α, times any later synchronisation stretch. */
  scale: number;
  /** Finite-difference ratios of the samples before the stretch. */
  ratios: LimitRatios;
}

export type PathTimingResult =
  | { ok: true; segment: TimedSegment }
  | { ok: false; code: 'invalid_path' | 'invalid_limits'; message: string };

/** Progress limits per FACTS (GPT-Policy): curvature keeps half of each acceleration budget. */
export function progressLimits(
  path: JointPath,
  s: Float64Array,
  limits: readonly RateLimits[],
  tcp: TcpLimits,
): ProgressLimits {
  const m = path.joints,
    n = path.samples,
    q = path.q;
  let v = Math.min(tcp.linear / path.length, tcp.angular / path.rotation);
  let a = Infinity,
    jk = Infinity;
  for (let j = 0; j < m; j++) {
    let d1 = 0,
      d2 = 0,
      prev = 0;
    for (let k = 0; k + 1 < n; k++) {
      const slope = (q[(k + 1) * m + j] - q[k * m + j]) / (s[k + 1] - s[k]);
      d1 = Math.max(d1, Math.abs(slope));
      if (k > 0) d2 = Math.max(d2, Math.abs((slope - prev) / (0.5 * (s[k + 1] - s[k - 1]))));
      prev = slope;
    }
    const l = limits[j];
    v = Math.min(v, l.velocity / d1, Math.sqrt((0.5 * l.acceleration) / d2));
    a = Math.min(a, (0.5 * l.acceleration) / d1);
    jk = Math.min(jk, l.jerk / d1);
  }
  return { velocity: v, acceleration: a, jerk: jk };
}

/**
 * Times one segment. A segment whose joints do not move gets duration 0 (all timestamps 0);
 * otherwise timestamps rise strictly from 0 to the duration.
 */
export function timePath(path: JointPath, limits: readonly RateLimits[], tcp: TcpLimits): PathTimingResult {
  const bad = validate(path, limits, tcp);
  if (bad) return bad;
  const n = path.samples;
  const s = path.s ?? uniformProgress(n);
  const lim = progressLimits(path, s, limits, tcp);
  const profile = new JerkProfile();
  const t = new Float64Array(n);
  const ratios: LimitRatios = { velocity: 0, acceleration: 0, jerk: 0, joint: -1, sample: -1 };
  if (!(lim.jerk < Infinity)) {
    restToRest(0, 1, 1, 1, profile);
    const segment = { path, s, t, duration: 0, profile, limits: lim, alpha: 1, scale: 1, ratios };
    return { ok: true, segment };
  }
  restToRest(1, lim.velocity, lim.acceleration, lim.jerk, profile);
  for (let k = 1; k < n; k++) t[k] = timeAtProgress(profile, s[k], t[k - 1]);
  t[n - 1] = profile.duration;
  const r = limitRatios(t, path.q, n, path.joints, limits);
  const alpha = stretchFactor(r);
  if (alpha !== 1) for (let k = 0; k < n; k++) t[k] *= alpha;
  const segment = {
    path,
    s,
    t,
    duration: alpha * profile.duration,
    profile,
    limits: lim,
    alpha,
    scale: alpha,
    ratios: r,
  };
  return { ok: true, segment };
}

/** k/(n−1) for k = 0 … n−1. */
function uniformProgress(n: number): Float64Array {
  const s = new Float64Array(n);
  for (let k = 0; k < n; k++) s[k] = k / (n - 1);
  return s;
}

/** First time ≥ tFrom at which the (non-decreasing) profile reaches position x. */
export function timeAtProgress(profile: JerkProfile, x: number, tFrom: number): number {
  let i = 0;
  while (i < profile.count - 1 && profile.p[i + 1] < x) i++;
  // Newton on segment i's cubic (monotone there), kept inside a shrinking bracket [lo, hi].
  let lo = Math.max(profile.t[i], tFrom),
    hi = profile.t[i + 1];
  const p = profile.p[i],
    v = profile.v[i],
    a = profile.a[i],
    j = profile.jerk[i],
    t0 = profile.t[i];
  let t = 0.5 * (lo + hi);
  for (let it = 0; it < 100 && hi - lo > 2.5e-16 * hi; it++) {
    const d = t - t0;
    const f = p + d * (v + d * (0.5 * a + (d * j) / 6)) - x;
    if (f >= 0) hi = t;
    else lo = t;
    const slope = v + d * (a + 0.5 * d * j);
    const next = t - f / slope;
    if (Math.abs(next - t) <= 2.5e-16 * hi) return Math.min(hi, Math.max(lo, next)); // converged
    t = next > lo && next < hi ? next : 0.5 * (lo + hi);
  }
  return hi;
}

function validate(path: JointPath, limits: readonly RateLimits[], tcp: TcpLimits): PathTimingResult | undefined {
  const fail = (code: 'invalid_path' | 'invalid_limits', message: string): PathTimingResult => ({
    ok: false,
    code,
    message,
  });
  const { joints: m, samples: n } = path;
  if (!(Number.isInteger(m) && m >= 1)) return fail('invalid_path', `path.joints must be an integer ≥ 1, got ${m}`);
  if (!(Number.isInteger(n) && n >= 2)) return fail('invalid_path', `path.samples must be an integer ≥ 2, got ${n}`);
  if (path.q.length !== n * m)
    return fail('invalid_path', `path.q must hold samples × joints = ${n * m} values, got ${path.q.length}`);
  for (let i = 0; i < n * m; i++) {
    if (!Number.isFinite(path.q[i])) {
      return fail('invalid_path', `path.q[${Math.floor(i / m)}][${i % m}] must be finite, got ${path.q[i]}`);
    }
  }
  if (path.s) {
    const s = path.s;
    if (s.length !== n) return fail('invalid_path', `path.s must have ${n} entries, got ${s.length}`);
    if (s[0] !== 0 || s[n - 1] !== 1)
      return fail('invalid_path', `path.s must run from 0 to 1, got ${s[0]} … ${s[n - 1]}`);
    for (let k = 1; k < n; k++) {
      if (!(s[k] > s[k - 1]))
        return fail('invalid_path', `path.s must increase strictly, got s[${k}] = ${s[k]} after ${s[k - 1]}`);
    }
  }
  for (const [name, x] of [
    ['path.length', path.length],
    ['path.rotation', path.rotation],
  ] as const) {
    if (!(x >= 0 && x < Infinity)) return fail('invalid_path', `${name} must be finite and ≥ 0, got ${x}`);
  }
  if (!(tcp.linear > 0) || !(tcp.angular > 0)) {
    return fail(
      'invalid_limits',
      `TCP limits must be > 0 (Infinity = none), got linear ${tcp.linear}, angular ${tcp.angular}`,
    );
  }
  if (limits.length !== m) return fail('invalid_limits', `need limits for ${m} joints, got ${limits.length}`);
  for (let j = 0; j < m; j++) {
    const l = limits[j];
    for (const key of ['velocity', 'acceleration', 'jerk'] as const) {
      if (!isPositiveFinite(l[key]))
        return fail('invalid_limits', `joint ${j} ${key} limit must be finite and > 0, got ${l[key]}`);
    }
  }
  return undefined;
}
