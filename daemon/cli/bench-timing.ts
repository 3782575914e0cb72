// `brainstem bench timing --cases FILE`: solves every case of a timing CSV (Ruckig 1-DOF,
// multi-joint or moving-start format, told apart by the header), compares durations with the
// file's and times the solver. Prints JSON with --json (or when piped), else a short table.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError } from './exit.js';
import { parseTimingCases } from '../bench/timing-cases.js';
import { runTimingBench } from '../bench/timing-bench.js';

export const registerBenchTiming: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('timing')
    .description('time-scaling solver against a cases CSV (Ruckig 1-DOF, multi-joint or moving-start format)')
    .requiredOption('--cases <file>', 'CSV file of cases with reference durations')
    .option('--repeat <n>', 'solves per case between clock reads', '32')
    .option('--json', 'print JSON')
    .action((opts: { cases: string; repeat: string; json?: boolean }) => {
      const repeat = Number(opts.repeat);
      if (!Number.isInteger(repeat) || repeat < 1)
        throw new CliError(`--repeat must be an integer ≥ 1, got "${opts.repeat}"`, 2);
      let text: string;
      try {
        text = readFileSync(opts.cases, 'utf8');
      } catch (err) {
        throw new CliError(
          `--cases ${opts.cases}: cannot read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
          2,
        );
      }
      const parsed = parseTimingCases(text);
      if (!parsed.ok) throw new CliError(`--cases ${opts.cases}: ${parsed.message}`, 2);
      // Warm-up pass so the JIT has compiled the solvers before the timed pass.
      runTimingBench(parsed.cases, 1, process.hrtime.bigint);
      const result = runTimingBench(parsed.cases, repeat, process.hrtime.bigint);
      if (opts.json || !process.stdout.isTTY) {
        process.stdout.write(JSON.stringify(result) + '\n');
        return;
      }
      const rows: [string, string][] = [
        ['format', `${result.format} (${result.joints} joint${result.joints > 1 ? 's' : ''})`],
        ['cases', String(result.cases)],
        [
          'max relative duration error',
          result.max_rel_duration_err === null
            ? `${result.rejected} rejected`
            : result.max_rel_duration_err.toExponential(2),
        ],
        ['worst case', String(result.worst_case)],
        ['median µs per case', result.median_us.toFixed(3)],
      ];
      for (const [k, v] of rows) process.stdout.write(`${k.padEnd(30)} ${v}\n`);
    });
};
