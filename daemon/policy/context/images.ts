// Image decoding with sharp: small greyscale thumbnails for the scene-change measure, and the
// images sent to a model (longest side capped, JPEG). A file sharp cannot read is named.
import sharp from 'sharp';
import { ContextInputError } from './types.js';

/** size×size greyscale pixels (aspect not kept: the measure compares frames of one video). */
export async function thumbnail(path: string, size: number, field: string): Promise<Uint8Array> {
  try {
    const { data } = await sharp(path)
      .greyscale()
      .resize(size, size, { fit: 'fill' })
      .raw()
      .toBuffer({ resolveWithObject: true });
    return new Uint8Array(data.buffer, data.byteOffset, size * size);
  } catch (e) {
    throw unreadable(path, field, e);
  }
}

export interface EncodedImage {
  bytes: Buffer;
  width: number;
  height: number;
}

/** JPEG with its longest side at most maxSide (never enlarged). */
export async function encodeImage(
  path: string,
  maxSide: number,
  quality: number,
  field: string,
): Promise<EncodedImage> {
  try {
    const { data, info } = await sharp(path)
      .rotate()
      .resize(maxSide, maxSide, { fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality })
      .toBuffer({ resolveWithObject: true });
    return { bytes: data, width: info.width, height: info.height };
  } catch (e) {
    throw unreadable(path, field, e);
  }
}

function unreadable(path: string, field: string, e: unknown): ContextInputError {
  return new ContextInputError(`${field}: cannot decode image ${path} (${(e as Error).message})`, field, path);
}
