// Shapes and config.json of the dense archs (small policy and verifier models) as mlx-lm
// converts them: qwen3 (Qwen3ForCausalLM: q/k RMSNorm, tied embeddings on the small sizes) and
// llama (LlamaForCausalLM). dense-small has Qwen3-0.6B's dimensions for both.
import type { Arch, Dims, ShapeName, SynthSpec } from './synth-shapes.js';

export const DENSE_ARCHS = ['qwen3', 'llama'] as const;
export type DenseArch = (typeof DENSE_ARCHS)[number];

export function isDenseArch(arch: string): arch is DenseArch {
  return (DENSE_ARCHS as readonly string[]).includes(arch);
}

const NO_EXPERTS = { moeInter: 0, experts: 0, topK: 0 };

export const DENSE_DIMS: Partial<Record<ShapeName, Dims>> = {
  tiny: { layers: 4, hidden: 128, inter: 256, heads: 4, kvHeads: 2, headDim: 32, vocab: 640, ...NO_EXPERTS },
  'dense-small': {
    layers: 28,
    hidden: 1024,
    inter: 3072,
    heads: 16,
    kvHeads: 8,
    headDim: 128,
    vocab: 151936,
    ...NO_EXPERTS,
  },
};

/** The config.json keys of a dense arch beside those every arch shares (synth-shapes.ts). */
export function denseConfigKeys(arch: DenseArch, ids: { endoftext: number; imEnd: number }): Record<string, unknown> {
  return {
    architectures: [arch === 'qwen3' ? 'Qwen3ForCausalLM' : 'LlamaForCausalLM'],
    bos_token_id: ids.endoftext,
    eos_token_id: ids.imEnd,
    ...(arch === 'llama'
      ? { mlp_bias: false, pretraining_tp: 1 }
      : { sliding_window: null, use_sliding_window: false }),
  };
}

/** The spec fields a dense arch sets over the MoE defaults. */
export function denseOverrides(arch: Arch): Partial<SynthSpec> {
  return {
    ropeTheta: arch === 'llama' ? 500000 : 1e6,
    maxPositionEmbeddings: arch === 'llama' ? 131072 : 40960,
    rmsNormEps: arch === 'llama' ? 1e-5 : 1e-6,
    tieWordEmbeddings: true,
    nSharedExperts: 0,
    firstKDenseReplace: 0,
  };
}
