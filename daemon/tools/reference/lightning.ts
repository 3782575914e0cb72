// Float64 lightning attention (bailing_moe_linear's linear layers), one token at a time, written
// straight from mlx-lm's recurrent_gla: per head S ← e^{g_h} S + k vᵀ, y = (q/√D)ᵀ S with fixed
// ALiBi-slope decays g_h, then a group RMSNorm times sigmoid(g_proj(x)).
import type { RefConfig } from './model-config.js';
import type { LinearState } from './linear-attention.js';
import { rmsNorm, rmsNormHeads, rope, sigmoid } from './ops.js';

/** One lightning layer's state: S [heads × D × D] (k index first); no conv history. */
export function emptyLightningState(c: RefConfig): LinearState {
  const { headDim: D } = c.lightning!;
  return { conv: new Float64Array(0), s: new Float64Array(c.heads * D * D) };
}

/** The ALiBi slopes of mlx-lm's _get_slopes, in float64. */
function slopes(n: number): number[] {
  const pow2 = (m: number) => Array.from({ length: m }, (_, i) => 2 ** (-(8 / m) * (i + 1)));
  const p = 2 ** Math.floor(Math.log2(n));
  if (p === n) return pow2(n);
  return [...pow2(p), ...pow2(2 * p).filter((_, i) => i % 2 === 0)].slice(0, n);
}

/** Layer l's per-head log-decays: −slope · (1 − max(0, l − 1)/max(1, L − 1) + 1e-5). */
export function lightningDecays(heads: number, layer: number, layers: number): number[] {
  const factor = 1 - Math.max(0, layer - 1) / Math.max(1, layers - 1) + 1e-5;
  return slopes(heads).map((s) => -s * factor);
}

export interface LightningParams {
  qNorm?: Float64Array;
  kNorm?: Float64Array;
  gNorm: Float64Array;
  decays: readonly number[];
}

/** One token: qkv = query_key_value(x) [3·H·D], gate = g_proj(x); returns the gated, normed y
 *  (before dense). */
export function lightningStep(
  c: RefConfig,
  p: LightningParams,
  qkv: Float64Array,
  gate: Float64Array,
  pos: number,
  st: LinearState,
): Float64Array {
  const { headDim: D, rotaryDims, groups } = c.lightning!;
  const H = c.heads;
  const HD = H * D;
  const q = qkv.slice(0, HD);
  const k = qkv.slice(HD, 2 * HD);
  const v = qkv.subarray(2 * HD, 3 * HD);
  if (p.qNorm && p.kNorm) {
    rmsNormHeads(q, p.qNorm, c.rmsEps);
    rmsNormHeads(k, p.kNorm, c.rmsEps);
  }
  rope(q, D, rotaryDims, pos, c.ropeTheta);
  rope(k, D, rotaryDims, pos, c.ropeTheta);
  const y = new Float64Array(HD);
  for (let h = 0; h < H; h++) {
    const a = Math.exp(p.decays[h]!);
    for (let i = 0; i < D; i++) {
      const row = st.s.subarray((h * D + i) * D, (h * D + i + 1) * D);
      const qi = q[h * D + i]! / Math.sqrt(D);
      for (let j = 0; j < D; j++) {
        row[j] = a * row[j]! + k[h * D + i]! * v[h * D + j]!;
        y[h * D + j] += qi * row[j]!;
      }
    }
  }
  const width = HD / groups;
  for (let g = 0; g < groups; g++) {
    const normed = rmsNorm(y, p.gNorm.subarray(g * width, (g + 1) * width), c.rmsEps, g * width);
    for (let i = 0; i < width; i++) y[g * width + i] = normed[i]! * sigmoid(gate[g * width + i]!);
  }
  return y;
}
