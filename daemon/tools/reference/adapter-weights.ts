// A plan's A and B as float64 in the normalised layout (A [r, in], B [out, r]): the input of the
// float64 reference forward and of the merge check, read with the TS safetensors reader
// (independent of the native loader, which the reference checks).
import { SafetensorsFile } from '../../models/safetensors-reader.js';
import { toFloat64 } from './weights.js';
import type { AdapterPlan } from '../../engine/adapters/plan.js';

export interface FloatLora {
  rank: number;
  in: number;
  out: number;
  scale: number;
  /** [rank, in] row-major. */
  a: Float64Array;
  /** [out, rank] row-major. */
  b: Float64Array;
}

/** Module path → its LoRA. */
export type FloatAdapter = Map<string, FloatLora>;

/** Row-major [rows, cols] → [cols, rows]. */
export function transpose(m: Float64Array, rows: number, cols: number): Float64Array {
  const t = new Float64Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = m[r * cols + c]!;
  return t;
}

export function readAdapterWeights(plan: AdapterPlan): FloatAdapter {
  const st = SafetensorsFile.open(plan.file);
  try {
    const out: FloatAdapter = new Map();
    for (const m of plan.modules) {
      const ai = st.tensors.get(m.a)!;
      const bi = st.tensors.get(m.b)!;
      let a = toFloat64(ai, st.read(m.a));
      let b = toFloat64(bi, st.read(m.b));
      const [inDim, outDim] = m.transposed ? [ai.shape[0]!, bi.shape[1]!] : [ai.shape[1]!, bi.shape[0]!];
      if (m.transposed) {
        a = transpose(a, inDim, m.rank);
        b = transpose(b, m.rank, outDim);
      }
      out.set(m.module, { rank: m.rank, in: inDim, out: outDim, scale: m.scale, a, b });
    }
    return out;
  } finally {
    st.close();
  }
}

/** y += scale · B (A x), in float64. */
export function addLoraDelta(l: FloatLora, x: Float64Array, y: Float64Array): void {
  const t = new Float64Array(l.rank);
  for (let k = 0; k < l.rank; k++) {
    let s = 0;
    for (let c = 0; c < l.in; c++) s += l.a[k * l.in + c]! * x[c]!;
    t[k] = s;
  }
  for (let o = 0; o < l.out; o++) {
    let s = 0;
    for (let k = 0; k < l.rank; k++) s += l.b[o * l.rank + k]! * t[k]!;
    y[o]! += l.scale * s;
  }
}
