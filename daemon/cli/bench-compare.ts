// `brainstem bench compare --model DIR [--llama native,prebuilt]`: our engine and llama.cpp on the
// same synthetic model (MLX folder vs its GGUF Q4_0 / Q8_0 export), arms taking turns for several rounds;
// medians of prefill (per prompt length) and decode tok/s, ratios and roofline fractions. JSON
// with --json (or when piped).
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError } from './exit.js';
import { activationBitsOption, intOption, printBench } from './bench-common.js';
import { runMembw } from './bench-membw.js';
import { LlamaCppMissingError, runCompareBench } from '../bench/compare-bench.js';
import { LlamaBenchError } from '../bench/llama-build.js';
import { loadConfig } from '../config/load.js';
import { EngineError } from '../engine/native-model.js';
import { NativeLoadError } from '../native/binding.js';

interface RawOptions {
  model: string;
  gguf?: string;
  threads: string;
  prompt: string;
  gen: string;
  rounds: string;
  seed: string;
  backend: string;
  kvCache: string;
  activationBits: string;
  llama: string;
  config?: string;
  llamaCuda?: boolean;
  warmEach?: boolean;
  json?: boolean;
}

export const registerBenchCompare: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('compare')
    .description(
      'our engine vs llama.cpp (node-llama-cpp, or llama-bench built on this machine) on the same model: prefill/decode medians, ratios, roofline fractions',
    )
    .requiredOption('--model <dir>', 'model folder (MLX safetensors)')
    .option(
      '--gguf <file>',
      'GGUF for llama.cpp (default: <dir>/model-q8_0.gguf for 8-bit weights, else model-q4_0.gguf; exported when missing)',
    )
    .option('--threads <n>', 'CPU threads for both engines', '2')
    .option(
      '--prompt <list>',
      'prompt lengths to prefill, e.g. 128,512 (seeded random ids); decode follows the first',
      '128',
    )
    .option('--gen <n>', 'greedy decode steps', '64')
    .option('--rounds <n>', 'rounds; each runs every arm, taking turns at going first', '3')
    .option('--seed <n>', 'prompt seed', '1')
    .option('--backend <name>', 'our kernel set (auto = fastest usable)', 'auto')
    .option('--kv-cache <type>', 'KV cache type of both engines: f16 | f32', 'f16')
    .option(
      '--activation-bits <n>',
      'our integer decode activations: 16 | 24 (~100x closer to exact, slower) | 8 (one byte, ~1e-2 off, less compute)',
      '16',
    )
    .option(
      '--llama <list>',
      'llama.cpp arms: prebuilt (node-llama-cpp), native (llama-bench built here for this CPU, cached in <data_dir>/llama.cpp), native-avx2 (built for AVX2 and nothing wider) or a llama-bench path',
      'prebuilt',
    )
    .option('-c, --config <file>', 'config file (for data_dir, where native builds are cached)')
    .option(
      '--llama-cuda',
      "the prebuilt arm on node-llama-cpp's CUDA build, every layer on the GPU (arm prebuilt-cuda)",
    )
    .option(
      '--warm-each',
      'warm each arm right before its timed runs in every round (default: when both copies of the weights do not fit in 3/4 of memory)',
    )
    .option('--json', 'print JSON')
    .action(async (raw: RawOptions) => {
      if (raw.kvCache !== 'f16' && raw.kvCache !== 'f32') {
        throw new CliError(`--kv-cache must be f16 or f32, got "${raw.kvCache}"`, 2);
      }
      const threads = intOption('threads', raw.threads, 1, 256);
      const llama = llamaArms(raw.llama);
      const options = {
        model: raw.model,
        ...(raw.gguf !== undefined ? { gguf: raw.gguf } : {}),
        threads,
        prompts: raw.prompt.split(',').map((p) => intOption('prompt', p.trim(), 1, 1 << 20)),
        gen: intOption('gen', raw.gen, 1),
        rounds: intOption('rounds', raw.rounds, 1, 1000),
        seed: intOption('seed', raw.seed, 0),
        backend: raw.backend,
        kvCache: raw.kvCache,
        activationBits: activationBitsOption(raw.activationBits),
        llama,
        ...(llama.some((a) => a.startsWith('native')) ? { dataDir: loadConfig({ file: raw.config }).data_dir } : {}),
        llamaCuda: raw.llamaCuda === true,
        ...(raw.warmEach ? { warmEach: true } : {}),
        log: (line: string) => process.stderr.write(`${line}\n`),
      } as const;
      try {
        const membw = async (t: number) => (await runMembw(t, 256, 2)).read_gb_s[String(t)]!;
        printBench(await runCompareBench(options, membw), raw.json);
      } catch (err) {
        if (
          err instanceof EngineError ||
          err instanceof NativeLoadError ||
          err instanceof LlamaCppMissingError ||
          err instanceof LlamaBenchError
        ) {
          throw new CliError(err.message, 1);
        }
        throw err;
      }
    });
};

/** --llama: a comma list of prebuilt, native, native-avx2 or paths, each at most once. */
function llamaArms(raw: string): string[] {
  const arms = raw.split(',').map((s) => s.trim());
  if (arms.some((a) => a === '') || new Set(arms).size !== arms.length)
    throw new CliError(
      `--llama must list prebuilt, native, native-avx2 or llama-bench paths, each once, got "${raw}"`,
      2,
    );
  return arms;
}
