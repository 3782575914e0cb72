// Float64 forward of the synthetic vision tower (synth-vision.ts), the oracle the ONNX file run by
// onnxruntime is tested against: patch embedding, pre-LN GELU(tanh) MLP blocks, DeepStack taps
// (merge 2×2, LayerNorm, MLP) and the final merger (LayerNorm, merge, MLP).
import { LN_EPS, type VisionSpec, type VisionTensor } from '../synth-vision.js';

type Weights = Map<string, VisionTensor>;

/** x [rows, inp] · W [inp, out] + b. */
function linear(w: Weights, name: string, x: Float64Array, rows: number): Float64Array {
  const W = w.get(`${name}.weight`)!;
  const b = w.get(`${name}.bias`)!.data;
  const [inp, out] = W.dims;
  const y = new Float64Array(rows * out);
  for (let r = 0; r < rows; r++)
    for (let o = 0; o < out; o++) {
      let acc = b[o];
      for (let i = 0; i < inp; i++) acc += x[r * inp + i] * W.data[i * out + o];
      y[r * out + o] = acc;
    }
  return y;
}

function layerNorm(w: Weights, name: string, x: Float64Array, width: number): Float64Array {
  const g = w.get(`${name}.weight`)!.data;
  const b = w.get(`${name}.bias`)!.data;
  const y = new Float64Array(x.length);
  for (let r = 0; r < x.length / width; r++) {
    let mean = 0;
    for (let i = 0; i < width; i++) mean += x[r * width + i];
    mean /= width;
    let v = 0;
    for (let i = 0; i < width; i++) v += (x[r * width + i] - mean) ** 2;
    const inv = 1 / Math.sqrt(v / width + LN_EPS);
    for (let i = 0; i < width; i++) y[r * width + i] = (x[r * width + i] - mean) * inv * g[i] + b[i];
  }
  return y;
}

const gelu = (x: Float64Array): Float64Array =>
  x.map((v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v))));

export interface RefVisionOutput {
  features: Float64Array;
  deepstack: Float64Array[];
}

/** pixels [rows, 3·T·P·P] in merge-block order → features [rows/merge², outHidden] (+ DeepStack). */
export function referenceVision(v: VisionSpec, w: Weights, pixels: Float32Array, rows: number): RefVisionOutput {
  const D = v.hidden;
  const M = D * v.merge * v.merge;
  const tokens = rows / (v.merge * v.merge);
  const head = (x: Float64Array, name: string) =>
    linear(w, `${name}.fc2`, gelu(linear(w, `${name}.fc1`, x, tokens)), tokens);
  let x = linear(w, 'patch_embed', Float64Array.from(pixels), rows);
  const deepstack: Float64Array[] = [];
  for (let b = 0; b < v.depth; b++) {
    const h = linear(
      w,
      `blocks.${b}.fc2`,
      gelu(linear(w, `blocks.${b}.fc1`, layerNorm(w, `blocks.${b}.norm`, x, D), rows)),
      rows,
    );
    x = x.map((a, i) => a + h[i]);
    const j = v.deepstack.indexOf(b);
    if (j >= 0) deepstack[j] = head(layerNorm(w, `deepstack.${j}.norm`, x, M), `deepstack.${j}`);
  }
  return { features: head(layerNorm(w, 'merger.norm', x, D), 'merger'), deepstack };
}
