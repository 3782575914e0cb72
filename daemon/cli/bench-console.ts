// `brainstem bench console`: the operator console's bundle size, first load and e-stop latency
// in headless Chromium (daemon/bench/console-bench.ts). Prints JSON with --json or when piped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { runConsoleBench } from '../bench/console-bench.js';
import { findChromium } from '../console/chromium.js';
import { intOption, printBench } from './bench-common.js';
import { CliError } from './exit.js';
import { group, type CommandRegistrar } from './group.js';

interface Options {
  loads: string;
  stops: string;
  chromium?: string;
  json?: boolean;
}

export const registerBenchConsole: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('console')
    .description(
      'operator console: bundle bytes (raw, gzip), first load (login → connected → arm drawn) and e-stop (Esc → arms at rest) in headless Chromium',
    )
    .option('--loads <n>', 'first loads, each in a fresh browser context', '5')
    .option('--stops <n>', 'e-stops, each during a move of the simulated yam', '5')
    .option('--chromium <path>', 'the browser (default: chromium on PATH, or BRAINSTEM_TEST_CHROMIUM)')
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .action(async (opts: Options) => {
      const chromium = opts.chromium ?? findChromium();
      if (!chromium)
        throw new CliError('bench console needs Chromium: apt-get install chromium, or --chromium PATH', 2);
      const dir = mkdtempSync(join(tmpdir(), 'brainstem-bench-console-'));
      try {
        const result = await runConsoleBench({
          dataDir: dir,
          chromium,
          loads: intOption('loads', opts.loads, 1, 1000),
          stops: intOption('stops', opts.stops, 0, 1000),
        });
        printBench(result, opts.json);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
};
