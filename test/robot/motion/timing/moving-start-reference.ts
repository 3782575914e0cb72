// Independent numeric reference for moving-start durations (tests and fixture generation).
// Outer bisection on the duration T: d is reachable at rest at time T iff it lies between the
// least and the greatest position reachable at rest at T; the greatest comes from simulating
// "push toward +V, then brake to rest", with the moment of braking bisected so the brake ends
// exactly at T. Events of the simulated feedback laws (a limit reached, peak velocity reached)
// are found by bisection too, so no closed-form arc formula is shared with the solver.

interface State {
  p: number;
  v: number;
  a: number;
}

interface Limits {
  V: number;
  A: number;
  J: number;
}

function step(s: State, j: number, t: number): State {
  return {
    p: s.p + s.v * t + (s.a * t * t) / 2 + (j * t * t * t) / 6,
    v: s.v + s.a * t + (j * t * t) / 2,
    a: s.a + j * t,
  };
}

/** Velocity reached if the acceleration were brought to zero at full jerk. */
function peak(s: State, J: number): number {
  return s.v + (s.a * Math.abs(s.a)) / (2 * J);
}

/** First t in [0, tMax] where pred(step(s, j, t)) holds (pred monotone along the arc). */
function event(s: State, j: number, tMax: number, pred: (x: State) => boolean): number {
  if (pred(s)) return 0;
  if (!pred(step(s, j, tMax))) return tMax;
  let lo = 0,
    hi = tMax;
  for (let i = 0; i < 200 && hi - lo > 1e-17 * (1 + hi); i++) {
    const mid = (lo + hi) / 2;
    if (pred(step(s, j, mid))) hi = mid;
    else lo = mid;
  }
  return hi;
}

/** An arc of constant jerk. */
interface Arc {
  j: number;
  t: number;
}

/** Feedback law "drive (v, a) to (vt, 0) as fast as possible", as a list of arcs. */
function driveArcs(s0: State, vt: number, L: Limits): Arc[] {
  const arcs: Arc[] = [];
  const dir = peak(s0, L.J) < vt ? 1 : -1;
  let s = s0;
  const done = (x: State): boolean => dir * peak(x, L.J) >= dir * vt;
  const horizon = (Math.abs(vt - s.v) + 4 * L.A) / L.A + (4 * L.A) / L.J + 1;
  if (!done(s)) {
    // Push: jerk toward vt until |a| = A or the peak reaches vt.
    const aLim = dir * L.A;
    const t1 = event(s, dir * L.J, Math.max(0, (aLim - s.a) / (dir * L.J)), done);
    arcs.push({ j: dir * L.J, t: t1 });
    s = step(s, dir * L.J, t1);
    if (!done(s)) {
      const t2 = event(s, 0, horizon, done);
      arcs.push({ j: 0, t: t2 });
      s = step(s, 0, t2);
    }
  }
  // Release: bring a to zero.
  arcs.push({ j: s.a > 0 ? -L.J : L.J, t: Math.abs(s.a) / L.J });
  return arcs;
}

function run(s: State, arcs: Arc[]): { s: State; t: number } {
  let t = 0;
  for (const arc of arcs) {
    s = step(s, arc.j, arc.t);
    t += arc.t;
  }
  return { s, t };
}

/** Brake rule (Ruckig's): back inside the limits in the least time; see pushBrake. */
function brake(s: State, L: Limits): { s: State; t: number } {
  const rise = (s.a * s.a) / (2 * L.J);
  if (Math.abs(s.a) > L.A) return accelerationBrake(s, s.a > 0 ? 1 : -1, L);
  if ((s.v > L.V && s.v - rise > -L.V) || (s.a > 0 && s.v + rise > L.V)) return velocityBrake(s, 1, L);
  if ((s.v < -L.V && s.v + rise < L.V) || (s.a < 0 && s.v - rise < -L.V)) return velocityBrake(s, -1, L);
  return { s, t: 0 };
}

/** Mirrored state (dir = −1 flips signs), so each brake is written for dir = +1 only. */
const mirror = (s: State, dir: number): State => ({ p: dir * s.p, v: dir * s.v, a: dir * s.a });

