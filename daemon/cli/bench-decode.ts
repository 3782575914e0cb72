// `brainstem bench decode --model DIR`: prefill and greedy-decode throughput, time to first
// token, memory and bytes read per token. JSON with --json (or when piped), else a table.
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError } from './exit.js';
import { intOption, printBench } from './bench-common.js';
import { type DecodeBenchOptions, runDecodeBench } from '../engine/decode-bench.js';
import { AdapterError } from '../engine/adapters/plan.js';
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
    .option('--backend <name>', 'kernel set (auto = fastest usable; see doctor)', 'auto')
    .option('--kv-cache <type>', 'KV cache type: f32 | f16', 'f32')
    .option('--adapter <dir>', 'run with this LoRA adapter, unmerged (PEFT, mlx-lm or Edge0)')
    .option('--json', 'print JSON')
    .action(async (opts: {
      model: string; threads: string; prompt: string; gen: string; topK?: string; seed: string; backend: string; kvCache: string;
      adapter?: string; json?: boolean;
    }) => {
      if (opts.kvCache !== 'f32' && opts.kvCache !== 'f16') throw new CliError(`--kv-cache must be f32 or f16, got "${opts.kvCache}"`, 2);
      const options: DecodeBenchOptions = {
        model: opts.model,
        threads: intOption('threads', opts.threads, 1, 256),
        prompt: intOption('prompt', opts.prompt, 1),
        gen: intOption('gen', opts.gen, 0),
        seed: intOption('seed', opts.seed, 0),
        backend: opts.backend,
        kvCache: opts.kvCache,
        ...(opts.topK !== undefined ? { topK: intOption('top-k', opts.topK, 1) } : {}),
        ...(opts.adapter !== undefined ? { adapter: opts.adapter } : {}),
      };
      try {
        printBench(await runDecodeBench(options), opts.json);
      } catch (err) {
        if (err instanceof EngineError || err instanceof NativeLoadError || err instanceof AdapterError) throw new CliError(err.message, 1);
        throw err;
      }
    });
};
