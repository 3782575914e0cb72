// Qwen-VL image preprocessing on decoded RGB: smart resize to the merged-patch grid within the
// min/max pixel area, rescale, normalise, duplicate the still frame over the temporal patch and
// flatten patches in merge-block order, as the Qwen2-VL image processor does.
import type { PreprocessorConfig } from './preprocessor-config.js';

/** Python's round(): halves to even. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** The config with max_pixels lowered to `maxPixels` (0: unchanged); the daemon's cap wins, so
 *  min_pixels comes down with it. */
export function cappedConfig(c: PreprocessorConfig, maxPixels: number): PreprocessorConfig {
  if (maxPixels <= 0) return c;
  const max = Math.min(c.maxPixels, maxPixels);
  return { ...c, maxPixels: max, minPixels: Math.min(c.minPixels, max) };
}

/** Output [height, width]: multiples of patch·merge, area within [minPixels, maxPixels]. */
export function smartResize(height: number, width: number, c: PreprocessorConfig): [number, number] {
  const f = c.patchSize * c.mergeSize;
  if (Math.max(height, width) / Math.min(height, width) > 200)
    throw new RangeError(`an image's aspect ratio must be at most 200, got ${width}×${height}`);
  let h = roundHalfEven(height / f) * f;
  let w = roundHalfEven(width / f) * f;
  if (h * w > c.maxPixels) {
    const beta = Math.sqrt((height * width) / c.maxPixels);
    h = Math.max(f, Math.floor(height / beta / f) * f);
    w = Math.max(f, Math.floor(width / beta / f) * f);
  } else if (h * w < c.minPixels) {
    const beta = Math.sqrt(c.minPixels / (height * width));
    h = Math.ceil((height * beta) / f) * f;
    w = Math.ceil((width * beta) / f) * f;
  }
  return [h, w];
}

export interface Patches {
  /** [gridT·gridH·gridW, 3·temporal·patch²] rows in merge-block order. */
  pixels: Float32Array;
  /** (t, h, w) in patches. */
  grid: [number, number, number];
}

/** rgb: height × width × 3 bytes, already at a smartResize size. */
export function patchify(rgb: Uint8Array, height: number, width: number, c: PreprocessorConfig): Patches {
  const P = c.patchSize;
  const m = c.mergeSize;
  const T = c.temporalPatchSize;
  if (height % (P * m) !== 0 || width % (P * m) !== 0 || rgb.length !== height * width * 3)
    throw new RangeError(`patchify: a ${width}×${height} RGB image must be a multiple of ${P * m} on both sides`);
  const gh = height / P;
  const gw = width / P;
  const row = 3 * T * P * P;
  const pixels = new Float32Array(gh * gw * row);
  const scale = c.doRescale ? c.rescaleFactor : 1;
  const lut = [0, 1, 2].map((ch) => {
    const t = new Float32Array(256);
    for (let v = 0; v < 256; v++) t[v] = c.doNormalize ? (v * scale - c.mean[ch]) / c.std[ch] : v * scale;
    return t;
  });
  let r = 0;
  for (let bh = 0; bh < gh / m; bh++)
    for (let bw = 0; bw < gw / m; bw++)
      for (let mh = 0; mh < m; mh++)
        for (let mw = 0; mw < m; mw++, r++) {
          const y0 = (bh * m + mh) * P;
          const x0 = (bw * m + mw) * P;
          for (let ch = 0; ch < 3; ch++)
            for (let t = 0; t < T; t++)
              for (let py = 0; py < P; py++) {
                const o = r * row + ((ch * T + t) * P + py) * P;
                const src = ((y0 + py) * width + x0) * 3 + ch;
                for (let px = 0; px < P; px++) pixels[o + px] = lut[ch][rgb[src + px * 3]];
              }
        }
  return { pixels, grid: [1, gh, gw] };
}

/** Image tokens (merged patches) of a grid. */
export const imageTokens = (grid: readonly number[], merge: number): number =>
  (grid[0] * grid[1] * grid[2]) / (merge * merge);
