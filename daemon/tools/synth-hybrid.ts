// Tensors of the synthetic hybrid models (qwen3_next, qwen3_5_moe) in mlx-lm's names and order:
// Gated DeltaNet layers (conv1d [C, K, 1], A_log, dt_bias, gated norm), gated attention layers
// (q_proj gives q and its gate per head), 8-bit routers and sigmoid-gated shared experts.
import type { TensorSource } from '../models/safetensors-writer.js';
import { isLinearLayer, weightPrefix } from './hybrid-shapes.js';
import type { SynthSpec } from './synth-shapes.js';
import {
  GATE8,
  LOGIT_STD,
  OUT_GAIN,
  quantizedExperts,
  ROUTER_STD,
  tensorAppender,
  type QuantSpec,
} from './synth-weights.js';

export function planHybridTensors(s: SynthSpec, seed: number): TensorSource[] {
  const h = s.hybrid!;
  const q: QuantSpec = { bits: s.bits, groupSize: s.groupSize };
  const d = s.hiddenSize;
  const pre = `${weightPrefix(s.arch)}model`;
  const t: TensorSource[] = [];
  const { lin, plain, mlp } = tensorAppender(t, seed, q, d);
  const Hk = h.linearKeyHeads;
  const Hv = h.linearValueHeads;
  const keyDim = Hk * h.linearKeyDim;
  const valueDim = Hv * h.linearValueDim;
  const convDim = 2 * keyDim + valueDim;
  const qDim = s.numAttentionHeads * s.headDim;
  const kvDim = s.numKeyValueHeads * s.headDim;
  lin(`${pre}.embed_tokens`, s.vocabSize, d, s.tieWordEmbeddings ? LOGIT_STD / Math.sqrt(d) : 1);
  for (let l = 0; l < s.numHiddenLayers; l++) {
    const p = `${pre}.layers.${l}`;
    plain(`${p}.input_layernorm.weight`, [d], 1, 0.1);
    if (isLinearLayer(h, l)) {
      const a = `${p}.linear_attn`;
      if (s.arch === 'qwen3_next') {
        lin(`${a}.in_proj_qkvz`, convDim + valueDim, d, 1 / Math.sqrt(d));
        lin(`${a}.in_proj_ba`, 2 * Hv, d, 1 / Math.sqrt(d));
      } else {
        lin(`${a}.in_proj_qkv`, convDim, d, 1 / Math.sqrt(d));
        lin(`${a}.in_proj_z`, valueDim, d, 1 / Math.sqrt(d));
        lin(`${a}.in_proj_b`, Hv, d, 1 / Math.sqrt(d));
        lin(`${a}.in_proj_a`, Hv, d, 1 / Math.sqrt(d));
      }
      plain(`${a}.conv1d.weight`, [convDim, h.convKernel, 1], 0, 0.5);
      plain(`${a}.dt_bias`, [Hv], 0, 0.5);
      // Decays e^{-exp(A_log)·softplus(a + dt_bias)} mostly in (0.6, 0.95): the state matters.
      plain(`${a}.A_log`, [Hv], -1.5, 1, s.arch === 'qwen3_5_moe' ? 'F32' : 'BF16');
      plain(`${a}.norm.weight`, [h.linearValueDim], 1, 0.1);
      lin(`${a}.out_proj`, d, valueDim, OUT_GAIN / Math.sqrt(valueDim));
    } else {
      const a = `${p}.self_attn`;
      lin(`${a}.q_proj`, 2 * qDim, d, 1 / Math.sqrt(d));
      lin(`${a}.k_proj`, kvDim, d, 1 / Math.sqrt(d));
      lin(`${a}.v_proj`, kvDim, d, 1 / Math.sqrt(d));
      lin(`${a}.o_proj`, d, qDim, OUT_GAIN / Math.sqrt(qDim));
      plain(`${a}.q_norm.weight`, [s.headDim], 1, 0.1);
      plain(`${a}.k_norm.weight`, [s.headDim], 1, 0.1);
    }
    plain(`${p}.post_attention_layernorm.weight`, [d], 1, 0.1);
    const E = s.numExperts;
    const mi = s.moeIntermediateSize;
    lin(`${p}.mlp.gate`, E, d, ROUTER_STD / Math.sqrt(d), GATE8);
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.gate_proj`, E, mi, d, 1 / Math.sqrt(d), q));
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.up_proj`, E, mi, d, 1 / Math.sqrt(d), q));
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.down_proj`, E, d, mi, OUT_GAIN / Math.sqrt(mi), q));
    mlp(`${p}.mlp.shared_expert`, h.sharedIntermediate);
    lin(`${p}.mlp.shared_expert_gate`, 1, d, 1 / Math.sqrt(d), GATE8);
  }
  plain(`${pre}.norm.weight`, [d], 1, 0.1);
  if (!s.tieWordEmbeddings) lin(`${weightPrefix(s.arch)}lm_head`, s.vocabSize, d, LOGIT_STD / Math.sqrt(d));
  // mlx-vlm keeps the vision tower beside the text model; the engine reads none of it.
  if (s.arch === 'qwen3_5_moe') plain('vision_tower.merger.norm.weight', [64], 1, 0.1);
  return t;
}