/** Arcs of a mirrored brake run on the real state: jerk and plateau signs follow dir. */
function runMirrored(s: State, dir: number, arcs: Arc[]): { s: State; t: number } {
  return run(
    s,
    arcs.map((x) => ({ j: dir * x.j, t: x.t })),
  );
}

function accelerationBrake(s0: State, dir: number, L: Limits): { s: State; t: number } {
  const m = mirror(s0, dir);
  if (peak(m, L.J) > L.V) return velocityBrake(s0, dir, L);
  const t0 = (m.a - L.A) / L.J;
  const s1 = step(m, -L.J, t0);
  const arcs: Arc[] = [{ j: -L.J, t: t0 }];
  if (s1.v < -L.V) {
    const done = (x: State): boolean => x.v >= -L.V || peak(x, L.J) >= L.V;
    arcs.push({ j: 0, t: event(s1, 0, (2 * L.V - s1.v) / L.A + 1, done) });
  }
  return runMirrored(s0, dir, arcs);
}

function velocityBrake(s0: State, dir: number, L: Limits): { s: State; t: number } {
  const m = mirror(s0, dir);
  // Falling (a ≤ 0): v down to V, or v − a²/2J (the velocity +J would stop at) down to −V.
  const back = (x: State): boolean => x.a <= 0 && (x.v <= L.V || x.v - (x.a * x.a) / (2 * L.J) <= -L.V);
  const t1 = event(m, -L.J, (m.a + L.A) / L.J, back);
  const s1 = step(m, -L.J, t1);
  const arcs: Arc[] = [{ j: -L.J, t: t1 }];
  if (!back(s1)) arcs.push({ j: 0, t: event(s1, 0, (s1.v + L.V) / L.A + 1, back) });
  return runMirrored(s0, dir, arcs);
}

/** Greatest (dir = 1) or least (dir = −1) position reachable at rest at time T after s. */
function extremeReach(s: State, dir: number, T: number, L: Limits): number {
  const push = driveArcs(s, dir * L.V, L);
  const pushEnd = run(s, push);
  const along = (ts: number): State => {
    let x = s;
    let left = ts;
    for (const arc of push) {
      const dt = Math.min(arc.t, left);
      x = step(x, arc.j, dt);
      left -= dt;
      if (left <= 0) return x;
    }
    return step(x, 0, left); // cruise at dir·V
  };
  const endAfter = (ts: number): { s: State; t: number } => {
    const x = along(ts);
    const r = run(x, driveArcs(x, 0, L));
    return { s: r.s, t: ts + r.t };
  };
  // Bracket the braking moment: the stop must end at T.
  let lo = 0;
  let hi = Math.max(pushEnd.t, T);
  for (let i = 0; i < 200 && hi - lo > 1e-17 * (1 + hi); i++) {
    const mid = (lo + hi) / 2;
    if (endAfter(mid).t > T) hi = mid;
    else lo = mid;
  }
  return endAfter(lo).s.p;
}

/** Minimum duration from (0, v0, a0) to rest at d (same brake rule and 1e-12 gap rule). */
export function referenceDuration(d: number, v0: number, a0: number, V: number, A: number, J: number): number {
  const L = { V, A, J };
  const b = brake({ p: 0, v: v0, a: a0 }, L);
  const stop = run(b.s, driveArcs(b.s, 0, L));
  const gap = d - stop.s.p;
  if (Math.abs(gap) <= 1e-12 * (Math.abs(d) + Math.abs(b.s.p) + Math.abs(stop.s.p - b.s.p))) return b.t + stop.t;
  const dir = gap > 0 ? 1 : -1;
  const reaches = (T: number): boolean => dir * extremeReach(b.s, dir, T, L) >= dir * d;
  let lo = stop.t;
  let hi = 2 * lo + 1;
  while (!reaches(hi)) hi *= 2;
  for (let i = 0; i < 200 && hi - lo > 2e-16 * hi; i++) {
    const mid = (lo + hi) / 2;
    if (reaches(mid)) hi = mid;
    else lo = mid;
  }
  return b.t + hi;
}
