// Expert routing of the two MoE families, in float64. Ties in top-k go to the lower expert id
// (MLX's argpartition leaves tie order unspecified; random weights make ties improbable).
import { sigmoid, softmax } from './ops.js';

export interface Route {
  experts: number[];
  weights: number[];
}

/** Indices of the k largest values, largest first, ties to the lower index. */
export function topK(values: ArrayLike<number>, k: number): number[] {
  const idx = Array.from({ length: values.length }, (_, i) => i);
  idx.sort((a, b) => values[b] - values[a] || a - b);
  return idx.slice(0, k);
}

/** Qwen3-MoE: softmax over all experts, top-k, renormalised over the k when `norm`. */
export function routeSoftmaxTopK(logits: ArrayLike<number>, k: number, norm: boolean): Route {
  const p = softmax(logits);
  const experts = topK(p, k);
  let weights = experts.map((e) => p[e]);
  if (norm) {
    const sum = weights.reduce((a, b) => a + b, 0);
    weights = weights.map((w) => w / sum);
  }
  return { experts, weights };
}

export interface SigmoidGroupParams {
  k: number;
  nGroup: number;
  topkGroup: number;
  norm: boolean;
  scaling: number;
}

/**
 * DeepSeek-V3 noaux_tc as mlx-lm's glm4_moe does it: s = sigmoid(logits); sel = s + bias; with
 * n_group > 1 each group scores the sum of its two best sel, and all but the best topk_group
 * groups get sel = 0.0; top-k experts by sel; weights = raw s of those, divided by their sum when
 * `norm` and k > 1 (mlx-lm skips it for k = 1), times `scaling`.
 */
export function routeSigmoidGroup(logits: ArrayLike<number>, bias: ArrayLike<number>, p: SigmoidGroupParams): Route {
  const n = logits.length;
  const s = Array.from(logits, sigmoid);
  const sel = s.map((v, i) => v + bias[i]);
  if (p.nGroup > 1) {
    const size = n / p.nGroup;
    const groupScore = Array.from({ length: p.nGroup }, (_, g) => {
      const [a, b] = topK(sel.slice(g * size, (g + 1) * size), 2);
      return sel[g * size + a] + (b === undefined ? 0 : sel[g * size + b]);
    });
    const kept = new Set(topK(groupScore, p.topkGroup));
    for (let i = 0; i < n; i++) if (!kept.has(Math.floor(i / size))) sel[i] = 0;
  }
  const experts = topK(sel, p.k);
  let weights = experts.map((e) => s[e]);
  if (p.norm && p.k > 1) {
    const sum = weights.reduce((a, b) => a + b, 0);
    weights = weights.map((w) => w / sum);
  }
  return { experts, weights: weights.map((w) => w * p.scaling) };
}
