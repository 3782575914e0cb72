// Timing benchmark core: solves every case of a parsed cases file, takes the largest relative
// duration error against the file and the median solve time per case (µs).
import { CaseSolver, type TimingCases } from './timing-cases.js';

export interface TimingBenchResult {
  format: string;
  cases: number;
  joints: number;
  max_rel_duration_err: number | null;
  worst_case: string | null;
  rejected: number;
  median_us: number;
}

/** Solves and times every case; `now` is a nanosecond clock (process.hrtime.bigint, or a fake). */
export function runTimingBench(cases: TimingCases, repeat: number, now: () => bigint): TimingBenchResult {
  const solver = new CaseSolver(cases.joints);
  let maxErr = -1,
    worst: string | null = null,
    rejected = 0;
  for (let i = 0; i < cases.count; i++) {
    const T = solver.solve(cases, i);
    if (Number.isNaN(T)) {
      if (rejected++ === 0) worst = cases.ids[i];
      continue;
    }
    const ref = cases.duration[i];
    const err = ref === 0 ? Math.abs(T) : Math.abs(T - ref) / Math.abs(ref);
    if (err > maxErr && rejected === 0) {
      maxErr = err;
      worst = cases.ids[i];
    }
  }
  // Timed pass: each case `repeat` times between clock reads, so clock overhead is amortised.
  const perCase = new Float64Array(cases.count);
  for (let i = 0; i < cases.count; i++) {
    const t0 = now();
    for (let k = 0; k < repeat; k++) solver.solve(cases, i);
    perCase[i] = Number(now() - t0) / 1000 / repeat;
  }
  perCase.sort();
  const mid = cases.count >> 1;
  const median = cases.count % 2 === 1 ? perCase[mid] : 0.5 * (perCase[mid - 1] + perCase[mid]);
  return {
    format: cases.format,
    cases: cases.count,
    joints: cases.joints,
    max_rel_duration_err: rejected > 0 ? null : maxErr,
    worst_case: worst,
    rejected,
    median_us: median,
  };
}
