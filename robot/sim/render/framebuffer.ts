// Whole-image steps around a draw: the background fill, inverse depth to metres, and the 2×2
// box filter of a supersampled target.
import type { Rgb } from '../scene/types.js';
import type { Frame } from './rasterizer.js';

export function fillRgb(rgb: Uint8Array, color: Rgb): void {
  if (rgb.length === 0) return;
  rgb[0] = color[0];
  rgb[1] = color[1];
  rgb[2] = color[2];
  for (let filled = 3; filled < rgb.length; filled *= 2)
    rgb.copyWithin(filled, 0, Math.min(filled, rgb.length - filled));
}

export function depthFrom(invDepth: Float32Array, n: number): Float32Array {
  const depth = new Float32Array(n);
  for (let k = 0; k < n; k++) if (invDepth[k] > 0) depth[k] = 1 / invDepth[k];
  return depth;
}

/** 2×2 box filter of a supersampled target; depth keeps the nearest hit of each block. */
export function downsample(
  rgb: Uint8Array,
  invDepth: Float32Array,
  width: number,
  height: number,
  withDepth: boolean,
): Frame {
  const out = new Uint8Array(width * height * 3);
  const depth = withDepth ? new Float32Array(width * height) : null;
  const w2 = 2 * width;
  for (let j = 0; j < height; j++)
    for (let i = 0; i < width; i++) {
      const k00 = 2 * j * w2 + 2 * i,
        k01 = k00 + 1,
        k10 = k00 + w2,
        k11 = k10 + 1;
      const o = 3 * (j * width + i);
      for (let ch = 0; ch < 3; ch++)
        out[o + ch] = (rgb[3 * k00 + ch] + rgb[3 * k01 + ch] + rgb[3 * k10 + ch] + rgb[3 * k11 + ch] + 2) >> 2;
      if (depth) {
        const iz = Math.max(invDepth[k00], invDepth[k01], invDepth[k10], invDepth[k11]);
        if (iz > 0) depth[j * width + i] = 1 / iz;
      }
    }
  return { width, height, rgb: out, depth };
}
