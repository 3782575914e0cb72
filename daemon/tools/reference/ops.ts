// Float64 building blocks of the reference forward pass (plain loops, obviously right).

/** x * rsqrt(mean(x²) + eps) * w over x[offset, offset + w.length). */
export function rmsNorm(x: Float64Array, w: Float64Array, eps: number, offset = 0): Float64Array {
  const n = w.length;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += x[offset + i] * x[offset + i];
  const inv = 1 / Math.sqrt(ss / n + eps);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = x[offset + i] * inv * w[i];
  return out;
}

/** Per-head RMSNorm of a [heads * headDim] vector, in place. */
export function rmsNormHeads(x: Float64Array, w: Float64Array, eps: number): void {
  for (let h = 0; h * w.length < x.length; h++) x.set(rmsNorm(x, w, eps, h * w.length), h * w.length);
}

/**
 * Non-traditional ("rotate half", NeoX) RoPE on each head of a [heads * headDim] vector, in
 * place: pairs (i, i + rot/2) for i < rot/2 rotate by pos * theta^(-2i/rot); dims >= rot pass.
 */
/** `pos`: one position, or one per frequency slot (multimodal RoPE); `invFreq`: the pairs' own
 *  frequencies (rope_scaling) instead of theta^(-2i/rot). */
export function rope(
  x: Float64Array,
  headDim: number,
  rot: number,
  pos: number | readonly number[],
  theta: number,
  invFreq?: readonly number[],
  /** YaRN's attention factor: cos and sin scaled by it (Hugging Face's attention_scaling). */
  mscale = 1,
): void {
  const half = rot / 2;
  for (let h = 0; h * headDim < x.length; h++) {
    const o = h * headDim;
    for (let i = 0; i < half; i++) {
      const angle = (typeof pos === 'number' ? pos : pos[i]) * (invFreq?.[i] ?? theta ** ((-2 * i) / rot));
      const c = mscale * Math.cos(angle);
      const s = mscale * Math.sin(angle);
      const a = x[o + i];
      const b = x[o + i + half];
      x[o + i] = a * c - b * s;
      x[o + i + half] = b * c + a * s;
    }
  }
}

/** Per frequency slot (rot/2 of them), the position that rotates it: time, height or width,
 *  interleaved T,H,W,T,… while each section lasts, or in contiguous sections. */
export function mropeSlots(
  pos: readonly [number, number, number],
  rot: number,
  section: readonly [number, number, number],
  interleaved: boolean,
): number[] {
  return Array.from({ length: rot / 2 }, (_, i) => {
    if (interleaved) {
      if (i % 3 === 1 && i < 3 * section[1]) return pos[1];
      if (i % 3 === 2 && i < 3 * section[2]) return pos[2];
      return pos[0];
    }
    return i < section[0] ? pos[0] : i < section[0] + section[1] ? pos[1] : pos[2];
  });
}

export function silu(x: number): number {
  return x / (1 + Math.exp(-x));
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

/** Numerically stable softmax. */
export function softmax(x: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]);
  const out = new Float64Array(x.length);
  let sum = 0;
  for (let i = 0; i < x.length; i++) sum += out[i] = Math.exp(x[i] - m);
  for (let i = 0; i < x.length; i++) out[i] /= sum;
  return out;
}

/** a += s * b. */
export function axpy(a: Float64Array, s: number, b: Float64Array): void {
  for (let i = 0; i < a.length; i++) a[i] += s * b[i];
}

/**
 * Causal GQA attention of one query position over cached keys/values ([kvHeads * headDim] each):
 * query head h reads kv head floor(h / (heads / kvHeads)); scale headDim^-0.5.
 */
export function attend(
  q: Float64Array,
  keys: Float64Array[],
  values: Float64Array[],
  heads: number,
  kvHeads: number,
  headDim: number,
): Float64Array {
  const out = new Float64Array(heads * headDim);
  const scale = 1 / Math.sqrt(headDim);
  const scores = new Float64Array(keys.length);
  for (let h = 0; h < heads; h++) {
    const kvo = Math.floor(h / (heads / kvHeads)) * headDim;
    const qo = h * headDim;
    for (let t = 0; t < keys.length; t++) {
      let s = 0;
      for (let i = 0; i < headDim; i++) s += q[qo + i] * keys[t][kvo + i];
      scores[t] = s * scale;
    }
    const p = softmax(scores);
    for (let t = 0; t < keys.length; t++) {
      for (let i = 0; i < headDim; i++) out[qo + i] += p[t] * values[t][kvo + i];
    }
  }
  return out;
}
