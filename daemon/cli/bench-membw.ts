// `brainstem bench membw`: memory read bandwidth with 1..N threads (native read loop), the
// roofline decode speed is compared with. JSON with --json (or when piped), else a table.
import { availableParallelism } from 'node:os';
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError } from './exit.js';
import { intOption, printBench } from './bench-common.js';
import { NativeLoadError, loadNative } from '../native/binding.js';

export interface MembwReport {
  buffer_bytes: number;
  passes: number;
  /** GB/s (1e9 bytes) by thread count. */
  read_gb_s: Record<string, number>;
  best_read_gb_s: number;
  best_threads: number;
}

export async function runMembw(maxThreads: number, mib: number, passes: number): Promise<MembwReport> {
  const addon = loadNative();
  const report: MembwReport = { buffer_bytes: 0, passes, read_gb_s: {}, best_read_gb_s: 0, best_threads: 1 };
  for (let t = 1; t <= maxThreads; t++) {
    const r = await addon.membw({ threads: t, mib, passes });
    report.buffer_bytes = r.bytes;
    report.read_gb_s[String(t)] = r.readGbS;
    if (r.readGbS > report.best_read_gb_s) {
      report.best_read_gb_s = r.readGbS;
      report.best_threads = t;
    }
  }
  return report;
}

export const registerBenchMembw: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('membw')
    .description('memory read bandwidth with 1..N threads (native read loop)')
    .option('--threads <n>', 'largest thread count (default: available cores)')
    .option('--mib <n>', 'buffer size in MiB (well above the last-level cache)', '256')
    .option('--passes <n>', 'passes per thread count; the best is kept', '3')
    .option('--json', 'print JSON')
    .action(async (opts: { threads?: string; mib: string; passes: string; json?: boolean }) => {
      const threads = opts.threads === undefined ? availableParallelism() : intOption('threads', opts.threads, 1, 1024);
      try {
        printBench(
          await runMembw(threads, intOption('mib', opts.mib, 1, 65536), intOption('passes', opts.passes, 1, 100)),
          opts.json,
        );
      } catch (err) {
        if (err instanceof NativeLoadError) throw new CliError(err.message, 1);
        throw err;
      }
    });
};
