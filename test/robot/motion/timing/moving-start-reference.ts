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

/** Brake rule: |a| back to A, then jerk against the motion until |peak| ≤ V. */
function brake(s: State, L: Limits): { s: State; t: number } {
  let t = 0;
  if (Math.abs(s.a) > L.A) {
    const j = s.a > 0 ? -L.J : L.J;
    const dt = (Math.abs(s.a) - L.A) / L.J;
    s = step(s, j, dt);
    t += dt;
  }
  const pk = peak(s, L.J);
  if (Math.abs(pk) <= L.V) return { s, t };
  const dir = pk > 0 ? 1 : -1;
  const ok = (x: State): boolean => dir * peak(x, L.J) <= L.V;
  const t1 = event(s, -dir * L.J, (L.A + dir * s.a) / L.J, ok);
  s = step(s, -dir * L.J, t1);
  t += t1;
  if (!ok(s)) {
    const t2 = event(s, 0, (Math.abs(s.v) + L.V) / L.A + 1, ok);
    s = step(s, 0, t2);
    t += t2;
  }
  return { s, t };
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
