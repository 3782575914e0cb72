// Random weights for synthetic models, as streams of tensor bytes. Every tensor draws from its
// own Prng seeded by (model seed, tensor name), so any tensor can be regenerated alone.
//  - quantised Linear modules: uniform values (std given by the caller), MLX-quantised with
//    bf16 scales/biases (the quantiser then produces negative scales wherever the group's
//    largest-magnitude value is positive, as in real checkpoints);
//  - stacked experts (most of the bytes): uniform random codes straight from the PRNG, per-group
//    |scale| = std / std(codes) * U(0.75, 1.25) with a random sign, bias = -scale * (2^bits-1)/2,
//    so each expert weight has mean ~0 and the requested std without a quantisation pass;
//  - plain tensors (norms, biases, the GLM router): bf16 or f32 uniform values.
import { Prng } from '../../robot/common/prng.js';
import { numberToBf16, roundBf16 } from '../models/float16.js';
import {
  allocQuantized,
  quantizeRowsInto,
  type QuantBits,
  type QuantGroup,
  type QuantizedMatrix,
} from '../models/mlx-quant.js';
import type { TensorSource } from '../models/safetensors-writer.js';

/** Per-tensor PRNG: FNV-1a of the name mixed with the model seed. */
export function tensorPrng(seed: number, name: string): Prng {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return new Prng((h ^ Math.imul(seed >>> 0, 0x9e3779b1)) >>> 0);
}

const CHUNK_WORDS = 1 << 22; // 16 MB of uint32 per chunk

function bytesOf(a: Uint32Array | Uint16Array | Float32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

function bf16Bytes(values: ArrayLike<number>): Uint8Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = numberToBf16(values[i]);
  return bytesOf(out);
}

/** Uniform values with standard deviation `std` (range ±std·√3) from 32-bit draws. */
function fillUniform(rng: Prng, out: Float32Array, std: number, words: Uint32Array): void {
  rng.fillU32(words);
  const a = std * Math.sqrt(3);
  for (let i = 0; i < out.length; i++) out[i] = (words[i] / 2147483648 - 1) * a;
}

/** A plain tensor (bf16 or f32) of uniform values in [center - halfWidth, center + halfWidth]. */
export function plainTensor(
  seed: number,
  name: string,
  dtype: 'BF16' | 'F32',
  shape: number[],
  center: number,
  halfWidth: number,
): TensorSource {
  return {
    name,
    dtype,
    shape,
    *chunks() {
      const n = shape.reduce((a, b) => a * b, 1);
      const words = new Uint32Array(n);
      tensorPrng(seed, name).fillU32(words);
      const v = new Float32Array(n);
      for (let i = 0; i < n; i++) v[i] = center + (words[i] / 2147483648 - 1) * halfWidth;
      yield dtype === 'F32' ? bytesOf(v) : bf16Bytes(v);
    },
  };
}

export interface QuantSpec {
  bits: QuantBits;
  groupSize: QuantGroup;
}

/** The three tensors (.weight, .scales, .biases) of a quantised Linear [out, in]. */
export function quantizedLinear(
  seed: number,
  path: string,
  out: number,
  inp: number,
  std: number,
  q: QuantSpec,
): TensorSource[] {
  let cached: QuantizedMatrix | undefined;
  const matrix = (): QuantizedMatrix => {
    if (cached) return cached;
    const m = allocQuantized(out, inp, q.bits, q.groupSize);
    const rng = tensorPrng(seed, `${path}.weight`);
    const rowsPerBlock = Math.max(1, Math.floor(CHUNK_WORDS / inp));
    const words = new Uint32Array(rowsPerBlock * inp);
    const vals = new Float32Array(rowsPerBlock * inp);
    for (let r = 0; r < out; r += rowsPerBlock) {
      const n = Math.min(rowsPerBlock, out - r);
      fillUniform(rng, vals.subarray(0, n * inp), std, words.subarray(0, n * inp));
      quantizeRowsInto(m, vals.subarray(0, n * inp), r, n, { roundParam: roundBf16 });
    }
    cached = m;
    return m;
  };
  const groups = inp / q.groupSize;
  return [
    {
      name: `${path}.weight`,
      dtype: 'U32',
      shape: [out, (inp * q.bits) / 32],
      *chunks() {
        yield bytesOf(matrix().weight);
      },
    },
    {
      name: `${path}.scales`,
      dtype: 'BF16',
      shape: [out, groups],
      *chunks() {
        yield bf16Bytes(matrix().scales);
      },
    },
    {
      name: `${path}.biases`,
      dtype: 'BF16',
      shape: [out, groups],
      *chunks() {
        yield bf16Bytes(matrix().biases);
        cached = undefined; // written last: free the module before the next one
      },
    },
  ];
}

