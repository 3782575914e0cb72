// Shapes and config.json of bailing_moe_linear (Ling / Ring-mini-linear-2.0) as mlx-lm converts
// it: lightning linear-attention layers with a GQA softmax layer closing every layer_group_size
// group, dense layers below first_k_dense_replace, grouped sigmoid routing with expert_bias and
// ungated shared experts. ring-mini is Ring-mini-linear-2.0 (20 layers, 256 experts, 128k context).
import { quantLayoutError } from '../models/mlx-quant.js';
import { HYBRID_DIMS } from './hybrid-shapes.js';
import type { Dims, ShapeName, SynthSpec } from './synth-shapes.js';
import { qwenSpecialIds, regularVocabSize } from './tokenizer-synth.js';

export interface BailingSpec {
  /** Layer l is softmax attention iff (l + 1) % layerGroupSize == 0 or it lies past the last whole group. */
  layerGroupSize: number;
  /** The lightning output RMSNorm normalises this many equal slices. */
  groupNormSize: number;
  sharedIntermediate: number;
}

interface BailingShape {
  dims: Dims;
  spec: BailingSpec;
  overrides: Partial<SynthSpec>;
}

const COMMON: Partial<SynthSpec> = {
  ropeTheta: 1e6,
  maxPositionEmbeddings: 131072,
  rmsNormEps: 1e-6,
  partialRotaryFactor: 0.5,
  attentionBias: false,
  normTopkProb: true,
  nSharedExperts: 1,
  firstKDenseReplace: 1,
  routedScalingFactor: 2.5,
};

export const BAILING_DIMS: Partial<Record<ShapeName, BailingShape>> = {
  // tiny and moe-small: the hybrid archs' dimensions.
  tiny: {
    dims: HYBRID_DIMS.tiny!.dims,
    spec: { layerGroupSize: 2, groupNormSize: 4, sharedIntermediate: 128 },
    overrides: { ...COMMON, nGroup: 4, topkGroup: 2 },
  },
  'moe-small': {
    dims: HYBRID_DIMS['moe-small']!.dims,
    spec: { layerGroupSize: 4, groupNormSize: 4, sharedIntermediate: 512 },
    overrides: { ...COMMON, nGroup: 8, topkGroup: 4 },
  },
  'ring-mini': {
    dims: {
      layers: 20,
      hidden: 2048,
      inter: 5120,
      moeInter: 512,
      heads: 16,
      kvHeads: 4,
      headDim: 128,
      experts: 256,
      topK: 8,
      vocab: 157184,
    },
    spec: { layerGroupSize: 5, groupNormSize: 4, sharedIntermediate: 512 },
    overrides: { ...COMMON, nGroup: 8, topkGroup: 4 },
  },
};

export function bailingSpecError(s: SynthSpec): string | undefined {
  const b = s.bailing!;
  if (s.hiddenSize % s.numAttentionHeads !== 0)
    return `num_attention_heads ${s.numAttentionHeads} must divide hidden_size ${s.hiddenSize}`;
  if (s.hiddenSize % b.groupNormSize !== 0)
    return `group_norm_size ${b.groupNormSize} must divide hidden_size ${s.hiddenSize}`;
  if (b.layerGroupSize < 1 || b.layerGroupSize > s.numHiddenLayers)
    return `layer_group_size must be in [1, ${s.numHiddenLayers}], got ${b.layerGroupSize}`;
  const e = quantLayoutError(b.sharedIntermediate, s.bits, s.groupSize);
  return e ? `moe_shared_expert_intermediate_size: ${e}` : undefined;
}

/** Whether layer l is a lightning (linear-attention) layer. */
export function isLightningLayer(s: SynthSpec, l: number): boolean {
  const g = s.bailing!.layerGroupSize;
  return (l + 1) % g !== 0 && l < Math.floor(s.numHiddenLayers / g) * g;
}

export function bailingConfigJson(s: SynthSpec, b: BailingSpec): Record<string, unknown> {
  const ids = qwenSpecialIds(regularVocabSize(s.vocabSize));
  const quantization: Record<string, unknown> = { group_size: s.groupSize, bits: s.bits, mode: 'affine' };
  // mlx-lm's quant_predicate: the router stays 8-bit.
  for (let l = s.firstKDenseReplace; l < s.numHiddenLayers; l++)
    quantization[`model.layers.${l}.mlp.gate.gate_proj`] = { group_size: 64, bits: 8 };
  const all: Record<string, unknown> = {
    architectures: ['BailingMoeLinearV2ForCausalLM'],
    eos_token_id: ids.imEnd,
    first_k_dense_replace: s.firstKDenseReplace,
    group_norm_size: b.groupNormSize,
    head_dim: s.headDim,
    hidden_act: 'silu',
    hidden_size: s.hiddenSize,
    intermediate_size: s.intermediateSize,
    layer_group_size: b.layerGroupSize,
    linear_silu: false,
    max_position_embeddings: s.maxPositionEmbeddings,
    model_type: 'bailing_moe_linear',
    moe_intermediate_size: s.moeIntermediateSize,
    moe_router_enable_expert_bias: true,
    moe_shared_expert_intermediate_size: b.sharedIntermediate,
    n_group: s.nGroup,
    norm_head: false,
    norm_topk_prob: s.normTopkProb,
    num_attention_heads: s.numAttentionHeads,
    num_experts: s.numExperts,
    num_experts_per_tok: s.numExpertsPerTok,
    num_hidden_layers: s.numHiddenLayers,
    num_key_value_heads: s.numKeyValueHeads,
    num_shared_experts: s.nSharedExperts,
    pad_token_id: ids.endoftext,
    partial_rotary_factor: s.partialRotaryFactor,
    quantization,
    quantization_config: quantization,
    rms_norm_eps: s.rmsNormEps,
    rope_scaling: null,
    rope_theta: s.ropeTheta,
    routed_scaling_factor: s.routedScalingFactor,
    router_dtype: 'fp32',
    score_function: 'sigmoid',
    tie_word_embeddings: s.tieWordEmbeddings,
    topk_group: s.topkGroup,
    torch_dtype: 'bfloat16',
    use_bias: false,
    use_qk_norm: true,
    use_qkv_bias: false,
    vocab_size: s.vocabSize,
  };
  return Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((k) => [k, all[k]]),
  );
}
