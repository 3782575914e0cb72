// Shapes of the synthetic models and their config.json, key for key as mlx-community ships
// Qwen3-30B-A3B-4bit (qwen3_moe) and GLM-4.5-Air-4bit (glm4_moe) after mlx-lm conversion; the
// hybrid Gated DeltaNet archs (qwen3_next, qwen3_5_moe) are in hybrid-shapes.ts, the dense
// ones (qwen3, llama) in dense-shapes.ts, bailing_moe_linear in bailing-shapes.ts.
import { qwenSpecialIds, regularVocabSize } from './tokenizer-synth.js';
import { quantLayoutError, type QuantBits, type QuantGroup } from '../models/mlx-quant.js';
import { HYBRID_DIMS, hybridConfigJson, hybridSpecError, isHybridArch, type HybridSpec } from './hybrid-shapes.js';
import { DENSE_DIMS, denseConfigKeys, denseOverrides, isDenseArch } from './dense-shapes.js';
import { BAILING_DIMS, bailingConfigJson, bailingSpecError, type BailingSpec } from './bailing-shapes.js';

export const ARCHS = [
  'qwen3_moe',
  'glm4_moe',
  'qwen3_next',
  'qwen3_5_moe',
  'qwen3',
  'llama',
  'bailing_moe_linear',
] as const;
export type Arch = (typeof ARCHS)[number];
export const SHAPES = ['tiny', 'moe-small', 'moe-30b', 'moe-35b', 'dense-small', 'ring-mini'] as const;
export type ShapeName = (typeof SHAPES)[number];

export interface SynthSpec {
  arch: Arch;
  shape: ShapeName;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  moeIntermediateSize: number;
  numHiddenLayers: number;
  numAttentionHeads: number;
  numKeyValueHeads: number;
  headDim: number;
  numExperts: number;
  numExpertsPerTok: number;
  rmsNormEps: number;
  ropeTheta: number;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  normTopkProb: boolean;
  /** qwen3_moe: dense layers. */
  decoderSparseStep: number;
  mlpOnlyLayers: number[];
  /** glm4_moe. */
  firstKDenseReplace: number;
  nSharedExperts: number;
  nGroup: number;
  topkGroup: number;
  routedScalingFactor: number;
  partialRotaryFactor: number;
  attentionBias: boolean;
  /** Global MLX quantisation; qwen3_moe routers are always 8-bit g64 as mlx-lm converts them. */
  bits: QuantBits;
  groupSize: QuantGroup;
  /** qwen3_next / qwen3_5_moe: Gated DeltaNet sizes, layer pattern, gated shared expert. */
  hybrid?: HybridSpec;
  /** bailing_moe_linear: layer pattern, lightning norm groups, shared-expert width. */
  bailing?: BailingSpec;
}

export interface SpecOverrides {
  bits?: QuantBits;
  groupSize?: QuantGroup;
  /** glm4_moe: n_group and topk_group together (e.g. 1/1 for llama.cpp comparisons). */
  nGroup?: number;
  topkGroup?: number;
  tieWordEmbeddings?: boolean;
  mlpOnlyLayers?: number[];
  decoderSparseStep?: number;
}

export interface Dims {
  layers: number;
  hidden: number;
  inter: number;
  moeInter: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  experts: number;
  topK: number;
  vocab: number;
}

export const DIMS: Partial<Record<ShapeName, Dims>> = {
  tiny: {
    layers: 4,
    hidden: 128,
    inter: 256,
    moeInter: 128,
    heads: 4,
    kvHeads: 2,
    headDim: 32,
    experts: 16,
    topK: 4,
    vocab: 640,
  },
  'moe-small': {
    layers: 16,
    hidden: 1024,
    inter: 3072,
    moeInter: 512,
    heads: 16,
    kvHeads: 4,
    headDim: 64,
    experts: 64,
    topK: 8,
    vocab: 151936,
  },
  'moe-30b': {
    layers: 48,
    hidden: 2048,
    inter: 6144,
    moeInter: 768,
    heads: 32,
    kvHeads: 4,
    headDim: 128,
    experts: 128,
    topK: 8,
    vocab: 151936,
  },
};