/** The three tensors of stacked experts [E, out, in] (mlx-lm's switch_mlp layout). */
export function quantizedExperts(
  seed: number,
  path: string,
  experts: number,
  out: number,
  inp: number,
  std: number,
  q: QuantSpec,
): TensorSource[] {
  const groups = inp / q.groupSize;
  const nBins = (1 << q.bits) - 1;
  const codeStd = Math.sqrt(((nBins + 1) ** 2 - 1) / 12);
  const perExpertGroups = out * groups;
  // Scales and biases come from one stream so the biases tensor can recompute its scales.
  function* params(which: 'scales' | 'biases'): Generator<Uint8Array> {
    const rng = tensorPrng(seed, `${path}.scales`);
    const words = new Uint32Array(perExpertGroups * 2);
    const vals = new Float32Array(perExpertGroups);
    for (let e = 0; e < experts; e++) {
      rng.fillU32(words);
      for (let g = 0; g < perExpertGroups; g++) {
        const mag = (std / codeStd) * (0.75 + 0.5 * (words[2 * g] / 4294967296));
        const s = roundBf16(words[2 * g + 1] & 1 ? -mag : mag);
        vals[g] = which === 'scales' ? s : -s * (nBins / 2);
      }
      yield bf16Bytes(vals);
    }
  }
  const wordsPerExpert = (out * inp * q.bits) / 32;
  return [
    {
      name: `${path}.weight`,
      dtype: 'U32',
      shape: [experts, out, (inp * q.bits) / 32],
      *chunks() {
        const rng = tensorPrng(seed, `${path}.weight`);
        let left = experts * wordsPerExpert;
        const buf = new Uint32Array(Math.min(left, CHUNK_WORDS));
        while (left > 0) {
          const n = Math.min(left, buf.length);
          rng.fillU32(buf.subarray(0, n));
          yield bytesOf(buf.subarray(0, n));
          left -= n;
        }
      },
    },
    { name: `${path}.scales`, dtype: 'BF16', shape: [experts, out, groups], chunks: () => params('scales') },
    { name: `${path}.biases`, dtype: 'BF16', shape: [experts, out, groups], chunks: () => params('biases') },
  ];
}

/** Standard deviations of the synthetic models: projections 1/√fan_in, output projections
 *  halved, router logits ~1.5, final logits ~3; routers and gates mlx-lm keeps 8-bit. */
export const OUT_GAIN = 0.5;
export const ROUTER_STD = 1.5;
export const LOGIT_STD = 3;
export const GATE8: QuantSpec = { bits: 8, groupSize: 64 };

/** Appends tensors to `t`: quantised linears, plain tensors and SwiGLU MLPs of width `d`. */
export function tensorAppender(t: TensorSource[], seed: number, q: QuantSpec, d: number) {
  const lin = (path: string, out: number, inp: number, std: number, qs = q) =>
    t.push(...quantizedLinear(seed, path, out, inp, std, qs));
  const plain = (name: string, shape: number[], center: number, half: number, dtype: 'BF16' | 'F32' = 'BF16') =>
    t.push(plainTensor(seed, name, dtype, shape, center, half));
  const mlp = (p: string, inter: number) => {
    lin(`${p}.gate_proj`, inter, d, 1 / Math.sqrt(d));
    lin(`${p}.up_proj`, inter, d, 1 / Math.sqrt(d));
    lin(`${p}.down_proj`, d, inter, OUT_GAIN / Math.sqrt(inter));
  };
  return { lin, plain, mlp };
}
