// Qwen-VL preprocessing against hand-computed values: smart-resize sizes, the grid, and the first
// patch's values (rescale 1/255, mean/std 0.5, the still frame duplicated over the temporal patch,
// merge-block row order); then decoding and the refusals (corrupt, oversized header, wrong MIME).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { hugeHeaderPng } from '../../helpers/images.js';
import { patchify, smartResize } from '../../../daemon/vision/preprocess.js';
import { parsePreprocessorConfig } from '../../../daemon/vision/preprocessor-config.js';
import { decodeDataUrl, ImageError, prepareImage } from '../../../daemon/vision/image-input.js';

// Qwen3-VL's published preprocessor_config.json (min/max pixel area 256², 4096²; factor 32).
const QWEN3_VL = parsePreprocessorConfig({
  size: { longest_edge: 16777216, shortest_edge: 65536 },
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
  image_mean: [0.5, 0.5, 0.5],
  image_std: [0.5, 0.5, 0.5],
});
const SMALL = { ...QWEN3_VL, minPixels: 32 * 32, maxPixels: 512 * 512 };
const LIMITS = { maxInputPixels: 40_000_000, maxBytes: 1 << 22, maxPixels: 0 };

test('smart resize: multiples of 32 within the min/max area, Python rounding', () => {
  assert.deepEqual(smartResize(448, 448, QWEN3_VL), [448, 448]);
  // 720/32 = 22.5 rounds half to even → 22·32 = 704; 1280/32 = 40 → 1280.
  assert.deepEqual(smartResize(720, 1280, QWEN3_VL), [704, 1280]);
  // 100×100 rounds to 96×96 = 9216 < 65536: β = sqrt(65536/10000) = 2.56 → ceil(256/32)·32 = 256.
  assert.deepEqual(smartResize(100, 100, QWEN3_VL), [256, 256]);
  // 8000×6000 = 48e6 > 16777216: β = sqrt(48e6/16777216) = 1.6914 → floor(4729.9/32)·32 = 4704, floor(3547.4/32)·32 = 3520.
  assert.deepEqual(smartResize(8000, 6000, QWEN3_VL), [4704, 3520]);
  assert.throws(() => smartResize(10, 4000, QWEN3_VL), /aspect ratio/);
});

test('patchify: grid and the first patch values by hand (rescale, normalise, temporal duplicate, merge order)', () => {
  // A 64×32 image (w×h): pixel (x, y) has R = x, G = y, B = 255.
  const w = 64;
  const h = 32;
  const rgb = new Uint8Array(w * h * 3);
  for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) rgb.set([x, y, 255], (y * w + x) * 3);
  const { pixels, grid } = patchify(rgb, h, w, SMALL);
  assert.deepEqual(grid, [1, 2, 4]);
  const row = 3 * 2 * 16 * 16;
  assert.equal(pixels.length, 8 * row);
  const v = (byte: number) => Math.fround((byte / 255 - 0.5) / 0.5);
  // Row 0 = patch (0,0). Layout (C, T, 16, 16): R of (px=5, py=3) at [0,0,3,5]; its T=1 copy at +256.
  assert.equal(pixels[3 * 16 + 5], v(5));
  assert.equal(pixels[256 + 3 * 16 + 5], v(5));
  assert.equal(pixels[512 + 3 * 16 + 5], v(3)); // G = y
  assert.equal(pixels[1024], 1); // B = 255 → (1 − 0.5)/0.5
  assert.equal(pixels[0], -1); // R = 0
  // Merge-block order: row 1 is patch (row 0, col 1) → x starts at 16; row 2 is patch (row 1, col 0) → y at 16.
  assert.equal(pixels[row], v(16));
  assert.equal(pixels[2 * row + 512], v(16));
  // Row 4 starts the second merge block: patch (row 0, col 2) → x = 32.
  assert.equal(pixels[4 * row], v(32));
});

test('prepareImage decodes PNG and JPEG, resizes to the grid and keeps exact pixels when no resize is needed', async () => {
  const raw = Buffer.alloc(64 * 32 * 3);
  for (let i = 0; i < raw.length; i += 3) raw.set([10, 20, 30], i);
  const png = await sharp(raw, { raw: { width: 64, height: 32, channels: 3 } })
    .png()
    .toBuffer();
  const p = await prepareImage(png, SMALL, LIMITS, 'image/png');
  assert.deepEqual(p.grid, [1, 2, 4]);
  assert.deepEqual(p.resized, [32, 64]);
  assert.equal(p.pixels[0], Math.fround((10 / 255 - 0.5) / 0.5));
  const jpeg = await sharp(raw, { raw: { width: 64, height: 32, channels: 3 } })
    .jpeg()
    .toBuffer();
  const q = await prepareImage(jpeg, QWEN3_VL, LIMITS);
  // 64×32 = 2048 < 65536: β = sqrt(32) = 5.657 → ceil(5.657)·32 = 192, ceil(11.31)·32 = 384.
  assert.deepEqual(q.resized, [192, 384]);
});

test('bad images are ImageErrors naming the rule: corrupt, truncated, huge header, wrong MIME, http URL', async () => {
  const reject = async (bytes: Buffer, rule: string, mime?: string) =>
    assert.rejects(
      prepareImage(bytes, SMALL, LIMITS, mime),
      (e: unknown) => e instanceof ImageError && e.rule === rule,
    );
  await reject(Buffer.from('definitely not an image'), 'decode');
  const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#884422' } })
    .jpeg()
    .toBuffer();
  await reject(jpeg.subarray(0, jpeg.length >> 1), 'decode');
  await reject(jpeg, 'mime', 'image/png');
  // A PNG header claiming 50000×50000 (IHDR only): refused from the header, never decoded.
  const huge = await hugeHeaderPng();
  await reject(huge, 'pixels');
  assert.throws(
    () => decodeDataUrl('https://example.com/a.png', LIMITS),
    (e: ImageError) => e.rule === 'scheme',
  );
  assert.throws(
    () => decodeDataUrl('data:text/plain;base64,aGVsbG8=', LIMITS),
    (e: ImageError) => e.rule === 'mime',
  );
  assert.throws(
    () => decodeDataUrl('data:image/png;base64,@@@', LIMITS),
    (e: ImageError) => e.rule === 'base64',
  );
  const ok = decodeDataUrl(`data:image/jpeg;base64,${jpeg.toString('base64')}`, LIMITS);
  assert.equal(ok.mime, 'image/jpeg');
  assert.deepEqual(ok.bytes, jpeg);
});

test('engine.vision.max_pixels downscales below the preprocessor maximum', async () => {
  const png = await sharp({ create: { width: 256, height: 128, channels: 3, background: '#123456' } })
    .png()
    .toBuffer();
  const full = await prepareImage(png, SMALL, LIMITS);
  assert.deepEqual(full.resized, [128, 256]);
  // 256×128 = 32768 > 8192: β = 2 → floor(64/32)·32 = 64, floor(128/32)·32 = 128.
  const capped = await prepareImage(png, SMALL, { ...LIMITS, maxPixels: 8192 });
  assert.deepEqual(capped.resized, [64, 128]);
  assert.deepEqual(capped.grid, [1, 4, 8]);
});