export function synthSpec(arch: Arch, shape: ShapeName, o: SpecOverrides = {}): SynthSpec {
  const bailing = arch === 'bailing_moe_linear';
  const special = isHybridArch(arch) ? HYBRID_DIMS : bailing ? BAILING_DIMS : undefined;
  const own = special?.[shape];
  const table = special ? undefined : isDenseArch(arch) ? DENSE_DIMS : DIMS;
  const d = table ? table[shape] : own?.dims;
  if (!d) {
    const ok = Object.keys(table ?? special ?? {});
    throw new RangeError(`shape ${shape} is not defined for ${arch} (shapes: ${ok.join(', ')})`);
  }
  const glm = arch === 'glm4_moe';
  const tiny = shape === 'tiny';
  const nGroup = o.nGroup ?? (glm && tiny ? 4 : 1);
  const spec: SynthSpec = {
    arch,
    shape,
    vocabSize: d.vocab,
    hiddenSize: d.hidden,
    intermediateSize: d.inter,
    moeIntermediateSize: d.moeInter,
    numHiddenLayers: d.layers,
    numAttentionHeads: d.heads,
    numKeyValueHeads: d.kvHeads,
    headDim: d.headDim,
    numExperts: d.experts,
    numExpertsPerTok: d.topK,
    rmsNormEps: glm ? 1e-5 : 1e-6,
    ropeTheta: 1e6,
    maxPositionEmbeddings: glm ? 131072 : 40960,
    tieWordEmbeddings: o.tieWordEmbeddings ?? false,
    normTopkProb: true,
    decoderSparseStep: o.decoderSparseStep ?? 1,
    mlpOnlyLayers: o.mlpOnlyLayers ?? [],
    firstKDenseReplace: glm ? 1 : 0,
    nSharedExperts: glm ? 1 : 0,
    nGroup,
    topkGroup: o.topkGroup ?? (nGroup === 1 ? 1 : Math.max(1, nGroup / 2)),
    // GLM-4.5 scales routed experts by 2.5, Air by 1.0; tiny uses 2.5 so the factor is exercised.
    routedScalingFactor: glm && tiny ? 2.5 : 1.0,
    partialRotaryFactor: glm ? 0.5 : 1.0,
    attentionBias: glm,
    bits: o.bits ?? 4,
    groupSize: o.groupSize ?? 64,
  };
  if (isDenseArch(arch))
    Object.assign(
      spec,
      denseOverrides(arch),
      o.tieWordEmbeddings === undefined ? {} : { tieWordEmbeddings: o.tieWordEmbeddings },
    );
  if (own) Object.assign(spec, own.overrides);
  if (bailing && o.nGroup !== undefined) {
    spec.nGroup = o.nGroup;
    spec.topkGroup = o.topkGroup ?? (o.nGroup === 1 ? 1 : Math.max(1, o.nGroup / 2));
  }
  if (isHybridArch(arch) && own) spec.hybrid = { ...(own.spec as HybridSpec) };
  if (bailing && own) spec.bailing = { ...(own.spec as BailingSpec) };
  const err = specError(spec);
  if (err) throw new RangeError(err);
  return spec;
}

/** Every rule a spec must satisfy, as one readable message (undefined when valid). */
export function specError(s: SynthSpec): string | undefined {
  const inDims: [string, number][] = [
    ['hidden_size', s.hiddenSize],
    ['num_attention_heads * head_dim', s.numAttentionHeads * s.headDim],
    ...(isDenseArch(s.arch) ? [] : ([['moe_intermediate_size', s.moeIntermediateSize]] as [string, number][])),
    ['intermediate_size', s.intermediateSize],
  ];
  for (const [name, n] of inDims) {
    const e = quantLayoutError(n, s.bits, s.groupSize);
    if (e) return `${name}: ${e}`;
  }
  if (s.arch === 'qwen3_moe' && s.hiddenSize % 64 !== 0)
    return `hidden_size ${s.hiddenSize} must be a multiple of 64 for the 8-bit g64 router`;
  if (s.numAttentionHeads % s.numKeyValueHeads !== 0)
    return `num_attention_heads ${s.numAttentionHeads} is not a multiple of num_key_value_heads ${s.numKeyValueHeads}`;
  if (s.numExpertsPerTok > s.numExperts)
    return `num_experts_per_tok ${s.numExpertsPerTok} exceeds the ${s.numExperts} experts`;
  if (s.numExperts % s.nGroup !== 0) return `n_group ${s.nGroup} does not divide the ${s.numExperts} experts`;
  if (s.topkGroup < 1 || s.topkGroup > s.nGroup)
    return `topk_group must be in [1, n_group=${s.nGroup}], got ${s.topkGroup}`;
  if (s.numExpertsPerTok > s.topkGroup * (s.numExperts / s.nGroup)) {
    return `num_experts_per_tok ${s.numExpertsPerTok} exceeds the ${s.topkGroup * (s.numExperts / s.nGroup)} experts of the kept groups`;
  }
  if (s.decoderSparseStep < 1) return `decoder_sparse_step must be >= 1, got ${s.decoderSparseStep}`;
  const bad = s.mlpOnlyLayers.find((l) => !Number.isInteger(l) || l < 0 || l >= s.numHiddenLayers);
  if (bad !== undefined) return `mlp_only_layers entry ${bad} is not a layer index in [0, ${s.numHiddenLayers})`;
  if (rotaryDims(s) % 2 !== 0) return `rotary dimension ${rotaryDims(s)} must be even`;
  return s.hybrid ? hybridSpecError(s) : s.bailing ? bailingSpecError(s) : undefined;
}

