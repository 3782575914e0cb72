// GGUF v3 writer (the llama.cpp file format), streaming tensor data.
// Layout: "GGUF", u32 version 3, u64 tensor count, u64 kv count, kv pairs, tensor infos
// (name, n_dims, dims innermost first, ggml type, offset), padding to `general.alignment`
// (32), then each tensor's data aligned to 32. Strings are u64 length + UTF-8 bytes.
import { writeStreamed } from '../models/stream-file.js';

export const GGUF_ALIGNMENT = 32;

/** ggml tensor types this writer emits, with block size and bytes per block. */
export const GGML_TYPES = {
  F32: { id: 0, block: 1, bytes: 4 },
  F16: { id: 1, block: 1, bytes: 2 },
  Q4_0: { id: 2, block: 32, bytes: 18 },
  Q8_0: { id: 8, block: 32, bytes: 34 },
} as const;
export type GgmlType = keyof typeof GGML_TYPES;

const VALUE_TYPE = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  string: 8,
  array: 9,
  u64: 10,
  i64: 11,
  f64: 12,
} as const;
type Scalar = Exclude<keyof typeof VALUE_TYPE, 'array'>;

export type GgufValue =
  | { type: Scalar; value: number | string | boolean | bigint }
  | { type: 'array'; of: Scalar; value: readonly (number | string | boolean)[] };

export interface GgufTensor {
  name: string;
  /** ggml order: dims[0] is the contiguous (input) dimension. */
  dims: number[];
  type: GgmlType;
  chunks(): Iterable<Uint8Array>;
}

export function ggmlByteLength(type: GgmlType, dims: readonly number[]): number {
  const t = GGML_TYPES[type];
  if (dims[0] % t.block !== 0)
    throw new RangeError(`${type} needs the first dimension to be a multiple of ${t.block}, got ${dims[0]}`);
  return (dims.reduce((a, b) => a * b, 1) / t.block) * t.bytes;
}

class ByteSink {
  private parts: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    this.parts.push(b);
    this.length += b.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  u64(v: number | bigint): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  scalar(type: Scalar, v: number | string | boolean | bigint): void {
    const b = Buffer.alloc(8);
    switch (type) {
      case 'string':
        return this.str(String(v));
      case 'u8':
        b.writeUInt8(Number(v));
        return this.push(b.subarray(0, 1));
      case 'i8':
        b.writeInt8(Number(v));
        return this.push(b.subarray(0, 1));
      case 'bool':
        b.writeUInt8(v ? 1 : 0);
        return this.push(b.subarray(0, 1));
      case 'u16':
        b.writeUInt16LE(Number(v));
        return this.push(b.subarray(0, 2));
      case 'i16':
        b.writeInt16LE(Number(v));
        return this.push(b.subarray(0, 2));
      case 'u32':
        b.writeUInt32LE(Number(v));
        return this.push(b.subarray(0, 4));
      case 'i32':
        b.writeInt32LE(Number(v));
        return this.push(b.subarray(0, 4));
      case 'f32':
        b.writeFloatLE(Number(v));
        return this.push(b.subarray(0, 4));
      case 'u64':
        b.writeBigUInt64LE(BigInt(v));
        return this.push(b);
      case 'i64':
        b.writeBigInt64LE(BigInt(v));
        return this.push(b);
      case 'f64':
        b.writeDoubleLE(Number(v));
        return this.push(b);
    }
  }
  concat(): Buffer {
    return Buffer.concat(this.parts);
  }
}

const pad = (n: number): number => (GGUF_ALIGNMENT - (n % GGUF_ALIGNMENT)) % GGUF_ALIGNMENT;

/** Writes a GGUF v3 file; returns its size in bytes. */
export function writeGguf(path: string, kv: ReadonlyMap<string, GgufValue>, tensors: readonly GgufTensor[]): number {
  const head = new ByteSink();
  head.push(Buffer.from('GGUF', 'ascii'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(kv.size);
  for (const [key, v] of kv) {
    head.str(key);
    head.u32(VALUE_TYPE[v.type]);
    if (v.type === 'array') {
      head.u32(VALUE_TYPE[v.of]);
      head.u64(v.value.length);
      for (const item of v.value) head.scalar(v.of, item);
    } else head.scalar(v.type, v.value);
  }
  let offset = 0;
  const sizes = tensors.map((t) => ggmlByteLength(t.type, t.dims));
  tensors.forEach((t, i) => {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML_TYPES[t.type].id);
    head.u64(offset);
    offset += sizes[i] + pad(sizes[i]);
  });
  head.push(Buffer.alloc(pad(head.length)));
  const parts = tensors.map((t, i) => ({
    name: t.name,
    bytes: sizes[i],
    chunks: () => t.chunks(),
    padding: pad(sizes[i]),
  }));
  return writeStreamed(path, head.concat(), parts, 'gguf');
}

/** A block's scale d as little-endian f16 at out[o]; returns 1/d in float32 (0 for d = 0), as ggml's quantisers use it. */
function putScale(d: number, out: Uint8Array, o: number, toF16: (v: number) => number): number {
  const h = toF16(d);
  out[o] = h & 0xff;
  out[o + 1] = h >>> 8;
  return d !== 0 ? Math.fround(1 / d) : 0;
}

/** ggml's reference Q4_0 quantiser for one row (length a multiple of 32): per block of 32,
 *  d = (value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)); byte j holds
 *  element j in its low nibble and element j + 16 in its high nibble. */
export function quantizeRowQ4_0(x: ArrayLike<number>, out: Uint8Array, toF16: (v: number) => number): void {
  const f = Math.fround;
  for (let b = 0; b * 32 < x.length; b++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const v = f(x[b * 32 + j]);
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const o = b * 18;
    const id = putScale(f(max / -8), out, o, toF16);
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(f(f(f(x[b * 32 + j]) * id) + 8.5)));
      const q1 = Math.min(15, Math.trunc(f(f(f(x[b * 32 + 16 + j]) * id) + 8.5)));
      out[o + 2 + j] = q0 | (q1 << 4);
    }
  }
}

/**
 * One row as Q8_0 (ggml's quantize_row_q8_0_ref): per block of 32, f16 d = max|x| / 127 then
 * 32 int8 q = round(x / d), halves away from zero; float32 arithmetic as ggml's.
 */
export function quantizeRowQ8_0(x: ArrayLike<number>, out: Uint8Array, toF16: (v: number) => number): void {
  const f = Math.fround;
  for (let b = 0; b * 32 < x.length; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(f(x[b * 32 + j])));
    const o = b * 34;
    const id = putScale(f(amax / 127), out, o, toF16);
    for (let j = 0; j < 32; j++) {
      const v = f(f(x[b * 32 + j]) * id);
      out[o + 2 + j] = (Math.sign(v) * Math.round(Math.abs(v))) & 0xff;
    }
  }
}
