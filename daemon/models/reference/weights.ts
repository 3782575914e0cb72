// Weights of an MLX folder for the float64 reference: each matrix row is dequantised on the fly
// (w = scale * q + bias, exact in float64), so memory stays at the size of the raw tensors.
import { bf16ToNumber, f16ToNumber } from '../float16.js';
import { SafetensorsModel, type TensorInfo } from '../safetensors-reader.js';
import type { QuantParams, RefConfig } from './model-config.js';

/** A [rows, cols] matrix whose rows are produced in float64. */
export interface RefMatrix {
  rows: number;
  cols: number;
  row(r: number, out?: Float64Array): Float64Array;
}

export function matvec(m: RefMatrix, x: Float64Array): Float64Array {
  if (x.length !== m.cols) throw new RangeError(`matvec: input has ${x.length} values, matrix has ${m.cols} columns`);
  const y = new Float64Array(m.rows);
  const w = new Float64Array(m.cols);
  for (let r = 0; r < m.rows; r++) {
    m.row(r, w);
    let s = 0;
    for (let c = 0; c < m.cols; c++) s += w[c] * x[c];
    y[r] = s;
  }
  return y;
}

/** Decodes a float tensor (F32, F16, BF16, F64) to float64. */
export function toFloat64(info: TensorInfo, bytes: Buffer): Float64Array {
  const n = bytes.length / (info.dtype === 'F64' ? 8 : info.dtype === 'F32' ? 4 : 2);
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    switch (info.dtype) {
      case 'F64': out[i] = bytes.readDoubleLE(8 * i); break;
      case 'F32': out[i] = bytes.readFloatLE(4 * i); break;
      case 'F16': out[i] = f16ToNumber(bytes.readUInt16LE(2 * i)); break;
      case 'BF16': out[i] = bf16ToNumber(bytes.readUInt16LE(2 * i)); break;
      default: throw new Error(`${info.name}: dtype ${info.dtype} is not a float type`);
    }
  }
  return out;
}

export class RefWeights {
  private readonly cache = new Map<string, Float64Array | Uint32Array>();

  constructor(
    readonly st: SafetensorsModel,
    private readonly config: RefConfig,
  ) {}

  static open(dir: string, config: RefConfig): RefWeights {
    return new RefWeights(SafetensorsModel.open(dir), config);
  }

  close(): void {
    this.st.close();
  }

  has(name: string): boolean {
    return this.st.has(name);
  }

  /** A float tensor (norm weights, biases, plain matrices) as float64. */
  floats(name: string): Float64Array {
    const hit = this.cache.get(name);
    if (hit) return hit as Float64Array;
    const v = toFloat64(this.st.info(name), this.st.read(name));
    this.cache.set(name, v);
    return v;
  }

  private words(name: string): Uint32Array {
    const hit = this.cache.get(name);
    if (hit) return hit as Uint32Array;
    const info = this.st.info(name);
    if (info.dtype !== 'U32') throw new Error(`${name}: packed weights must be U32, found ${info.dtype}`);
    const b = this.st.read(name);
    const v = new Uint32Array(b.buffer, b.byteOffset, b.length / 4).slice();
    this.cache.set(name, v);
    return v;
  }

  quantFor(path: string): QuantParams {
    const q = this.config.quantOverrides.get(path) ?? this.config.quant;
    if (!q) throw new Error(`${path} is quantised but config.json has no quantization entry`);
    return q;
  }

  /** Module `path` as a matrix: quantised when `<path>.scales` exists, else `<path>.weight`.
   *  With `expert`, selects one expert of a stacked [E, out, in] tensor. */
  matrix(path: string, expert?: number): RefMatrix {
    if (!this.st.has(`${path}.scales`)) {
      const info = this.st.info(`${path}.weight`);
      const [rows, cols] = expert === undefined ? info.shape : info.shape.slice(1);
      const all = this.floats(`${path}.weight`);
      const base = (expert ?? 0) * rows * cols;
      return { rows, cols, row: (r, out = new Float64Array(cols)) => (out.set(all.subarray(base + r * cols, base + (r + 1) * cols)), out) };
    }
    const { bits, groupSize } = this.quantFor(path);
    const wInfo = this.st.info(`${path}.weight`);
    const sInfo = this.st.info(`${path}.scales`);
    const stacked = expert !== undefined;
    const [rows, wordsPerRow] = stacked ? wInfo.shape.slice(1) : wInfo.shape;
    const groupsPerRow = sInfo.shape[sInfo.shape.length - 1];
    const cols = (wordsPerRow * 32) / bits;
    if (cols !== groupsPerRow * groupSize) {
      throw new Error(`${path}: weight gives ${cols} inputs at ${bits} bits, scales give ${groupsPerRow} groups of ${groupSize}`);
    }
    const w = this.words(`${path}.weight`);
    const scales = this.floats(`${path}.scales`);
    const biases = this.floats(`${path}.biases`);
    const e = expert ?? 0;
    return {
      rows,
      cols,
      row: (r, out = new Float64Array(cols)) => {
        // Codes LSB-first: element p of a word is bits [p*bits, (p+1)*bits).
        const perWord = 32 / bits;
        const mask = (1 << bits) - 1;
        let wi = (e * rows + r) * wordsPerRow;
        let c = 0;
        for (let g = (e * rows + r) * groupsPerRow, end = g + groupsPerRow; g < end; g++) {
          const s = scales[g];
          const b = biases[g];
          for (let k = 0; k < groupSize; k += perWord) {
            const word = w[wi++];
            for (let p = 0; p < perWord; p++) out[c++] = s * ((word >>> (p * bits)) & mask) + b;
          }
        }
        return out;
      },
    };
  }
}
