// Shared test helpers for the timing suites: fixture loading and profile invariants.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type TimingCases, parseTimingCases } from '../../../../daemon/bench/timing-cases.js';
import { type JerkProfile, newKinState, sampleProfile } from '../../../../robot/motion/timing/profile.js';

export const fixtureDir = fileURLToPath(new URL('../../../../../test/fixtures/oracles/', import.meta.url));

export function loadCases(name: string): TimingCases {
  const r = parseTimingCases(readFileSync(fixtureDir + name, 'utf8'));
  if (!r.ok) throw new Error(`${name}: ${r.message}`);
  return r.cases;
}

export interface ProfileLimits {
  V: number;
  A: number;
  J: number;
}

/**
 * Invariants of every profile; returns the first violation or '' when all hold:
 * non-negative segments, monotone times, continuity of p/v/a across segment ends (sampled just
 * before and at each boundary), |j| ≤ J, |a| ≤ A within 1e-9 relative from segment `from` on
 * (after a brake), |v| ≤ V except while falling from a start above V (as moving starts may).
 */
export function profileViolation(prof: JerkProfile, lim: ProfileLimits, from = 0): string {
  const tol = 1e-9;
  const s = newKinState();
  for (let i = 0; i < prof.count; i++) {
    if (!(prof.dur[i] >= 0)) return `segment ${i} has duration ${prof.dur[i]}`;
    if (!(prof.t[i + 1] >= prof.t[i])) return `time goes back at segment ${i}`;
    if (Math.abs(prof.jerk[i]) > lim.J * (1 + tol)) return `segment ${i} jerk ${prof.jerk[i]} > ${lim.J}`;
  }
  for (let i = 1; i < prof.count; i++) {
    if (prof.dur[i - 1] === 0) continue;
    const tb = prof.t[i];
    const eps = 1e-12 * Math.max(1, tb);
    sampleProfile(prof, tb - eps, s);
    // Rounding plus what the state may legitimately change within eps.
    const scale =
      1e-9 * (1 + Math.abs(s.p) + Math.abs(s.v) + Math.abs(s.a)) +
      2 * eps * (Math.abs(s.v) + Math.abs(s.a) + Math.abs(s.j));
    if (Math.abs(s.p - prof.p[i]) > scale || Math.abs(s.v - prof.v[i]) > scale || Math.abs(s.a - prof.a[i]) > scale) {
      return `discontinuity at segment ${i} (t = ${tb})`;
    }
  }
  for (let i = from; i <= prof.count; i++) {
    if (Math.abs(prof.a[i]) > lim.A * (1 + tol)) return `|a| = ${Math.abs(prof.a[i])} > ${lim.A} at boundary ${i}`;
  }
  const steps = 400;
  let prevExcess = Infinity,
    inside = false;
  for (let k = 0; k <= steps; k++) {
    const t = prof.t[from] + ((prof.duration - prof.t[from]) * k) / steps;
    sampleProfile(prof, t, s);
    if (Math.abs(s.a) > lim.A * (1 + tol)) return `|a| = ${Math.abs(s.a)} > ${lim.A} at t = ${t}`;
    const excess = Math.abs(s.v) - lim.V * (1 + tol);
    if (excess > 0 && (inside || excess > prevExcess + 1e-12))
      return `|v| = ${Math.abs(s.v)} > ${lim.V} and growing at t = ${t}`;
    if (excess <= 0) inside = true;
    prevExcess = excess;
  }
  return '';
}

/** |end position − target| and |end v|, |end a| by integration, before the exact snap. */
export function endViolation(prof: JerkProfile, target: number, tol: number): string {
  if (prof.endError > tol) return `integrated end misses the target by ${prof.endError}`;
  const n = prof.count;
  if (prof.p[n] !== target || prof.v[n] !== 0 || prof.a[n] !== 0) {
    return `end state (${prof.p[n]}, ${prof.v[n]}, ${prof.a[n]}) is not (${target}, 0, 0)`;
  }
  // The last segment itself must arrive at rest (not only the snapped end state).
  const s = newKinState();
  sampleProfile(prof, prof.duration * (1 - 1e-13), s);
  const scale = 1e-6 * (1 + Math.abs(target));
  if (Math.abs(s.v) > scale || Math.abs(s.a) > scale) return `arrives with v = ${s.v}, a = ${s.a}`;
  return '';
}
