// `brainstem bench vision --model DIR`: preprocessing ms, encoder ms, image tokens and spliced
// prefill tok/s per image size (daemon/bench/vision-bench.ts). Prints JSON.
import { availableParallelism } from 'node:os';
import type { Command } from 'commander';
import { runVisionBench } from '../bench/vision-bench.js';
import { intOption, printBench } from './bench-common.js';
import { CliError } from './exit.js';
import { type CommandRegistrar, group } from './group.js';

interface Flags {
  model: string;
  sizes: string;
  threads: string;
  towerThreads: string;
  json?: boolean;
}

function parseSizes(raw: string): [number, number][] {
  return raw.split(',').map((s) => {
    const m = /^(\d+)x(\d+)$/.exec(s.trim());
    if (!m || Number(m[1]) < 1 || Number(m[2]) < 1 || Number(m[1]) > 16384 || Number(m[2]) > 16384)
      throw new CliError(`--sizes must be WxH[,WxH…] with sides in [1, 16384], got "${s}"`, 2);
    return [Number(m[1]), Number(m[2])];
  });
}

export const registerBenchVision: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('vision')
    .description(
      'vision tower and spliced prefill per image size: preprocessing ms, encoder ms, image tokens, prefill tok/s',
    )
    .requiredOption('--model <dir>', 'a model folder with a vision tower (e.g. models synth --arch qwen3_vl_moe)')
    .option('--sizes <list>', 'image sizes WxH, comma-separated', '448x448,896x896,1280x720')
    .option('--threads <n>', 'engine threads (0 = one per core)', '0')
    .option('--tower-threads <n>', "onnxruntime threads (0 = onnxruntime's default)", '0')
    .option('--json', 'print JSON')
    .action(async (f: Flags) => {
      const threads = intOption('threads', f.threads, 0, 256);
      const result = await runVisionBench({
        model: f.model,
        sizes: parseSizes(f.sizes),
        threads: threads > 0 ? threads : availableParallelism(),
        towerThreads: intOption('tower-threads', f.towerThreads, 0, 256),
      });
      printBench(result, f.json);
    });
};
