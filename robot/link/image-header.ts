// Checks an encoded camera frame without decoding it: the magic bytes match the declared
// encoding, the header (PNG IHDR, JPEG SOF) parses and gives the declared size, and the
// file is complete (PNG IEND, JPEG EOI). Pixel data is not decoded.
import type { CameraEncoding, FrameMeta } from './camera-protocol.js';

export interface ImageHeader {
  encoding: CameraEncoding;
  width: number;
  height: number;
  /** PNG only: bits per sample and colour type (0 = grayscale). */
  bitDepth?: number;
  colorType?: number;
}

/** Why a frame is dropped (the codes counted per camera and in metrics). */
export type FrameProblemCode =
  | 'oversize'
  | 'empty'
  | 'no_meta'
  | 'invalid_meta'
  | 'wrong_encoding'
  | 'corrupt'
  | 'size_mismatch'
  | 'depth_format'
  | 'too_many_streams';

export interface FrameProblem {
  code: FrameProblemCode;
  detail: string;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const PNG_IEND = Buffer.from([0, 0, 0, 0, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82]);
const JPEG_SOI = Buffer.from([0xff, 0xd8, 0xff]);

/** The encoding the magic bytes say, or null. */
export function sniffEncoding(data: Buffer): CameraEncoding | null {
  if (data.subarray(0, 8).equals(PNG_SIGNATURE)) return 'png';
  if (data.subarray(0, 3).equals(JPEG_SOI)) return 'jpeg';
  return null;
}

type Parsed = { ok: true; value: ImageHeader } | { ok: false; detail: string };

function pngHeader(d: Buffer): Parsed {
  if (d.length < 33 || d.readUInt32BE(8) !== 13 || d.toString('latin1', 12, 16) !== 'IHDR')
    return { ok: false, detail: 'PNG: the first chunk is not a 13-byte IHDR' };
  if (!d.subarray(d.length - 12).equals(PNG_IEND))
    return { ok: false, detail: 'PNG: does not end with IEND (truncated)' };
  const [width, height] = [d.readUInt32BE(16), d.readUInt32BE(20)];
  return { ok: true, value: { encoding: 'png', width, height, bitDepth: d[24]!, colorType: d[25]! } };
}

// Start-of-frame markers carry the size; C4 (DHT), C8 (JPG) and CC (DAC) are not frames.
const isSof = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
// Markers without a length field: TEM, RSTn, SOI.
const standalone = (m: number) => m === 0x01 || (m >= 0xd0 && m <= 0xd8);

function jpegHeader(d: Buffer): Parsed {
  // Some encoders pad the file with zero bytes after EOI.
  let end = d.length;
  while (end > 4 && d[end - 1] === 0) end--;
  if (end < 4 || d[end - 2] !== 0xff || d[end - 1] !== 0xd9)
    return { ok: false, detail: 'JPEG: does not end with EOI (truncated)' };
  let i = 2;
  while (i + 4 <= d.length) {
    if (d[i] !== 0xff) return { ok: false, detail: `JPEG: no marker at byte ${i}` };
    while (d[i + 1] === 0xff && i + 2 < d.length) i++; // fill bytes
    const m = d[i + 1]!;
    i += 2;
    if (standalone(m)) continue;
    if (m === 0xd9 || m === 0xda) return { ok: false, detail: 'JPEG: no start-of-frame header before the scan' };
    const len = d.readUInt16BE(i);
    if (len < 2) return { ok: false, detail: `JPEG: segment length ${len} at byte ${i}` };
    if (isSof(m) && len >= 8 && i + 7 <= d.length) {
      const [height, width] = [d.readUInt16BE(i + 3), d.readUInt16BE(i + 5)];
      if (height === 0 || width === 0) return { ok: false, detail: 'JPEG: zero width or height in the SOF header' };
      return { ok: true, value: { encoding: 'jpeg', width, height } };
    }
    i += len;
  }
  return { ok: false, detail: 'JPEG: ends before a start-of-frame header' };
}

/** Reads the header of a PNG or JPEG; null with the reason for anything else. */
export function readImageHeader(data: Buffer): Parsed {
  const enc = sniffEncoding(data);
  if (enc === 'png') return pngHeader(data);
  if (enc === 'jpeg') return jpegHeader(data);
  return { ok: false, detail: 'neither a PNG nor a JPEG (magic bytes)' };
}

/** What is wrong with an image given its metadata, or null when it may be served. */
export function checkImage(image: Buffer, meta: FrameMeta): FrameProblem | null {
  if (image.length === 0) return { code: 'empty', detail: 'the image is empty' };
  const enc = sniffEncoding(image);
  if (enc !== meta.encoding)
    return {
      code: 'wrong_encoding',
      detail: `meta.encoding is "${meta.encoding}" but the bytes are ${enc ? `a ${enc.toUpperCase()}` : 'neither PNG nor JPEG'}`,
    };
  const h = readImageHeader(image);
  if (!h.ok) return { code: 'corrupt', detail: h.detail };
  if (h.value.width !== meta.width || h.value.height !== meta.height)
    return {
      code: 'size_mismatch',
      detail: `meta says ${meta.width}×${meta.height}, the image header says ${h.value.width}×${h.value.height}`,
    };
  if ((meta.kind ?? 'color') === 'depth' && (h.value.bitDepth !== 16 || h.value.colorType !== 0))
    return {
      code: 'depth_format',
      detail: `a depth image must be a 16-bit grayscale PNG (bit depth ${h.value.bitDepth}, colour type ${h.value.colorType})`,
    };
  return null;
}
