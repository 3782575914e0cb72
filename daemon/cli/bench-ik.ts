// `brainstem bench ik`: IK solve rate and time per solve on a CSV of cases (ik-ur5e.csv format).
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { Prng } from '../../robot/common/prng.js';
import { loadRobot } from '../../robot/description/loader.js';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { KinematicChain } from '../../robot/kinematics/chain.js';
import { IkSolver } from '../../robot/kinematics/ik.js';
import { parseIkCases } from '../bench/ik-cases.js';
import { runIkBenchmark } from '../bench/ik-bench.js';
import { CliError } from './exit.js';
import { group, type CommandRegistrar } from './group.js';

interface Options {
  robot: string;
  cases: string;
  seedMode: string;
  restarts?: string;
  budgetMs?: string;
  limit?: string;
  seed: string;
  json?: boolean;
}

function positiveNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(Number.isFinite(n) && n > 0)) throw new CliError(`${flag} must be a positive number, got "${value}"`, 2);
  return n;
}

export const registerBenchIk: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('ik')
    .description('IK solve rate (≤ accept tolerances, inside limits), median and p99 µs per solve')
    .requiredOption('--robot <name>', 'robot config in configs/robots/')
    .requiredOption('--cases <file>', 'CSV: case,q0..qN,px,py,pz,qx,qy,qz,qw,seed0..seedN')
    .option('--seed-mode <mode>', "csv (each case's seed) or mid (middle of the joint ranges)", 'csv')
    .option('--restarts <on|off>', 'random restarts within the cold-start budget (default: on for mid, off for csv)')
    .option('--budget-ms <ms>', "cold-start time budget per solve (default: the robot config's)")
    .option('--limit <n>', 'only the first n cases')
    .option('--seed <n>', 'restart rng seed', '1')
    .option('--json', 'print JSON')
    .action((opts: Options) => {
      if (opts.seedMode !== 'csv' && opts.seedMode !== 'mid')
        throw new CliError(`--seed-mode must be csv or mid, got "${opts.seedMode}"`, 2);
      if (opts.restarts !== undefined && opts.restarts !== 'on' && opts.restarts !== 'off')
        throw new CliError(`--restarts must be on or off, got "${opts.restarts}"`, 2);
      const budgetMs = positiveNumber('--budget-ms', opts.budgetMs);
      const limit = positiveNumber('--limit', opts.limit);
      const robot = loadRobot(opts.robot);
      if (!robot.ok) throw new CliError(robot.issues.map((i) => formatIssue(i)).join('\n'), 2);
      let text: string;
      try {
        text = readFileSync(opts.cases, 'utf8');
      } catch (err) {
        throw new CliError(`cannot read --cases ${opts.cases}: ${(err as Error).message}`, 2);
      }
      const parsed = parseIkCases(text);
      if (!parsed.ok) throw new CliError(`${opts.cases}: ${parsed.error}`, 2);
      const chain = new KinematicChain(robot.value);
      if (parsed.dof !== chain.dof)
        throw new CliError(`${opts.cases} has ${parsed.dof} joints, robot "${opts.robot}" has ${chain.dof}`, 2);
      const cases = limit ? parsed.cases.slice(0, Math.floor(limit)) : parsed.cases;
      const restarts = (opts.restarts ?? (opts.seedMode === 'mid' ? 'on' : 'off')) === 'on';
      const clock = (): number => performance.now() / 1000;
      const budget = budgetMs !== undefined ? budgetMs / 1000 : robot.value.ik.coldStartBudget;
      const result = runIkBenchmark(new IkSolver(chain, robot.value.ik), cases, {
        seedMode: opts.seedMode,
        clock,
        coldStart: restarts ? { rng: new Prng(Number(opts.seed) >>> 0), clock, budget } : undefined,
        warmup: Math.min(1000, cases.length),
      });
      const round = (x: number): number => Math.round(x * 100) / 100;
      const report = {
        robot: opts.robot,
        seed_mode: opts.seedMode,
        restarts,
        budget_ms: restarts ? budget * 1000 : 0,
        ...result,
        median_us: round(result.median_us),
        p99_us: round(result.p99_us),
      };
      if (opts.json || !process.stdout.isTTY) {
        process.stdout.write(`${JSON.stringify(report)}\n`);
        return;
      }
      const rows: [string, string][] = [
        ['robot', opts.robot],
        ['seed mode', `${opts.seedMode}${restarts ? `, restarts within ${report.budget_ms} ms` : ', no restarts'}`],
        ['solved', `${result.solved} / ${result.cases} (${(100 * result.solve_rate).toFixed(2)}%)`],
        ['median', `${result.median_us.toFixed(1)} µs`],
        ['p99', `${result.p99_us.toFixed(1)} µs`],
        ['iterations', result.mean_iterations.toFixed(2)],
        ['attempts', result.mean_attempts.toFixed(2)],
      ];
      for (const [k, v] of rows) process.stdout.write(`${k.padEnd(12)} ${v}\n`);
    });
};
