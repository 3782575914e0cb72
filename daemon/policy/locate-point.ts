// locate_point: a pixel of a camera's latest image → a 3-D point, by pinhole back-projection of
// the depth image's reading there (optical frame: +z forward, +x right, +y down) and the camera's
// extrinsics. Pure but for decodeDepth, so the maths is tested on hand-made images.
import sharp from 'sharp';
import { DEFAULT_DEPTH_SCALE, type FrameMeta } from '../../robot/link/camera-protocol.js';
import { fromPose, quatNormalize } from '../../robot/math/quaternion.js';
import { transformPoint } from '../../robot/math/transform.js';

/** A depth image of width × height; `data` holds the row-major readings of `window` only. */
export interface DepthImage {
  width: number;
  height: number;
  window: { left: number; top: number; width: number; height: number };
  data: Uint16Array;
  scale: number;
}

/** Larger depth frames are refused: no depth camera sends them, and a decode would stall. */
export const MAX_DEPTH_PIXELS = 4096 * 4096;

export type Located =
  | { ok: true; point: [number, number, number]; frame: string; depth_m: number; fallback: boolean }
  | { ok: false; reason: string };

/** Side of the window whose median non-zero reading stands in for a pixel without one. */
export const FALLBACK_WINDOW = 5;

/**
 * The point seen at continuous image coordinates (x, y) of the depth image (pixel (i, j) covers
 * [i, i+1) × [j, j+1), its centre at (i + 0.5, j + 0.5), as in docs/cameras.md), in the frame the
 * camera's extrinsics name. A pixel without a reading takes the median of the non-zero readings
 * in the FALLBACK_WINDOW around it (`fallback: true`).
 */
export function locatePoint(
  depth: DepthImage,
  meta: Pick<FrameMeta, 'intrinsics' | 'extrinsics'>,
  x: number,
  y: number,
): Located {
  const { width, height } = depth;
  if (!(x >= 0 && x < width && y >= 0 && y < height))
    return { ok: false, reason: `pixel (${x}, ${y}) is outside the depth image (${width}×${height})` };
  const k = meta.intrinsics;
  if (!k) return { ok: false, reason: 'the depth image has no intrinsics' };
  const e = meta.extrinsics;
  if (e?.pose.length !== 7) return { ok: false, reason: 'the depth image has no extrinsics (pose of the camera)' };
  const i = Math.floor(x);
  const j = Math.floor(y);
  let units = reading(depth, i, j);
  const fallback = units === 0;
  if (fallback) {
    units = windowMedian(depth, i, j);
    if (units === 0)
      return { ok: false, reason: `no depth reading within ${FALLBACK_WINDOW}×${FALLBACK_WINDOW} px of (${i}, ${j})` };
  }
  const z = units * depth.scale;
  const optical = [((x - k.cx) * z) / k.fx, ((y - k.cy) * z) / k.fy, z];
  const q = quatNormalize(new Float64Array(4), e.pose.slice(3, 7));
  const t = fromPose(e.pose.slice(0, 3), q);
  const p = transformPoint(new Float64Array(3), t, optical);
  return { ok: true, point: [p[0]!, p[1]!, p[2]!], frame: e.frame, depth_m: z, fallback };
}

/** Median of the non-zero readings in the window around (i, j); 0 when there are none. */
function windowMedian(d: DepthImage, i: number, j: number): number {
  const r = Math.floor(FALLBACK_WINDOW / 2);
  const seen: number[] = [];
  for (let y = Math.max(0, j - r); y <= Math.min(d.height - 1, j + r); y++)
    for (let x = Math.max(0, i - r); x <= Math.min(d.width - 1, i + r); x++) {
      const u = reading(d, x, y);
      if (u > 0) seen.push(u);
    }
  if (seen.length === 0) return 0;
  seen.sort((a, b) => a - b);
  const m = seen.length >> 1;
  return seen.length % 2 ? seen[m]! : (seen[m - 1]! + seen[m]!) / 2;
}

/** The reading at pixel (i, j); 0 (no reading) outside the decoded window. */
function reading(d: DepthImage, i: number, j: number): number {
  const { left, top, width, height } = d.window;
  const [x, y] = [i - left, j - top];
  return x >= 0 && x < width && y >= 0 && y < height ? d.data[y * width + x]! : 0;
}

/** The size of a depth PNG from its header; throws above MAX_DEPTH_PIXELS. */
export async function depthSize(png: Uint8Array): Promise<{ width: number; height: number }> {
  const { width, height } = await sharp(png, { limitInputPixels: false }).metadata();
  if (!width || !height) throw new Error('depth image has no size');
  if (width * height > MAX_DEPTH_PIXELS)
    throw new Error(`depth image is ${width}×${height} = ${width * height} pixels, more than ${MAX_DEPTH_PIXELS}`);
  return { width, height };
}

/**
 * A 16-bit grayscale PNG of depth units, decoded whole or, given pixel `around`, only the
 * FALLBACK_WINDOW around it (all locatePoint reads); throws when it is not one.
 */
export async function decodeDepth(
  png: Uint8Array,
  depthScale = DEFAULT_DEPTH_SCALE,
  around?: [number, number],
): Promise<DepthImage> {
  const size = await depthSize(png);
  const r = Math.floor(FALLBACK_WINDOW / 2);
  // A pixel outside is clamped in: locatePoint reports it from the full size.
  const i = Math.min(Math.max(0, around?.[0] ?? 0), size.width - 1);
  const j = Math.min(Math.max(0, around?.[1] ?? 0), size.height - 1);
  const [left, top] = [Math.max(0, i - r), Math.max(0, j - r)];
  const window = around
    ? { left, top, width: Math.min(size.width, i + r + 1) - left, height: Math.min(size.height, j + r + 1) - top }
    : { left: 0, top: 0, ...size };
  // grey16 keeps all 16 bits; decoding without it would give 8-bit values widened back to 16.
  const { data, info } = await sharp(png, { limitInputPixels: MAX_DEPTH_PIXELS, sequentialRead: true })
    .extract(window)
    .toColourspace('grey16')
    .raw({ depth: 'ushort' })
    .toBuffer({ resolveWithObject: true });
  if (info.channels !== 1) throw new Error(`depth image has ${info.channels} channels, not 1`);
  // sharp's 16-bit raw output is in host byte order, as Uint16Array reads it.
  const bytes = data.byteOffset % 2 ? Buffer.from(data) : data;
  const words = new Uint16Array(bytes.buffer, bytes.byteOffset, info.width * info.height);
  return { ...size, window, data: words, scale: depthScale };
}
