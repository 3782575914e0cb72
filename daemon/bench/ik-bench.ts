// Runs IK over a case list and scores it independently of the solver's own verdict: a case is
// solved when FK of the answer is within the acceptance tolerances and inside the joint limits.
import type { ColdStart, IkSolver } from '../../robot/kinematics/ik.js';
import type { IkCase } from './ik-cases.js';
import { forwardKinematics } from '../../robot/kinematics/forward.js';
import { poseDistance } from '../../robot/kinematics/pose-error.js';
import { percentile } from './percentile.js';

export interface IkBenchmarkOptions {
  /** csv: each case's seed; mid: the middle of every joint range (all zero for ±2π joints). */
  seedMode: 'csv' | 'mid';
  /** Random restarts for cold starts (rng, clock, budget); none when omitted. */
  coldStart?: ColdStart;
  /** Monotonic clock in seconds, for the per-solve times. */
  clock: () => number;
  /** Untimed solves first, so the JIT has compiled the solver. */
  warmup?: number;
}

export interface IkBenchmarkResult {
  cases: number;
  solved: number;
  solve_rate: number;
  median_us: number;
  p99_us: number;
  mean_iterations: number;
  mean_attempts: number;
  /** Case ids that were not solved (at most 20). */
  unsolved: number[];
}

export function runIkBenchmark(solver: IkSolver, cases: IkCase[], options: IkBenchmarkOptions): IkBenchmarkResult {
  const chain = solver.chain;
  const mid = chain.midRange();
  const tcp = new Float64Array(12);
  const seedOf = (c: IkCase): Float64Array => (options.seedMode === 'mid' ? mid : c.seed);
  for (let i = 0; i < Math.min(options.warmup ?? 0, cases.length); i++)
    solver.solve(cases[i].target, seedOf(cases[i]), options.coldStart);
  const times = new Float64Array(cases.length);
  let solved = 0,
    iterations = 0,
    attempts = 0;
  const unsolved: number[] = [];
  const tol = solver.tolerances;
  cases.forEach((c, k) => {
    const t0 = options.clock();
    const r = solver.solve(c.target, seedOf(c), options.coldStart);
    times[k] = (options.clock() - t0) * 1e6;
    iterations += r.iterations;
    attempts += r.attempts;
    const d = poseDistance(c.target, forwardKinematics(chain, r.q, tcp));
    if (d.position <= tol.acceptPosition && d.rotation <= tol.acceptRotation && chain.withinLimits(r.q)) solved++;
    else if (unsolved.length < 20) unsolved.push(c.id);
  });
  times.sort();
  const n = cases.length;
  return {
    cases: n,
    solved,
    solve_rate: n ? solved / n : 0,
    median_us: percentile(times, 50),
    p99_us: percentile(times, 99),
    mean_iterations: n ? iterations / n : 0,
    mean_attempts: n ? attempts / n : 0,
    unsolved,
  };
}
