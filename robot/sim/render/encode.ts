// Encodes rendered frames with sharp, apart from rendering so each can be timed on its own.
// Depth images are 16-bit greyscale PNGs in millimetres: 0 = nothing hit, 65535 = 65.535 m or farther.
import sharp from 'sharp';
import type { Frame } from './rasterizer.js';

export interface EncodeOptions {
  format: 'jpeg' | 'png';
  /** JPEG quality 1–100 (default 85); ignored for PNG. */
  quality?: number;
}

export const DEFAULT_JPEG_QUALITY = 85;

/** The frame's RGB image as JPEG or PNG. */
export function encodeRgb(frame: Frame, options: EncodeOptions): Promise<Buffer> {
  const image = sharp(frame.rgb, { raw: { width: frame.width, height: frame.height, channels: 3 } });
  if (options.format === 'png') return image.png().toBuffer();
  const quality = options.quality ?? DEFAULT_JPEG_QUALITY;
  if (!(Number.isInteger(quality) && quality >= 1 && quality <= 100))
    throw new RangeError(`quality must be an integer in [1, 100] (got ${quality})`);
  return image.jpeg({ quality }).toBuffer();
}

/** Depth in metres → millimetres, rounded, saturating at 65535. */
export function depthMillimetres(depth: Float32Array): Uint16Array {
  const mm = new Uint16Array(depth.length);
  for (let k = 0; k < depth.length; k++) {
    mm[k] = Math.min(65535, Math.max(0, Math.round(depth[k] * 1000)));
  }
  return mm;
}

/** The frame's depth image as a 16-bit greyscale PNG in millimetres. */
export function encodeDepth(frame: Frame): Promise<Buffer> {
  if (!frame.depth) throw new Error('the frame was rendered without depth');
  return sharp(depthMillimetres(frame.depth), {
    raw: { width: frame.width, height: frame.height, channels: 1 },
  })
    .toColourspace('grey16')
    .png()
    .toBuffer();
}
