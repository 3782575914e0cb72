// Images are preprocessed as shown: an EXIF orientation turns them upright (size, grid and pixels),
// and transparency is composited onto white as vLLM does, not black.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { imageHeader, prepareImage } from '../../../daemon/vision/image-input.js';
import { parsePreprocessorConfig } from '../../../daemon/vision/preprocessor-config.js';

const CFG = parsePreprocessorConfig({
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
  min_pixels: 1024,
  max_pixels: 512 * 512,
});
const LIMITS = { maxInputPixels: 40_000_000, maxBytes: 1 << 22, maxPixels: 0 };
const ROW = 3 * 2 * 16 * 16; // one patch row: C·T·P·P values, R first

test('an EXIF orientation of 6 (stored 64×32, a quarter turn clockwise) is preprocessed upright, 32×64', async () => {
  // Stored: left half red, right half blue; turned clockwise, red is on top.
  const raw = Buffer.alloc(64 * 32 * 3);
  for (let y = 0; y < 32; y++)
    for (let x = 0; x < 64; x++) raw.set(x < 32 ? [255, 0, 0] : [0, 0, 255], (y * 64 + x) * 3);
  const jpeg = await sharp(raw, { raw: { width: 64, height: 32, channels: 3 } })
    .jpeg({ quality: 95 })
    .withMetadata({ orientation: 6 })
    .toBuffer();
  assert.equal((await sharp(jpeg).metadata()).orientation, 6);
  assert.deepEqual(await imageHeader(jpeg, 'image/jpeg'), { width: 32, height: 64 });
  const p = await prepareImage(jpeg, CFG, LIMITS, 'image/jpeg');
  assert.deepEqual([p.width, p.height, p.resized, p.grid], [32, 64, [64, 32], [1, 4, 2]]);
  // R of the first patch (top-left, red) and of the last (bottom, blue), normalised to ±1.
  assert.ok(p.pixels[0]! > 0.9, `top R ${p.pixels[0]}`);
  assert.ok(p.pixels[(p.grid[1] * p.grid[2] - 1) * ROW]! < -0.9, 'bottom R');
});

test('transparent pixels become white, as vLLM composites them', async () => {
  const png = await sharp({
    create: { width: 32, height: 32, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } },
  })
    .png()
    .toBuffer();
  const p = await prepareImage(png, CFG, LIMITS, 'image/png');
  // White (255) rescaled and normalised with mean and std 0.5: 1 in every channel.
  assert.deepEqual([p.pixels[0], p.pixels[512], p.pixels[1024]], [1, 1, 1]);
  assert.ok(p.pixels.every((v) => v === 1));
});
