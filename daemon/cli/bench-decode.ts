// `brainstem bench decode --model DIR`: prefill and greedy-decode throughput, time to first
// token, memory and bytes read per token. JSON with --json (or when piped), else a table.
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError } from './exit.js';
import { intOption, printBench } from './bench-common.js';
import { runDecodeBench } from '../engine/decode-bench.js';
import { EngineError } from '../engine/native-model.js';
import { NativeLoadError } from '../native/binding.js';

export const registerBenchDecode: CommandRegistrar = (program: Command) => {
  group(program, 'bench', 'Benchmarks that print JSON')
    .command('decode')
    .description('Prefill and decode speed, time to first token, memory and bytes read per token of a model folder')
    .requiredOption('--model <dir>', 'model folder (config.json + safetensors)')
    .option('--threads <n>', 'CPU threads for the kernels', '1')
    .option('--prompt <n>', 'prompt tokens (seeded random ids)', '128')
    .option('--gen <n>', 'greedy decode steps', '64')
    .option('--top-k <k>', 'routing width override (experts per token)')
    .option('--seed <n>', 'prompt seed', '1')
    .option('--json', 'print JSON')
    .action(async (opts: { model: string; threads: string; prompt: string; gen: string; topK?: string; seed: string; json?: boolean }) => {
      const options = {
        model: opts.model,
        threads: intOption('threads', opts.threads, 1, 256),
        prompt: intOption('prompt', opts.prompt, 1),
        gen: intOption('gen', opts.gen, 0),
        seed: intOption('seed', opts.seed, 0),
        ...(opts.topK !== undefined ? { topK: intOption('top-k', opts.topK, 1) } : {}),
      };
      try {
        printBench(await runDecodeBench(options), opts.json);
      } catch (err) {
        if (err instanceof EngineError || err instanceof NativeLoadError) throw new CliError(err.message, 1);
        throw err;
      }
    });
};
