// 16-bit float conversions (bfloat16 and IEEE half) used by checkpoint writers and readers.
// Rounding is round-to-nearest-even, as PyTorch, MLX and ggml do it.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** bfloat16 bits → number. */
export function bf16ToNumber(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0];
}

/** number → bfloat16 bits (via float32, round-to-nearest-even; NaN stays NaN). */
export function numberToBf16(x: number): number {
  f32[0] = x;
  const u = u32[0];
  if ((u & 0x7f800000) === 0x7f800000 && (u & 0x007fffff) !== 0) return ((u >>> 16) | 0x40) & 0xffff;
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}

/** Rounds a number to the nearest bfloat16 value. */
export function roundBf16(x: number): number {
  return bf16ToNumber(numberToBf16(x));
}

/** IEEE half bits → number (subnormals, infinities and NaN included). */
export function f16ToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const frac = bits & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** number → IEEE half bits (via float32, round-to-nearest-even, overflow to infinity). */
export function numberToF16(x: number): number {
  f32[0] = x;
  const u = u32[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  const mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit-one mantissa right, rounding to even.
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = m & ((1 << shift) - 1);
    let h = m >>> shift;
    if (rest > half || (rest === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/** Rounds a number to a float dtype's nearest value (F32, F16 or BF16). */
export function roundTo(dtype: 'F32' | 'F16' | 'BF16'): (x: number) => number {
  if (dtype === 'F16') return (x) => f16ToNumber(numberToF16(x));
  if (dtype === 'BF16') return roundBf16;
  return Math.fround;
}

/** Values as little-endian bytes of a float dtype (rounded to nearest even). */
export function encodeFloats(values: ArrayLike<number>, dtype: 'F32' | 'F16' | 'BF16'): Uint8Array {
  if (dtype === 'F32') return new Uint8Array(Float32Array.from(values).buffer);
  return new Uint8Array(Uint16Array.from(values, dtype === 'F16' ? numberToF16 : numberToBf16).buffer);
}
