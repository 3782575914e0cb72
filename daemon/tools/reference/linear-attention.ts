// Float64 Gated DeltaNet (Qwen3-Next / Qwen3.5 linear attention), one token at a time, written
// straight from the equations: causal depthwise conv + SiLU over [q | k | v], unit-RMS q and k
// (q / Dk, k / √Dk), β = σ(b), decay α = exp(−exp(A_log) · softplus(a + dt_bias)), per v head
// S ← αS; S ← S + β(v − Sk)kᵀ; y = Sq, then rmsnorm(y)·w·silu(z) and out_proj.
import type { RefConfig } from './model-config.js';
import { rmsNorm, sigmoid, silu } from './ops.js';

/** One layer's recurrent state: conv history [(K-1) × C] and S [Hv × Dv × Dk]. */
export interface LinearState {
  conv: Float64Array;
  s: Float64Array;
}

export function emptyLinearState(c: RefConfig): LinearState {
  const l = c.linear!;
  const convDim = 2 * l.kHeads * l.kDim + l.vHeads * l.vDim;
  return {
    conv: new Float64Array((l.convKernel - 1) * convDim),
    s: new Float64Array(l.vHeads * l.vDim * l.kDim),
  };
}

export function cloneLinearState(st: LinearState): LinearState {
  return { conv: st.conv.slice(), s: st.s.slice() };
}

const softplus = (x: number): number => (x > 20 ? x : Math.log1p(Math.exp(x)));

/** The projections as [q | k | v] (conv input), z, b and a, from either file layout. */
export interface LinearInputs {
  qkv: Float64Array;
  z: Float64Array;
  b: Float64Array;
  a: Float64Array;
}

/** qwen3_next's per-k-head groups [q Dk | k Dk | v r·Dv | z r·Dv] and [b r | a r], regrouped. */
export function unfuse(c: RefConfig, qkvz: Float64Array, ba: Float64Array): LinearInputs {
  const { kHeads: Hk, vHeads: Hv, kDim: Dk, vDim: Dv } = c.linear!;
  const r = Hv / Hk;
  const keyDim = Hk * Dk;
  const qkv = new Float64Array(2 * keyDim + Hv * Dv);
  const z = new Float64Array(Hv * Dv);
  const b = new Float64Array(Hv);
  const a = new Float64Array(Hv);
  const group = 2 * Dk + 2 * r * Dv;
  for (let h = 0; h < Hk; h++) {
    const g = qkvz.subarray(h * group, (h + 1) * group);
    qkv.set(g.subarray(0, Dk), h * Dk);
    qkv.set(g.subarray(Dk, 2 * Dk), keyDim + h * Dk);
    qkv.set(g.subarray(2 * Dk, 2 * Dk + r * Dv), 2 * keyDim + h * r * Dv);
    z.set(g.subarray(2 * Dk + r * Dv), h * r * Dv);
    b.set(ba.subarray(h * 2 * r, h * 2 * r + r), h * r);
    a.set(ba.subarray(h * 2 * r + r, (h + 1) * 2 * r), h * r);
  }
  return { qkv, z, b, a };
}

export interface LinearParams {
  conv: Float64Array;
  dtBias: Float64Array;
  aLog: Float64Array;
  norm: Float64Array;
}

/** One token through the recurrence: returns the gated-normed y [Hv·Dv] (before out_proj). */
export function linearStep(c: RefConfig, p: LinearParams, x: LinearInputs, st: LinearState): Float64Array {
  const { kHeads: Hk, vHeads: Hv, kDim: Dk, vDim: Dv, convKernel: K } = c.linear!;
  const C = x.qkv.length;
  const keyDim = Hk * Dk;
  const conv = new Float64Array(C);
  for (let ch = 0; ch < C; ch++) {
    let s = 0;
    for (let j = 0; j < K - 1; j++) s += p.conv[ch * K + j] * st.conv[j * C + ch];
    s += p.conv[ch * K + K - 1] * x.qkv[ch];
    conv[ch] = silu(s);
  }
  st.conv.copyWithin(0, C);
  st.conv.set(x.qkv, (K - 2) * C);
  const unit = (o: number, n: number, scale: number) => {
    let ss = 0;
    for (let i = 0; i < n; i++) ss += conv[o + i] ** 2;
    const inv = scale / Math.sqrt(ss / n + 1e-6);
    for (let i = 0; i < n; i++) conv[o + i] *= inv;
  };
  for (let h = 0; h < Hk; h++) {
    unit(h * Dk, Dk, 1 / Dk);
    unit(keyDim + h * Dk, Dk, 1 / Math.sqrt(Dk));
  }
  const y = new Float64Array(Hv * Dv);
  for (let h = 0; h < Hv; h++) {
    const kh = Math.floor(h / (Hv / Hk));
    const q = conv.subarray(kh * Dk, (kh + 1) * Dk);
    const k = conv.subarray(keyDim + kh * Dk, keyDim + (kh + 1) * Dk);
    const v = conv.subarray(2 * keyDim + h * Dv, 2 * keyDim + (h + 1) * Dv);
    const alpha = Math.exp(-Math.exp(p.aLog[h]) * softplus(x.a[h] + p.dtBias[h]));
    const beta = sigmoid(x.b[h]);
    for (let i = 0; i < Dv; i++) {
      const row = st.s.subarray((h * Dv + i) * Dk, (h * Dv + i + 1) * Dk);
      let kv = 0;
      for (let j = 0; j < Dk; j++) {
        row[j] *= alpha;
        kv += row[j] * k[j];
      }
      const d = beta * (v[i] - kv);
      let out = 0;
      for (let j = 0; j < Dk; j++) {
        row[j] += d * k[j];
        out += row[j] * q[j];
      }
      y[h * Dv + i] = out;
    }
    const normed = rmsNorm(y, p.norm, c.rmsEps, h * Dv);
    for (let i = 0; i < Dv; i++) y[h * Dv + i] = normed[i] * silu(x.z[h * Dv + i]);
  }
  return y;
}
