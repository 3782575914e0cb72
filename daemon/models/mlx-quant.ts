// MLX affine quantisation (mlx `affine_quantize` / `affine_dequantize`): groups of `groupSize`
// consecutive inputs share a scale and a bias, w = scale * q + bias, q in [0, 2^bits - 1].
// Codes pack LSB-first into little-endian uint32 words: element 8w+p of a 4-bit row is bits
// [4p, 4p+3] of word w. Scales may be negative (bias is the group's largest-magnitude value).

export type QuantBits = 2 | 4 | 8;
export type QuantGroup = 32 | 64 | 128;

export const QUANT_BITS: readonly QuantBits[] = [2, 4, 8];
export const QUANT_GROUPS: readonly QuantGroup[] = [32, 64, 128];

/** A quantised [rows, cols] matrix exactly as MLX stores it (scales/biases before 16-bit storage). */
export interface QuantizedMatrix {
  rows: number;
  cols: number;
  bits: QuantBits;
  groupSize: QuantGroup;
  /** [rows, cols * bits / 32] packed codes. */
  weight: Uint32Array;
  /** [rows, cols / groupSize]. */
  scales: Float32Array;
  biases: Float32Array;
}

export interface QuantizeOptions {
  /** Rounds a scale or bias to its storage type (e.g. bfloat16) before codes are computed,
   *  so that dequantising the stored values reproduces the quantiser's own grid. */
  roundParam?: (x: number) => number;
}

/** Checks bits/group/cols; returns a message naming the rule, or undefined when valid. */
export function quantLayoutError(cols: number, bits: number, groupSize: number): string | undefined {
  if (!QUANT_BITS.includes(bits as QuantBits)) return `bits must be one of ${QUANT_BITS.join(', ')}, got ${bits}`;
  if (!QUANT_GROUPS.includes(groupSize as QuantGroup)) {
    return `group_size must be one of ${QUANT_GROUPS.join(', ')}, got ${groupSize}`;
  }
  if (cols % groupSize !== 0) return `input dimension ${cols} is not a multiple of group_size ${groupSize}`;
  return undefined;
}

/** Round half to even, as mlx `round` (and numpy) do. */
export function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const fr = Math.fround;

/**
 * Quantises row-major float values [rows, cols] with MLX's affine algorithm, in float32
 * arithmetic like MLX on float32 weights: per group, edge = the value of largest magnitude,
 * scale = ±(max - min) / (2^bits - 1) snapped so that edge is a whole number of steps,
 * bias = edge, q = clip(round((w - bias) / scale), 0, 2^bits - 1). The snap can leave the far
 * end of a group up to one step outside the grid (clipped), exactly as MLX does.
 */
export function quantizeAffine(
  values: ArrayLike<number>,
  rows: number,
  cols: number,
  bits: QuantBits,
  groupSize: QuantGroup,
  options: QuantizeOptions = {},
): QuantizedMatrix {
  const err = quantLayoutError(cols, bits, groupSize);
  if (err) throw new RangeError(`quantizeAffine: ${err}`);
  if (values.length !== rows * cols) {
    throw new RangeError(`quantizeAffine: ${values.length} values for a [${rows}, ${cols}] matrix`);
  }
  const q = allocQuantized(rows, cols, bits, groupSize);
  quantizeRowsInto(q, Float32Array.from(values), 0, rows, options);
  return q;
}

/** Allocates an all-zero quantised matrix of the given layout. */
export function allocQuantized(rows: number, cols: number, bits: QuantBits, groupSize: QuantGroup): QuantizedMatrix {
  return {
    rows,
    cols,
    bits,
    groupSize,
    weight: new Uint32Array((rows * cols * bits) / 32),
    scales: new Float32Array((rows * cols) / groupSize),
    biases: new Float32Array((rows * cols) / groupSize),
  };
}

/** Quantises `values` (rows [row0, row0 + n) of q, row-major) into q; lets callers stream rows. */
export function quantizeRowsInto(
  q: QuantizedMatrix,
  values: Float32Array,
  row0: number,
  n: number,
  options: QuantizeOptions = {},
): void {
  const { cols, bits, groupSize } = q;
  const nBins = (1 << bits) - 1;
  const perWord = 32 / bits;
  const groupsPerRow = cols / groupSize;
  const round = options.roundParam ?? ((x: number) => x);
  let wi = (row0 * cols) / perWord;
  let gi = row0 * groupsPerRow;
  for (let start = 0; start < n * cols; start += groupSize, gi++) {
    let wMin = Infinity;
    let wMax = -Infinity;
    for (let i = start; i < start + groupSize; i++) {
      const v = values[i];
      if (v < wMin) wMin = v;
      if (v > wMax) wMax = v;
    }
    const mask = Math.abs(wMin) > Math.abs(wMax);
    let scale = Math.max(fr((wMax - wMin) / nBins), fr(1e-7));
    if (!mask) scale = -scale;
    const edge = mask ? wMin : wMax;
    const q0 = roundHalfEven(fr(edge / scale));
    if (q0 !== 0) scale = fr(edge / q0);
    const bias = round(q0 === 0 ? 0 : edge);
    scale = round(scale);
    q.scales[gi] = scale;
    q.biases[gi] = bias;
    // Groups hold whole words (group sizes are multiples of 32 / bits), so pack word by word.
    for (let i = start; i < start + groupSize; i += perWord) {
      let word = 0;
      for (let p = 0; p < perWord; p++) {
        // |x| <= 2^bits here (bias is the group's edge), so int32 rounding is safe; ties to even.
        const x = fr(fr(values[i + p] - bias) / scale);
        let c = (x + 0.5) | 0;
        if (c - x === 0.5 && (c & 1) !== 0) c--;
        c = Math.min(Math.max(c, 0), nBins);
        word |= c << (p * bits);
      }
      q.weight[wi++] = word >>> 0;
    }
  }
}

/** Code of element `col` in a row whose packed words start at `wordOffset`. */
export function codeAt(weight: Uint32Array, wordOffset: number, col: number, bits: number): number {
  const perWord = 32 / bits;
  const word = weight[wordOffset + Math.floor(col / perWord)];
  return (word >>> ((col % perWord) * bits)) & ((1 << bits) - 1);
}

/** Dequantises to float64 exactly: scale * q + bias with the stored scale and bias. */
export function dequantizeAffine(q: QuantizedMatrix): Float64Array {
  const { rows, cols, bits, groupSize } = q;
  const out = new Float64Array(rows * cols);
  const wordsPerRow = (cols * bits) / 32;
  const groupsPerRow = cols / groupSize;
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const gi = r * groupsPerRow + Math.floor(c / groupSize);
      out[r * cols + c] = q.scales[gi] * codeAt(q.weight, r * wordsPerRow, c, bits) + q.biases[gi];
    }
  }
  return out;
}
