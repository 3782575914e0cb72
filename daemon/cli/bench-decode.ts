// `brainstem bench decode --model DIR`: prefill and greedy-decode throughput, time to first
// token, memory and bytes read per token, and what the expert executor did. With several arms
// (comma lists of --prerouter, --path, --k), --mem-limit or --cold, each run is its own
// process, inside a memory-limited cgroup when asked, arms alternated over --rounds.
// JSON with --json (or when piped), else a table.
import type { Command } from 'commander';
import { type CommandRegistrar, group } from './group.js';
import { CliError, optionError } from './exit.js';
import { activationBitsOption, intOption, printBench } from './bench-common.js';
import { runDecodeBench, type BenchProfile } from '../bench/decode-bench.js';
import { runArms } from '../bench/decode-bench-arms.js';
import { AdapterError } from '../engine/adapters/plan.js';
import { EngineError } from '../engine/native-model.js';
import { EXPERT_PATHS, IO_MODES, NativeLoadError, type ExpertPath, type IoMode } from '../native/binding.js';
import { parseSize } from '../util/cgroup.js';

interface RawOptions {
  model: string;
  threads: string;
  prompt: string;
  gen: string;
  topK?: string;
  k?: string;
  seed: string;
  json?: boolean;
  path?: string;
  prefillPath?: string;
  prerouter?: string;
  slots?: string;
  cacheBudget?: string;
  ioThreads?: string;
  ioMode?: string;
  memLimit?: string;
  cold?: boolean;
  rounds?: string;
  adapter?: string;
  backend: string;
  kvCache: string;
  activationBits: string;
  prefillChunk?: string;
  breakdown?: boolean;
  /** false with --no-prefault (commander's default for a --no- flag is true). */
  prefault?: boolean;
}

/** loadModel options the engine may refuse, by the flag that sets them here. */
const LOAD_FLAGS = { topK: '--k' };

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

function pick<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T))
    throw new CliError(`${flag} must be one of ${allowed.join(', ')}, got "${value}"`, 2);
  return value as T;
}

function size(flag: string, value: string): number {
  const n = parseSize(value);
  if (n === undefined || n <= 0)
    throw new CliError(`${flag} must be a size like 4GiB, 512MiB or a byte count, got "${value}"`, 2);
  return n;
}

/** Arms: every combination of the --prerouter, --path and --k lists, plus the shared flags. */
export function benchArms(o: RawOptions): BenchProfile[] {
  const shared: BenchProfile = {
    ...(o.prefillPath ? { prefillPath: pick('--prefill-path', o.prefillPath, EXPERT_PATHS) } : {}),
    ...(o.slots ? { slots: intOption('slots', o.slots, 1) } : {}),
    ...(o.cacheBudget ? { cacheBytes: size('--cache-budget', o.cacheBudget) } : {}),
    ...(o.ioThreads ? { ioThreads: intOption('io-threads', o.ioThreads, 1, 64) } : {}),
    ...(o.ioMode ? { ioMode: pick<IoMode>('--io-mode', o.ioMode, IO_MODES) } : {}),
    ...(o.prefault === false ? { prefault: false } : {}),
  };
  const prerouters = o.prerouter ? list(o.prerouter) : ['off'];
  const paths: (ExpertPath | undefined)[] = o.path
    ? list(o.path).map((p) => pick('--path', p, EXPERT_PATHS))
    : [undefined];
  const kText = o.k ?? o.topK;
  const ks: (number | undefined)[] = kText ? list(kText).map((k) => intOption('k', k, 1)) : [undefined];
  const arms: BenchProfile[] = [];
  for (const prerouter of prerouters) {
    for (const decodePath of paths) {
      for (const topK of ks) {
        arms.push({ ...shared, prerouter, ...(decodePath ? { decodePath } : {}), ...(topK ? { topK } : {}) });
      }
    }
  }
  return arms;
}

