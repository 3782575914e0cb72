// Shapes and config.json of the hybrid Gated DeltaNet MoE archs as mlx-lm / mlx-vlm convert
// them: qwen3_next (Qwen3-Next-80B-A3B layout, keys at the top level) and qwen3_5_moe (Qwen3.5
// MoE: keys under text_config, RoPE under rope_parameters, tensors under "language_model.").
// moe-35b is Qwen3.5-35B-A3B: 40 layers of 3 Gated DeltaNet + 1 gated attention, 256 experts.
import { quantLayoutError } from '../models/mlx-quant.js';
import type { Arch, Dims, ShapeName, SynthSpec } from './synth-shapes.js';
import { qwenSpecialIds, regularVocabSize } from './tokenizer-synth.js';

export const HYBRID_ARCHS = ['qwen3_next', 'qwen3_5_moe'] as const;
export type HybridArch = (typeof HYBRID_ARCHS)[number];

export function isHybridArch(arch: string): arch is HybridArch {
  return (HYBRID_ARCHS as readonly string[]).includes(arch);
}

export interface HybridSpec {
  linearKeyHeads: number;
  linearValueHeads: number;
  linearKeyDim: number;
  linearValueDim: number;
  convKernel: number;
  /** Layer l is full attention iff (l + 1) % interval == 0. */
  fullAttentionInterval: number;
  sharedIntermediate: number;
}

interface HybridShape {
  dims: Dims;
  spec: HybridSpec;
  overrides: Partial<SynthSpec>;
}

const COMMON: Partial<SynthSpec> = {
  ropeTheta: 1e7,
  maxPositionEmbeddings: 262144,
  rmsNormEps: 1e-6,
  partialRotaryFactor: 0.25,
  attentionBias: false,
  normTopkProb: true,
  nSharedExperts: 0,
  firstKDenseReplace: 0,
  nGroup: 1,
  topkGroup: 1,
  routedScalingFactor: 1,
};