export function rotaryDims(s: Pick<SynthSpec, 'headDim' | 'partialRotaryFactor'>): number {
  return Math.trunc(s.headDim * s.partialRotaryFactor);
}

/** Whether layer `l` has a routed-expert MLP (otherwise a dense MLP of intermediate_size). */
export function isMoeLayer(s: SynthSpec, l: number): boolean {
  if (isDenseArch(s.arch)) return false;
  if (s.arch === 'glm4_moe' || s.arch === 'bailing_moe_linear') return l >= s.firstKDenseReplace;
  return !s.mlpOnlyLayers.includes(l) && (l + 1) % s.decoderSparseStep === 0;
}

/** config.json exactly as mlx-lm writes it: the Hugging Face keys sorted, plus quantization. */
export function configJson(s: SynthSpec): Record<string, unknown> {
  if (s.hybrid) return hybridConfigJson(s, s.hybrid);
  if (s.bailing) return bailingConfigJson(s, s.bailing);
  const ids = qwenSpecialIds(regularVocabSize(s.vocabSize));
  const quantization: Record<string, unknown> = { group_size: s.groupSize, bits: s.bits, mode: 'affine' };
  if (s.arch === 'qwen3_moe') {
    for (let l = 0; l < s.numHiddenLayers; l++) {
      if (isMoeLayer(s, l)) quantization[`model.layers.${l}.mlp.gate`] = { group_size: 64, bits: 8 };
    }
  }
  const common = {
    attention_bias: s.attentionBias,
    attention_dropout: 0.0,
    head_dim: s.headDim,
    hidden_act: 'silu',
    hidden_size: s.hiddenSize,
    initializer_range: 0.02,
    intermediate_size: s.intermediateSize,
    max_position_embeddings: s.maxPositionEmbeddings,
    model_type: s.arch,
    ...(isDenseArch(s.arch)
      ? {}
      : {
          moe_intermediate_size: s.moeIntermediateSize,
          norm_topk_prob: s.normTopkProb,
          num_experts_per_tok: s.numExpertsPerTok,
        }),
    num_attention_heads: s.numAttentionHeads,
    num_hidden_layers: s.numHiddenLayers,
    num_key_value_heads: s.numKeyValueHeads,
    quantization,
    quantization_config: quantization,
    rms_norm_eps: s.rmsNormEps,
    rope_scaling: null,
    rope_theta: s.ropeTheta,
    tie_word_embeddings: s.tieWordEmbeddings,
    torch_dtype: 'bfloat16',
    use_cache: true,
    vocab_size: s.vocabSize,
  };
  const specific = isDenseArch(s.arch)
    ? denseConfigKeys(s.arch, ids)
    : s.arch === 'qwen3_moe'
      ? {
          architectures: ['Qwen3MoeForCausalLM'],
          bos_token_id: ids.endoftext,
          decoder_sparse_step: s.decoderSparseStep,
          eos_token_id: ids.imEnd,
          max_window_layers: s.numHiddenLayers,
          mlp_only_layers: s.mlpOnlyLayers,
          num_experts: s.numExperts,
          output_router_logits: false,
          router_aux_loss_coef: 0.001,
          sliding_window: null,
          transformers_version: '4.51.0',
          use_sliding_window: false,
        }
      : {
          architectures: ['Glm4MoeForCausalLM'],
          eos_token_id: [ids.imEnd, ids.endoftext],
          first_k_dense_replace: s.firstKDenseReplace,
          n_group: s.nGroup,
          n_routed_experts: s.numExperts,
          n_shared_experts: s.nSharedExperts,
          num_nextn_predict_layers: 1,
          pad_token_id: ids.endoftext,
          partial_rotary_factor: s.partialRotaryFactor,
          routed_scaling_factor: s.routedScalingFactor,
          scoring_func: 'sigmoid',
          topk_group: s.topkGroup,
          topk_method: 'noaux_tc',
          transformers_version: '4.54.0',
          use_qk_norm: false,
        };
  const all: Record<string, unknown> = { ...common, ...specific };
  return Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((k) => [k, all[k]]),
  );
}