export const registerBenchDecode: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('decode')
    .description(
      'prefill and decode speed, time to first token, memory, bytes read and expert-load stalls per token of a model folder',
    )
    .requiredOption('--model <dir>', 'model folder (config.json + safetensors)')
    .option('--threads <n>', 'CPU threads for the kernels', '1')
    .option('--prompt <n>', 'prompt tokens (seeded random ids)', '128')
    .option('--gen <n>', 'greedy decode steps', '64')
    .option('--top-k <k>', 'routing width override (experts per token); same as --k')
    .option('--k <list>', 'routing width(s): one arm per value, e.g. 8,4')
    .option('--path <list>', `decode expert path(s): ${EXPERT_PATHS.join(' | ')}; one arm per value`)
    .option('--prefill-path <path>', 'prefill expert path (default: auto-sized, see doctor)')
    .option('--prerouter <list>', 'off | on (zero-training heads) | FILE; one arm per value, e.g. off,on', 'off')
    .option('--slots <n>', 'staged slots per MoE layer (default: sized from the memory budget)')
    .option('--cache-budget <size>', 'hot path: bytes of resident experts over all layers')
    .option('--io-threads <n>', 'expert I/O threads (default: auto-sized, 32 when the model streams, 2 when resident)')
    .option('--io-mode <mode>', 'page-cache | direct')
    .option('--mem-limit <size>', 'run each decode in a memory cgroup with this limit (page cache counted), e.g. 4GiB')
    .option('--cold', "drop the model files' cached pages before each run")
    .option('--rounds <n>', 'runs per arm, alternated (default 3 with several arms, else 1)')
    .option('--seed <n>', 'prompt seed', '1')
    .option('--backend <name>', 'kernel set (auto = fastest usable; see doctor)', 'auto')
    .option('--kv-cache <type>', 'KV cache type: f32 | f16', 'f32')
    .option(
      '--activation-bits <n>',
      'integer decode activations: 16 | 24 (~100x closer to exact, slower) | 8 (one byte, ~1e-2 off, less compute)',
      '16',
    )
    .option(
      '--prefill-chunk <n>',
      'tokens per prefill forward step (1..4096; default auto-sized: 512, or 128 where streaming leaves no room)',
    )
    .option(
      '--no-prefault',
      'leave the weights unmapped (default: mapped where they stay resident, waited for before the prefill; prefault, prefault_ms in the JSON)',
    )
    .option('--adapter <dir>', 'run with this LoRA adapter, unmerged (PEFT, mlx-lm or Edge0)')
    .option(
      '--breakdown',
      'time each stage of the prefill and decode steps (attention, router, experts, lm_head, pool loops)',
    )
    .option('--json', 'print JSON')
    .action(async (o: RawOptions) => {
      if (o.kvCache !== 'f32' && o.kvCache !== 'f16')
        throw new CliError(`--kv-cache must be f32 or f16, got "${o.kvCache}"`, 2);
      const base = {
        model: o.model,
        threads: intOption('threads', o.threads, 1, 256),
        prompt: intOption('prompt', o.prompt, 1),
        gen: intOption('gen', o.gen, 0),
        seed: intOption('seed', o.seed, 0),
        backend: o.backend,
        kvCache: o.kvCache as 'f32' | 'f16',
        activationBits: activationBitsOption(o.activationBits),
        ...(o.prefillChunk !== undefined ? { prefillChunk: intOption('prefill-chunk', o.prefillChunk, 1, 4096) } : {}),
        ...(o.adapter !== undefined ? { adapter: o.adapter } : {}),
        ...(o.breakdown ? { breakdown: true } : {}),
      };
      const arms = benchArms(o);
      const memLimitBytes = o.memLimit !== undefined ? size('--mem-limit', o.memLimit) : undefined;
      const rounds = o.rounds !== undefined ? intOption('rounds', o.rounds, 1, 100) : arms.length > 1 ? 3 : 1;
      const isolated = arms.length > 1 || rounds > 1 || memLimitBytes !== undefined || o.cold === true;
      try {
        if (!isolated) {
          printBench(await runDecodeBench({ ...base, ...arms[0]! }), o.json);
          return;
        }
        const log = (line: string) => process.stderr.write(`${line}\n`);
        const r = await runArms({
          base,
          arms,
          rounds,
          cold: o.cold === true,
          ...(memLimitBytes !== undefined ? { memLimitBytes } : {}),
          log,
        });
        const failed = r.arms.flatMap((a) =>
          a.errors.filter((e) => !e.startsWith('killed')).map((e) => `${a.arm}: ${e}`),
        );
        if (failed.length > 0 && r.arms.every((a) => a.runs === a.errors.length)) {
          const refused = r.arms.find((a) => a.refused)?.refused;
          throw (refused && optionError(refused, LOAD_FLAGS)) ?? new CliError(failed[0]!, 1);
        }
        printBench(r, o.json);
      } catch (err) {
        if (err instanceof EngineError) throw optionError(err, LOAD_FLAGS) ?? new CliError(err.message, 1);
        if (err instanceof NativeLoadError || err instanceof AdapterError) throw new CliError(err.message, 1);
        throw err;
      }
    });
};