export const HYBRID_DIMS: Partial<Record<ShapeName, HybridShape>> = {
  tiny: {
    dims: {
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
    spec: {
      linearKeyHeads: 2,
      linearValueHeads: 4,
      linearKeyDim: 32,
      linearValueDim: 32,
      convKernel: 4,
      fullAttentionInterval: 2,
      sharedIntermediate: 128,
    },
    overrides: COMMON,
  },
  'moe-small': {
    dims: {
      layers: 16,
      hidden: 1024,
      inter: 3072,
      moeInter: 512,
      heads: 8,
      kvHeads: 2,
      headDim: 128,
      experts: 64,
      topK: 8,
      vocab: 151936,
    },
    spec: {
      linearKeyHeads: 8,
      linearValueHeads: 16,
      linearKeyDim: 64,
      linearValueDim: 64,
      convKernel: 4,
      fullAttentionInterval: 4,
      sharedIntermediate: 512,
    },
    overrides: COMMON,
  },
  'moe-35b': {
    dims: {
      layers: 40,
      hidden: 2048,
      inter: 5120,
      moeInter: 512,
      heads: 16,
      kvHeads: 2,
      headDim: 256,
      experts: 256,
      topK: 8,
      vocab: 248320,
    },
    spec: {
      linearKeyHeads: 16,
      linearValueHeads: 32,
      linearKeyDim: 128,
      linearValueDim: 128,
      convKernel: 4,
      fullAttentionInterval: 4,
      sharedIntermediate: 512,
    },
    overrides: COMMON,
  },
};

export function hybridSpecError(s: SynthSpec): string | undefined {
  const h = s.hybrid!;
  if (h.linearValueHeads % h.linearKeyHeads !== 0)
    return `linear_num_value_heads ${h.linearValueHeads} is not a multiple of linear_num_key_heads ${h.linearKeyHeads}`;
  for (const [name, n] of [
    ['linear value dim (out_proj input)', h.linearValueHeads * h.linearValueDim],
    ['shared_expert_intermediate_size', h.sharedIntermediate],
  ] as const) {
    const e = quantLayoutError(n, s.bits, s.groupSize);
    if (e) return `${name}: ${e}`;
  }
  if (h.fullAttentionInterval < 1 || h.fullAttentionInterval > s.numHiddenLayers)
    return `full_attention_interval must be in [1, ${s.numHiddenLayers}], got ${h.fullAttentionInterval}`;
  return undefined;
}

/** Whether layer l is a Gated DeltaNet layer. */
export function isLinearLayer(h: HybridSpec, l: number): boolean {
  return (l + 1) % h.fullAttentionInterval !== 0;
}

/** The tensor-name prefix: Qwen3.5 checkpoints keep the text model under "language_model.". */
export function weightPrefix(arch: Arch): string {
  return arch === 'qwen3_5_moe' ? 'language_model.' : '';
}

export function hybridConfigJson(s: SynthSpec, h: HybridSpec): Record<string, unknown> {
  const ids = qwenSpecialIds(regularVocabSize(s.vocabSize));
  const prefix = weightPrefix(s.arch);
  const quantization: Record<string, unknown> = { group_size: s.groupSize, bits: s.bits, mode: 'affine' };
  for (let l = 0; l < s.numHiddenLayers; l++) {
    // mlx-lm's quant_predicate: the router and the shared-expert gate stay 8-bit.
    for (const m of ['mlp.gate', 'mlp.shared_expert_gate'])
      quantization[`${prefix}model.layers.${l}.${m}`] = { group_size: 64, bits: 8 };
  }
  const text: Record<string, unknown> = {
    attention_bias: false,
    attention_dropout: 0.0,
    eos_token_id: ids.imEnd,
    full_attention_interval: h.fullAttentionInterval,
    head_dim: s.headDim,
    hidden_act: 'silu',
    hidden_size: s.hiddenSize,
    initializer_range: 0.02,
    linear_conv_kernel_dim: h.convKernel,
    linear_key_head_dim: h.linearKeyDim,
    linear_num_key_heads: h.linearKeyHeads,
    linear_num_value_heads: h.linearValueHeads,
    linear_value_head_dim: h.linearValueDim,
    max_position_embeddings: s.maxPositionEmbeddings,
    moe_intermediate_size: s.moeIntermediateSize,
    num_attention_heads: s.numAttentionHeads,
    num_experts: s.numExperts,
    num_experts_per_tok: s.numExpertsPerTok,
    num_hidden_layers: s.numHiddenLayers,
    num_key_value_heads: s.numKeyValueHeads,
    rms_norm_eps: s.rmsNormEps,
    shared_expert_intermediate_size: h.sharedIntermediate,
    tie_word_embeddings: s.tieWordEmbeddings,
    vocab_size: s.vocabSize,
  };
  const rope = { partial_rotary_factor: s.partialRotaryFactor, rope_theta: s.ropeTheta };
  let all: Record<string, unknown>;
  if (s.arch === 'qwen3_next') {
    all = {
      ...text,
      ...rope,
      architectures: ['Qwen3NextForCausalLM'],
      bos_token_id: ids.endoftext,
      decoder_sparse_step: 1,
      intermediate_size: s.intermediateSize,
      mlp_only_layers: [],
      model_type: 'qwen3_next',
      norm_topk_prob: s.normTopkProb,
      quantization,
      quantization_config: quantization,
      rope_scaling: null,
      torch_dtype: 'bfloat16',
      transformers_version: '4.57.0',
    };
  } else {
    const types = Array.from({ length: s.numHiddenLayers }, (_, l) =>
      isLinearLayer(h, l) ? 'linear_attention' : 'full_attention',
    );
    const half = Math.trunc(s.headDim * s.partialRotaryFactor) / 2;
    const t = Math.ceil(half / 3);
    const rest = half - t;
    all = {
      architectures: ['Qwen3_5MoeForConditionalGeneration'],
      eos_token_id: ids.imEnd,
      model_type: 'qwen3_5_moe',
      quantization,
      quantization_config: quantization,
      text_config: sorted({
        ...text,
        layer_types: types,
        model_type: 'qwen3_5_moe_text',
        rope_parameters: {
          ...rope,
          mrope_interleaved: true,
          mrope_section: [t, Math.ceil(rest / 2), Math.floor(rest / 2)],
          rope_type: 'default',
        },
      }),
      tie_word_embeddings: s.tieWordEmbeddings,
      torch_dtype: 'bfloat16',
      transformers_version: '4.57.0',
      vision_config: { depth: 1, hidden_size: 64, model_type: 'qwen3_5_moe', out_hidden_size: s.hiddenSize },
    };
  }
  return sorted(all);
}

function sorted(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k]]),
  );
}
