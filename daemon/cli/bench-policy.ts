// `brainstem bench policy --provider local --model DIR`: per decision of policy episodes on a
// simulated yam, the prompt tokens, the tokens actually prefilled, decode tokens, time to the tool
// request, planning, motion and the daemon's own overhead (daemon/bench/policy-bench.ts). JSON.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { runPolicyBench } from '../bench/policy-bench.js';
import { intOption, printBench } from './bench-common.js';
import { CliError } from './exit.js';
import { type CommandRegistrar, group } from './group.js';

interface Flags {
  provider: string;
  model?: string;
  decisions: string;
  threads: string;
  context: string;
  windowTurns?: string;
  keepImages?: string;
  summaryBlock?: string;
  json?: boolean;
}

export const registerBenchPolicy: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('policy')
    .description(
      'policy episodes on a simulated yam with a served model: per decision the prompt, prefilled and decode tokens, time to the tool request, planning, motion and the daemon overhead',
    )
    .option('--provider <kind>', 'provider (only local: a model this daemon serves)', 'local')
    .option('--model <dir>', 'model folder (e.g. from brainstem models synth); required')
    .option('--decisions <n>', 'decisions to make (episodes follow one another until then)', '24')
    .option('--threads <n>', 'CPU threads of the model (0 = one per core)', '0')
    .option('--context <n>', 'context length of the model (tokens)', '16384')
    .option('--window-turns <n>', 'policy.window_turns (default the config’s)')
    .option('--keep-images <n>', 'policy.keep_images (default the config’s)')
    .option('--summary-block <n>', 'policy.summary_block (default the config’s)')
    .option('--json', 'print JSON')
    .action(async (f: Flags) => {
      if (f.provider !== 'local') throw new CliError(`--provider: only local is benchmarked, got "${f.provider}"`, 2);
      if (!f.model) throw new CliError('--model: is required (a model folder)', 2);
      const dir = mkdtempSync(join(tmpdir(), 'brainstem-bench-policy-'));
      try {
        const result = await runPolicyBench({
          dataDir: dir,
          model: resolve(f.model),
          decisions: intOption('decisions', f.decisions, 1, 10_000),
          threads: intOption('threads', f.threads, 0, 1024),
          contextLength: intOption('context', f.context, 1024),
          ...(f.windowTurns !== undefined ? { windowTurns: intOption('window-turns', f.windowTurns, 1, 1000) } : {}),
          ...(f.keepImages !== undefined ? { keepImages: intOption('keep-images', f.keepImages, 0, 64) } : {}),
          ...(f.summaryBlock !== undefined
            ? { summaryBlock: intOption('summary-block', f.summaryBlock, 1, 1000) }
            : {}),
        });
        printBench(result, f.json);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
};
