// Tiny valid images for camera tests, encoded with sharp.
import sharp, { type SharpOptions } from 'sharp';

/** A solid-colour JPEG or PNG of width × height. */
export function solidImage(encoding: 'jpeg' | 'png', width: number, height: number, r = 200): Promise<Buffer> {
  const img = sharp({ create: { width, height, channels: 3, background: { r, g: 40, b: 40 } } });
  return (encoding === 'jpeg' ? img.jpeg() : img.png()).toBuffer();
}

/** A 16-bit grayscale PNG (a depth image) with every pixel `value`. */
export function depthPng(width: number, height: number, value = 1234): Promise<Buffer> {
  const raw = Buffer.from(new Uint16Array(width * height).fill(value).buffer);
  // sharp reads 16-bit raw input with `depth`, which its typings for raw input omit.
  const input = { raw: { width, height, channels: 1, depth: 'ushort' } } as SharpOptions;
  return sharp(raw, input).toColourspace('grey16').png().toBuffer();
}

/** A 1×1 PNG whose IHDR claims 50000×50000: decoders must refuse it from the header alone. */
export async function hugeHeaderPng(): Promise<Buffer> {
  const png = Buffer.from(await solidImage('png', 1, 1));
  png.writeUInt32BE(50000, 16);
  png.writeUInt32BE(50000, 20);
  return png;
}

/** A deterministic RGB pattern (differs by seed) as a PNG data URL, as a chat image part sends it. */
export async function patternDataUrl(seed: number, width = 64, height = 64): Promise<string> {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = (i * seed * 37 + (i >> 7) * seed) & 255;
  const png = await sharp(raw, { raw: { width, height, channels: 3 } })
    .png()
    .toBuffer();
  return `data:image/png;base64,${png.toString('base64')}`;
}
