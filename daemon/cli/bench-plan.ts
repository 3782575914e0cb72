// `brainstem bench plan`: time to plan a move_eef_chunk end to end (validation, IK path, timing,
// resampling, safety) on seeded random chunks for a robot or a multi-arm setup.
import type { Command } from 'commander';
import { Prng } from '../../robot/common/prng.js';
import { loadDescription } from '../../robot/description/loader.js';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { createPlanner } from '../../robot/motion/planner/planner.js';
import { planBenchCases, runPlanBench } from '../bench/plan-bench.js';
import { CliError } from './exit.js';
import { group, type CommandRegistrar } from './group.js';

interface Options {
  robot: string;
  cases: string;
  poses: string;
  step: string;
  seed: string;
  json?: boolean;
}

function integer(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!(Number.isInteger(n) && n >= min)) throw new CliError(`${flag} must be an integer ≥ ${min}, got "${value}"`, 2);
  return n;
}

export const registerBenchPlan: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('plan')
    .description('µs to plan a Cartesian chunk end to end (median, p99) on seeded random chunks')
    .option('--robot <name>', 'robot or setup config in configs/robots/', 'ur5e')
    .option('--cases <n>', 'number of chunks', '200')
    .option('--poses <n>', 'targets per chunk (per arm)', '10')
    .option('--step <rad>', 'largest joint change between targets', '0.05')
    .option('--seed <n>', 'case generator seed', '1')
    .option('--json', 'print JSON')
    .action((opts: Options) => {
      const cases = integer('--cases', opts.cases, 1);
      const poses = integer('--poses', opts.poses, 1);
      const seed = integer('--seed', opts.seed, 0);
      const step = Number(opts.step);
      if (!(step > 0 && step < Infinity)) throw new CliError(`--step must be a positive number, got "${opts.step}"`, 2);
      const description = loadDescription(opts.robot);
      if (!description.ok) throw new CliError(description.issues.map((i) => formatIssue(i)).join('\n'), 2);
      let planner;
      try {
        planner = createPlanner(description.value);
      } catch (err) {
        throw new CliError((err as Error).message, 2);
      }
      const list = planBenchCases(description.value, { cases, poses, step, rng: new Prng(seed) });
      if (list.length === 0) throw new CliError(`no collision-free start found for "${opts.robot}"`, 1);
      const clock = (): number => performance.now() / 1000;
      const cpuClock = (): number => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1e6;
      };
      const result = runPlanBench(planner, list, clock, cpuClock, Math.min(50, list.length));
      const round = (x: number): number => Math.round(x * 100) / 100;
      const report = {
        robot: opts.robot,
        arms: planner.arms.length,
        joints: planner.arms.map((a) => a.joints.length),
        poses,
        step,
        seed,
        ...result,
        median_us: round(result.median_us),
        p99_us: round(result.p99_us),
        median_cpu_us: round(result.median_cpu_us),
        p99_cpu_us: round(result.p99_cpu_us),
        mean_cpu_us: round(result.mean_cpu_us),
        mean_motion_s: round(result.mean_motion_s),
        mean_path_samples: round(result.mean_path_samples),
        mean_reference_samples: round(result.mean_reference_samples),
      };
      if (opts.json || !process.stdout.isTTY) {
        process.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const rows: [string, string][] = [
        ['robot', `${opts.robot} (${planner.arms.map((a) => `${a.name}: ${a.joints.length} joints`).join(', ')})`],
        [
          'chunks',
          `${result.cases} × ${poses} poses, ${result.planned} planned${Object.keys(result.codes).length ? ` (${JSON.stringify(result.codes)})` : ''}`,
        ],
        ['median', `${result.median_us.toFixed(0)} µs`],
        ['p99', `${result.p99_us.toFixed(0)} µs`],
        [
          'cpu',
          `${result.median_cpu_us.toFixed(0)} µs per plan (median; p99 ${result.p99_cpu_us.toFixed(0)}, mean ${result.mean_cpu_us.toFixed(0)})`,
        ],
        [
          'motion',
          `${result.mean_motion_s.toFixed(2)} s, ${result.mean_path_samples.toFixed(0)} IK samples, ${result.mean_reference_samples.toFixed(0)} references (mean)`,
        ],
      ];
      for (const [k, v] of rows) process.stdout.write(`${k.padEnd(8)} ${v}\n`);
    });
};
