// Tensors of the synthetic bailing_moe_linear models in mlx-lm's names and order: model.
// word_embeddings, per layer attention.query_key_value (3·hidden rows on lightning layers, GQA
// rows on softmax ones), query_/key_layernorm, dense, the lightning layers' g_proj and g_norm,
// a dense MLP below first_k_dense_replace, else an 8-bit mlp.gate.gate_proj with a float32
// expert_bias, switch_mlp experts and ungated shared_experts.
import type { TensorSource } from '../models/safetensors-writer.js';
import { isLightningLayer } from './bailing-shapes.js';
import { isMoeLayer, type SynthSpec } from './synth-shapes.js';
import {
  GATE8,
  LOGIT_STD,
  OUT_GAIN,
  quantizedExperts,
  ROUTER_STD,
  tensorAppender,
  type QuantSpec,
} from './synth-weights.js';

export function planBailingTensors(s: SynthSpec, seed: number): TensorSource[] {
  const b = s.bailing!;
  const q: QuantSpec = { bits: s.bits, groupSize: s.groupSize };
  const d = s.hiddenSize;
  const t: TensorSource[] = [];
  const { lin, plain, mlp } = tensorAppender(t, seed, q, d);
  const qDim = s.numAttentionHeads * s.headDim;
  const kvDim = s.numKeyValueHeads * s.headDim;
  const linearHead = d / s.numAttentionHeads;
  lin('model.word_embeddings', s.vocabSize, d, s.tieWordEmbeddings ? LOGIT_STD / Math.sqrt(d) : 1);
  for (let l = 0; l < s.numHiddenLayers; l++) {
    const p = `model.layers.${l}`;
    const a = `${p}.attention`;
    const lightning = isLightningLayer(s, l);
    const head = lightning ? linearHead : s.headDim;
    plain(`${p}.input_layernorm.weight`, [d], 1, 0.1);
    lin(`${a}.query_key_value`, lightning ? 3 * d : qDim + 2 * kvDim, d, 1 / Math.sqrt(d));
    plain(`${a}.query_layernorm.weight`, [head], 1, 0.1);
    plain(`${a}.key_layernorm.weight`, [head], 1, 0.1);
    const width = lightning ? d : qDim;
    lin(`${a}.dense`, d, width, OUT_GAIN / Math.sqrt(width));
    if (lightning) {
      lin(`${a}.g_proj`, d, d, 1 / Math.sqrt(d));
      plain(`${a}.g_norm.weight`, [d], 1, 0.1);
    }
    plain(`${p}.post_attention_layernorm.weight`, [d], 1, 0.1);
    if (!isMoeLayer(s, l)) {
      mlp(`${p}.mlp`, s.intermediateSize);
      continue;
    }
    const E = s.numExperts;
    const mi = s.moeIntermediateSize;
    lin(`${p}.mlp.gate.gate_proj`, E, d, ROUTER_STD / Math.sqrt(d), GATE8);
    plain(`${p}.mlp.gate.expert_bias`, [E], 0, 0.05, 'F32');
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.gate_proj`, E, mi, d, 1 / Math.sqrt(d), q));
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.up_proj`, E, mi, d, 1 / Math.sqrt(d), q));
    t.push(...quantizedExperts(seed, `${p}.mlp.switch_mlp.down_proj`, E, d, mi, OUT_GAIN / Math.sqrt(mi), q));
    mlp(`${p}.mlp.shared_experts`, b.sharedIntermediate * s.nSharedExperts);
  }
  plain('model.norm.weight', [d], 1, 0.1);
  if (!s.tieWordEmbeddings) lin('lm_head', s.vocabSize, d, LOGIT_STD / Math.sqrt(d));
  return t;
}
