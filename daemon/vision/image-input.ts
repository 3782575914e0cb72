// An image from a request (data URL or bytes) → checked, decoded, resized RGB at the model's
// patch grid → patches. Only data URLs: the daemon never fetches http(s) images. Every failure
// is an ImageError naming what was wrong (requests answer it with 400).
import sharp, { type Metadata } from 'sharp';
import { cappedConfig, type Patches, patchify, smartResize } from './preprocess.js';
import type { PreprocessorConfig } from './preprocessor-config.js';
import { imageFormat, imageSize } from './image-size.js';

export class ImageError extends Error {
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(message);
    this.name = 'ImageError';
  }
}

export interface ImageLimits {
  /** Refuse an image whose header says more pixels than this (before decoding). */
  maxInputPixels: number;
  /** Refuse encoded images larger than this. */
  maxBytes: number;
  /** Downscale to at most this many pixels (0: the preprocessor's max_pixels). */
  maxPixels: number;
  /** Refuse a request (chat body, policy.start) with more images than this. */
  maxImages: number;
}

/** What is checked of an image before a request queues; an absent limit is not checked. */
export type PreflightLimits = Pick<ImageLimits, 'maxBytes'> &
  Partial<Pick<ImageLimits, 'maxInputPixels' | 'maxImages'>>;

const FORMATS = new Map([
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['image/jpg', 'jpeg'],
  ['image/webp', 'webp'],
  ['image/gif', 'gif'],
]);

export interface DecodedUrl {
  bytes: Buffer;
  mime: string;
}

/** Splits a `data:image/<type>;base64,...` URL; http(s) and other schemes are refused. */
export function decodeDataUrl(url: unknown, limits: Pick<ImageLimits, 'maxBytes'>): DecodedUrl {
  if (typeof url !== 'string') throw new ImageError('type', `must be a data URL string, got ${typeof url}`);
  if (/^https?:/i.test(url))
    throw new ImageError('scheme', 'http(s) image URLs are refused (the daemon does not fetch); send a data: URL');
  const m = /^data:([^;,]+)((?:;[^;,]*)*?);base64,/i.exec(url);
  if (!m) throw new ImageError('scheme', `must be a data:image/...;base64, URL, got "${url.slice(0, 32)}…"`);
  const mime = m[1].toLowerCase();
  if (!FORMATS.has(mime))
    throw new ImageError('mime', `MIME type ${mime} is not an image type (png, jpeg, webp or gif)`);
  // MIME base64 breaks lines every 76 characters: ASCII whitespace is dropped, as atob() does, so
  // the byte bound counts base64 characters only.
  const payload = url.slice(m[0].length);
  const b64 = payload.replace(/[\t\n\f\r ]+/g, '');
  if (b64.length > (limits.maxBytes * 4) / 3 + 4)
    throw new ImageError('size', `the image is larger than max_image_bytes ${limits.maxBytes}`);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) {
    const bad = /[^A-Za-z0-9+/=\t\n\f\r ]/.exec(payload);
    const what = bad ? `${JSON.stringify(bad[0])} at payload character ${bad.index}` : '"=" padding before its end';
    throw new ImageError('base64', `the data URL payload is not valid base64: ${what}`);
  }
  return { bytes: Buffer.from(b64, 'base64'), mime };
}

/**
 * decodeDataUrl, then the checks that need no model and no decoding: the byte limit, the declared
 * MIME against the bytes' signature and the pixels the header declares (when it is understood).
 * What a chat request runs before it queues and policy.start on its reference images.
 */
export function checkDataUrl(url: unknown, limits: PreflightLimits): DecodedUrl {
  const d = decodeDataUrl(url, limits);
  if (d.bytes.length > limits.maxBytes)
    throw new ImageError('size', `the image has ${d.bytes.length} bytes, more than max_image_bytes ${limits.maxBytes}`);
  const format = imageFormat(d.bytes);
  if (FORMATS.get(d.mime) !== format)
    throw new ImageError(
      'mime',
      `declared ${d.mime} but the bytes are ${format ?? 'not a png, jpeg, webp or gif image'}`,
    );
  // A header imageSize does not understand is checked when the image is decoded.
  const size = imageSize(d.bytes);
  if (size && limits.maxInputPixels !== undefined) checkPixels(size, limits.maxInputPixels);
  return d;
}

/** Refuses a size of more than `maxInputPixels` pixels. */
export function checkPixels({ width, height }: { width: number; height: number }, maxInputPixels: number): void {
  if (width * height > maxInputPixels)
    throw new ImageError(
      'pixels',
      `the image is ${width}×${height} = ${width * height} pixels, more than max_input_pixels ${maxInputPixels}`,
    );
}

/** The size an image's header gives; refuses bytes that are not a PNG, JPEG, WebP or GIF (of `mime`, when given). */
export async function imageHeader(bytes: Buffer, mime?: string): Promise<{ width: number; height: number }> {
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch (e) {
    throw new ImageError('decode', `not a readable image: ${(e as Error).message}`);
  }
  const format: string | undefined = meta.format;
  if (mime && FORMATS.get(mime) !== format)
    throw new ImageError('mime', `declared ${mime} but the bytes are ${format ?? 'not an image'}`);
  if (![...FORMATS.values()].includes(format ?? ''))
    throw new ImageError('format', `image format ${format} is not accepted (png, jpeg, webp or gif)`);
  // The size as shown: EXIF orientations 5–8 turn the stored image a quarter turn.
  const { width = 0, height = 0 } = meta.autoOrient ?? meta;
  if (width < 1 || height < 1) throw new ImageError('decode', 'the image has no size');
  return { width, height };
}

export interface PreparedImage extends Patches {
  /** The decoded size and the size the patches were cut at. */
  width: number;
  height: number;
  resized: [number, number];
}

/** Decodes and preprocesses one encoded image. `mime` (when given) must match its content. */
export async function prepareImage(
  bytes: Buffer,
  cfg: PreprocessorConfig,
  limits: Omit<ImageLimits, 'maxImages'>,
  mime?: string,
): Promise<PreparedImage> {
  if (bytes.length > limits.maxBytes)
    throw new ImageError('size', `the image has ${bytes.length} bytes, more than max_image_bytes ${limits.maxBytes}`);
  const { width, height } = await imageHeader(bytes, mime);
  checkPixels({ width, height }, limits.maxInputPixels);
  const capped = cappedConfig(cfg, limits.maxPixels);
  let size: [number, number];
  try {
    size = smartResize(height, width, capped);
  } catch (e) {
    throw new ImageError('aspect', (e as Error).message);
  }
  let rgb: Buffer;
  try {
    // Upright by EXIF, and transparency over white as vLLM composites it (not black).
    let img = sharp(bytes, { failOn: 'truncated', limitInputPixels: limits.maxInputPixels, pages: 1 })
      .autoOrient()
      .flatten({ background: '#ffffff' });
    if (size[0] !== height || size[1] !== width) img = img.resize(size[1], size[0], { fit: 'fill', kernel: 'cubic' });
    rgb = await img.toColourspace('srgb').raw().toBuffer();
  } catch (e) {
    throw new ImageError('decode', `the image does not decode: ${(e as Error).message}`);
  }
  if (rgb.length !== size[0] * size[1] * 3) throw new ImageError('decode', 'the image did not decode to RGB');
  return { ...patchify(rgb, size[0], size[1], cfg), width, height, resized: size };
}
