// `bench plan` core: seeded Cartesian chunks for any robot or setup, and the time to plan each
// end to end (validation, IK path, timing, resampling, safety). A chunk is a random walk in
// joint space from a collision-free start, every waypoint checked statically safe, whose FK
// poses become the targets, so a chunk is feasible by construction up to path effects.
import type { RobotDescription, SetupDescription } from '../../robot/description/types.js';
import { forwardKinematics } from '../../robot/kinematics/forward.js';
import type { Rng } from '../../robot/kinematics/ik.js';
import { quat, quatFromTransform } from '../../robot/math/quaternion.js';
import {
  checkTrajectories,
  robotSafety,
  setupSafety,
  type ArmSafetyModel,
} from '../../robot/safety/trajectory-check.js';
import { percentile } from './percentile.js';
import type { CartesianRequest, Planner, PoseTarget } from '../../robot/motion/planner/types.js';

export interface PlanBenchOptions {
  cases: number;
  /** Targets per chunk per arm. */
  poses: number;
  /** Largest joint change between waypoints (rad or m). */
  step: number;
  rng: Rng;
}

/** Start joints within this distance of mid-range (rad), so starts are neither folded nor stretched. */
const START_SPREAD = 1;
const MAX_TRIES = 10_000;

export function planBenchCases(
  description: RobotDescription | SetupDescription,
  o: PlanBenchOptions,
): CartesianRequest[] {
  const { arms, envelope } = 'arms' in description ? setupSafety(description) : robotSafety(description);
  const cases: CartesianRequest[] = [];
  for (let tries = 0; cases.length < o.cases && tries < MAX_TRIES; tries++) {
    const walks = arms.map((arm) => walk(arm, o));
    const times = Array.from({ length: o.poses + 1 }, (_, k) => k);
    const check = checkTrajectories(
      arms,
      walks.map((q) => ({ times, q })),
      envelope,
    );
    if (!check.ok) continue;
    const measured: Record<string, number[]> = {};
    const targets: Record<string, PoseTarget[]> = {};
    arms.forEach((arm, a) => {
      const n = arm.chain.dof;
      measured[arm.name] = Array.from(walks[a].subarray(0, n));
      targets[arm.name] = times.slice(1).map((k) => {
        const T = forwardKinematics(arm.chain, walks[a].subarray(k * n, (k + 1) * n), new Float64Array(12));
        return { position: [T[3], T[7], T[11]], orientation: Array.from(quatFromTransform(quat(), T)) };
      });
    });
    cases.push({ measured, targets });
  }
  return cases;
}

/** (poses + 1) × dof joint waypoints: a random start near mid-range, then random steps inside the limits. */
function walk(arm: ArmSafetyModel, o: PlanBenchOptions): Float64Array {
  const c = arm.chain,
    n = c.dof;
  const q = new Float64Array((o.poses + 1) * n);
  const mid = c.midRange();
  for (let j = 0; j < n; j++) {
    const lo = Math.max(c.lower[j], mid[j] - START_SPREAD),
      hi = Math.min(c.upper[j], mid[j] + START_SPREAD);
    q[j] = lo + (hi - lo) * o.rng.next();
  }
  for (let k = 1; k <= o.poses; k++) {
    for (let j = 0; j < n; j++) {
      const x = q[(k - 1) * n + j] + o.step * (2 * o.rng.next() - 1);
      q[k * n + j] = Math.min(c.upper[j], Math.max(c.lower[j], x));
    }
  }
  return q;
}

export interface PlanBenchResult {
  cases: number;
  /** Plans that came back ok; the others are counted by code. */
  planned: number;
  codes: Record<string, number>;
  median_us: number;
  p99_us: number;
  /** Process CPU time per plan (less sensitive to a busy machine than wall time: time spent
   * waiting for a core is not counted, V8's helper threads are). */
  median_cpu_us: number;
  p99_cpu_us: number;
  mean_cpu_us: number;
  mean_motion_s: number;
  mean_path_samples: number;
  mean_reference_samples: number;
}

/** clock: wall time (s); cpuClock: this process's CPU time (s). */
export function runPlanBench(
  planner: Planner,
  cases: CartesianRequest[],
  clock: () => number,
  cpuClock: () => number,
  warmup: number,
): PlanBenchResult {
  for (let i = 0; i < warmup; i++) planner.planCartesian(cases[i % cases.length]);
  const times = new Float64Array(cases.length);
  const cpuTimes = new Float64Array(cases.length);
  const codes: Record<string, number> = {};
  let planned = 0,
    motion = 0,
    pathSamples = 0,
    refSamples = 0;
  cases.forEach((c, i) => {
    const c0 = cpuClock();
    const t0 = clock();
    const r = planner.planCartesian(c);
    times[i] = (clock() - t0) * 1e6;
    cpuTimes[i] = (cpuClock() - c0) * 1e6;
    if (!r.ok) {
      codes[r.code] = (codes[r.code] ?? 0) + 1;
      return;
    }
    planned++;
    motion += r.duration;
    pathSamples += r.summary.pathSamples;
    refSamples += r.summary.samples;
  });
  const cpu = cpuTimes.reduce((sum, x) => sum + x, 0);
  times.sort();
  cpuTimes.sort();
  const per = (x: number): number => (planned ? x / planned : 0);
  return {
    cases: cases.length,
    planned,
    codes,
    median_us: percentile(times, 50),
    p99_us: percentile(times, 99),
    median_cpu_us: percentile(cpuTimes, 50),
    p99_cpu_us: percentile(cpuTimes, 99),
    mean_cpu_us: cases.length ? cpu / cases.length : 0,
    mean_motion_s: per(motion),
    mean_path_samples: per(pathSamples),
    mean_reference_samples: per(refSamples),
  };
}
