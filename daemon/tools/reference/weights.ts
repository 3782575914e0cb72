// Weights of an MLX folder for the float64 reference: each matrix row is dequantised on the fly
// (w = scale * q + bias, exact in float64), so memory stays at the size of the raw tensors.
import { bf16ToNumber, f16ToNumber } from '../../models/float16.js';
import { SafetensorsModel, type TensorInfo } from '../../models/safetensors-reader.js';
import type { QuantParams, RefConfig } from './model-config.js';

/** A [rows, cols] matrix whose rows are produced in float64. */
export interface RefMatrix {
  rows: number;
  cols: number;
  row(r: number, out?: Float64Array): Float64Array;
}

/** A row-major [rows, cols] matrix over float64 values already in memory. */
export function denseMatrix(rows: number, cols: number, data: Float64Array): RefMatrix {
  return {
    rows,
    cols,
    row: (r, out = new Float64Array(cols)) => {
      out.set(data.subarray(r * cols, (r + 1) * cols));
      return out;
    },
  };
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
      case 'F64':
        out[i] = bytes.readDoubleLE(8 * i);
        break;
      case 'F32':
        out[i] = bytes.readFloatLE(4 * i);
        break;
      case 'F16':
        out[i] = f16ToNumber(bytes.readUInt16LE(2 * i));
        break;
      case 'BF16':
        out[i] = bf16ToNumber(bytes.readUInt16LE(2 * i));
        break;
      default:
        throw new Error(`${info.name}: dtype ${info.dtype} is not a float type`);
    }
  }
  return out;
}

export class RefWeights {
  private readonly cache = new Map<string, Float64Array | Uint32Array>();

  /** With `caching` off (streaming exports of big models) nothing is kept: each matrix() call
   *  reads just its tensor, or just one expert's slice of a stacked tensor. */
  constructor(
    readonly st: SafetensorsModel,
    private readonly config: RefConfig,
    private readonly caching = true,
  ) {}

  static open(dir: string, config: RefConfig, caching = true): RefWeights {
    return new RefWeights(SafetensorsModel.open(dir), config, caching);
  }

  close(): void {
    this.st.close();
  }

  has(name: string): boolean {
    return this.st.has(this.config.tensorPrefix + name);
  }

  /** A float tensor (norm weights, biases, plain matrices) as float64. */
  floats(name: string): Float64Array {
    return this.part(this.config.tensorPrefix + name, undefined, toFloat64);
  }

  /** Decoded tensor data, or the slice of one expert (leading dimension) of a stacked tensor. */
  private part<T extends Float64Array | Uint32Array>(
    name: string,
    expert: number | undefined,
    decode: (info: TensorInfo, b: Buffer) => T,
  ): T {
    const info = this.st.info(name);
    const perExpert = expert === undefined ? 0 : (info.end - info.begin) / info.shape[0];
    if (!this.caching)
      return decode(
        info,
        expert === undefined ? this.st.read(name) : this.st.read(name, expert * perExpert, perExpert),
      );
    let whole = this.cache.get(name) as T | undefined;
    if (!whole) {
      whole = decode(info, this.st.read(name));
      this.cache.set(name, whole);
    }
    if (expert === undefined) return whole;
    const n = whole.length / info.shape[0];
    return whole.subarray(expert * n, (expert + 1) * n) as T;
  }

  private static words(info: TensorInfo, b: Buffer): Uint32Array {
    if (info.dtype !== 'U32') throw new Error(`${info.name}: packed weights must be U32, found ${info.dtype}`);
    return new Uint32Array(b.buffer, b.byteOffset, b.length / 4).slice();
  }

  quantFor(path: string): QuantParams {
    const q = this.config.quantOverrides.get(path) ?? this.config.quant;
    if (!q) throw new Error(`${path} is quantised but config.json has no quantization entry`);
    return q;
  }

  /** Rows and columns of module `path` (one expert's when `stacked`), from the headers alone. */
  dims(path: string, stacked = false): { rows: number; cols: number } {
    const wInfo = this.st.info(`${path}.weight`);
    const [rows, inner] = stacked ? wInfo.shape.slice(1) : wInfo.shape;
    if (!this.st.has(`${path}.scales`)) return { rows, cols: inner };
    const { bits, groupSize } = this.quantFor(path);
    const sInfo = this.st.info(`${path}.scales`);
    const groups = sInfo.shape[sInfo.shape.length - 1];
    const cols = (inner * 32) / bits;
    if (cols !== groups * groupSize) {
      throw new Error(
        `${path}: weight gives ${cols} inputs at ${bits} bits, scales give ${groups} groups of ${groupSize}`,
      );
    }
    return { rows, cols };
  }

  /** Module `path` as a matrix: quantised when `<path>.scales` exists, else `<path>.weight`.
   *  With `expert`, selects one expert of a stacked [E, out, in] tensor. */
  matrix(name: string, expert?: number): RefMatrix {
    const path = this.config.tensorPrefix + name;
    const { rows, cols } = this.dims(path, expert !== undefined);
    if (!this.st.has(`${path}.scales`)) {
      return denseMatrix(rows, cols, this.part(`${path}.weight`, expert, toFloat64));
    }
    const { bits, groupSize } = this.quantFor(path);
    const wordsPerRow = (cols * bits) / 32;
    const groupsPerRow = cols / groupSize;
    const w = this.part(`${path}.weight`, expert, RefWeights.words);
    const scales = this.part(`${path}.scales`, expert, toFloat64);
    const biases = this.part(`${path}.biases`, expert, toFloat64);
    return {
      rows,
      cols,
      row: (r, out = new Float64Array(cols)) => {
        // Codes LSB-first: element p of a word is bits [p*bits, (p+1)*bits).
        const perWord = 32 / bits;
        const mask = (1 << bits) - 1;
        let wi = r * wordsPerRow;
        let c = 0;
        for (let g = r * groupsPerRow, end = g + groupsPerRow; g < end; g++) {
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
