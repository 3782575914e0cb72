// `brainstem bench lora --model DIR --adapter DIR`: decode tok/s with and without an unmerged
// adapter, interleaved token by token on one loaded model, and the adapter's overhead.
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError } from './exit.js';
import { intOption, printBench } from './bench-common.js';
import { runLoraBench } from '../bench/lora-bench.js';
import { AdapterError } from '../engine/adapters/plan.js';
import { EngineError } from '../engine/native-model.js';
import { NativeLoadError } from '../native/binding.js';

export const registerBenchLora: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('lora')
    .description('decode speed with and without an unmerged LoRA adapter (interleaved), and its overhead')
    .requiredOption('--model <dir>', 'model folder (config.json + safetensors)')
    .requiredOption('--adapter <dir>', 'LoRA adapter (PEFT, mlx-lm or Edge0)')
    .option('--threads <n>', 'CPU threads for the kernels', '1')
    .option('--prompt <n>', 'prompt tokens (seeded random ids)', '16')
    .option('--gen <n>', 'decode steps per side', '16')
    .option('--seed <n>', 'prompt seed', '1')
    .option('--json', 'print JSON')
    .action(
      async (opts: {
        model: string;
        adapter: string;
        threads: string;
        prompt: string;
        gen: string;
        seed: string;
        json?: boolean;
      }) => {
        const options = {
          model: opts.model,
          adapter: opts.adapter,
          threads: intOption('threads', opts.threads, 1, 256),
          prompt: intOption('prompt', opts.prompt, 1),
          gen: intOption('gen', opts.gen, 1),
          seed: intOption('seed', opts.seed, 0),
        };
        try {
          printBench(await runLoraBench(options), opts.json);
        } catch (err) {
          if (err instanceof EngineError || err instanceof NativeLoadError || err instanceof AdapterError)
            throw new CliError(err.message, 1);
          throw err;
        }
      },
    );
};
