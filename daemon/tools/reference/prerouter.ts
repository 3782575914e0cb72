// Prerouter heads in float64 for the reference forward: head N maps layer N's MoE input and the
// one-hots of layer N's top-k at t and t−1 to layer N+1's router logits for token t+1,
// linear_init·f + fc2·gelu_erf(fc1·f). The zero-training head is layer N+1's router applied
// to layer N's hidden state.
import { SafetensorsFile } from '../../models/safetensors-reader.js';
import { denseMatrix, matvec, type RefMatrix, type RefWeights, toFloat64 } from './weights.js';

export interface RefPrerouter {
  /** Logits of layer owner+1 for the next token, or undefined when `owner` has no head. */
  predict(
    owner: number,
    hidden: Float64Array,
    cur: readonly number[],
    prev: readonly number[] | undefined,
  ): Float64Array | undefined;
}

/** erf in float64: its Taylor series for |x| ≤ 3, Laplace's continued fraction for erfc above. */
export function erf(x: number): number {
  const a = Math.abs(x);
  if (a <= 3) {
    let term = a;
    let sum = a;
    for (let n = 1; Math.abs(term) > 1e-17 * Math.abs(sum); n++) {
      term *= (-a * a) / n;
      sum += term / (2 * n + 1);
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  let f = a;
  for (let k = 60; k >= 1; k--) f = a + k / 2 / f;
  return Math.sign(x) * (1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / f);
}

export const geluErf = (x: number): number => 0.5 * x * (1 + erf(x / Math.SQRT2));

/** `router`: the router's module path inside a layer (mlp.gate; bailing: mlp.gate.gate_proj). */
export function zeroTrainingPrerouter(w: RefWeights, moeLayers: ReadonlySet<number>, router: string): RefPrerouter {
  return {
    predict: (owner, hidden) =>
      moeLayers.has(owner) && moeLayers.has(owner + 1)
        ? matvec(w.matrix(`model.layers.${owner + 1}.${router}`), hidden)
        : undefined,
  };
}

export function filePrerouter(path: string, hidden: number, experts: number): RefPrerouter {
  const file = SafetensorsFile.open(path);
  const heads = new Map<number, { fc1: RefMatrix; fc2: RefMatrix; linear: RefMatrix }>();
  const F = hidden + 2 * experts;
  try {
    for (const name of file.tensors.keys()) {
      const m = /^layers\.(\d+)\.fc1\.weight$/.exec(name);
      if (!m) continue;
      const p = `layers.${m[1]}`;
      const load = (n: string, rows: number) => {
        const info = file.tensors.get(`${p}.${n}.weight`);
        if (!info) throw new Error(`${path}: missing ${p}.${n}.weight`);
        const data = toFloat64(info, file.read(info.name));
        return denseMatrix(rows, data.length / rows, data);
      };
      const fc1 = load('fc1', file.tensors.get(name)!.shape[0]!);
      heads.set(Number(m[1]), { fc1, fc2: load('fc2', experts), linear: load('linear_init', experts) });
    }
  } finally {
    file.close();
  }
  return {
    predict(owner, x, cur, prev) {
      const h = heads.get(owner);
      if (!h) return undefined;
      const f = new Float64Array(F);
      f.set(x);
      for (const e of cur) f[hidden + e] = 1;
      for (const e of prev ?? []) f[hidden + experts + e] = 1;
      const y = matvec(h.linear, f);
      const u = matvec(h.fc1, f).map(geluErf);
      const z = matvec(h.fc2, u);
      for (let i = 0; i < y.length; i++) y[i] += z[i]!;
      return y;
    },
  };
}
