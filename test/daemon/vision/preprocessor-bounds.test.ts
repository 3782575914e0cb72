// preprocessor_config.json values that would make one image cost unbounded memory or time are
// refused at load, naming the file, field and value; engine.vision.max_pixels wins over min_pixels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cappedConfig, smartResize } from '../../../daemon/vision/preprocess.js';
import { PREPROCESSOR_BOUNDS, parsePreprocessorConfig } from '../../../daemon/vision/preprocessor-config.js';

const BASE = {
  size: { longest_edge: 16777216, shortest_edge: 65536 },
  patch_size: 16,
  temporal_patch_size: 2,
  merge_size: 2,
};
const WHERE = '/m/preprocessor_config.json';

test('oversized merge, temporal and patch sizes and pixel areas are refused naming the field and value', () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ merge_size: 512 }, /merge_size must be at most 8, got 512/],
    [{ temporal_patch_size: 100000 }, /temporal_patch_size must be at most 16, got 100000/],
    [{ patch_size: 1000 }, /patch_size must be at most 64, got 1000/],
    [{ min_pixels: 1e9 }, /min_pixels 1000000000 exceeds max_pixels 16777216/],
    [{ max_pixels: 2 ** 30, min_pixels: 1e9 }, /max_pixels must be at most 67108864, got 1073741824/],
    [
      { max_pixels: 1000, min_pixels: 100 },
      /max_pixels 1000 is below one merged patch, \(patch_size·merge_size\)² = 1024/,
    ],
  ];
  for (const [edit, message] of cases)
    assert.throws(
      () => parsePreprocessorConfig({ ...BASE, ...edit }, WHERE),
      (e: Error) =>
        e.name === 'PreprocessorConfigError' && e.message.startsWith(`${WHERE}: `) && message.test(e.message),
      JSON.stringify(edit),
    );
  assert.equal(PREPROCESSOR_BOUNDS.merge_size, 8);
  // The bounds themselves load.
  const edge = parsePreprocessorConfig({ patch_size: 64, merge_size: 8, temporal_patch_size: 16, max_pixels: 1 << 26 });
  assert.deepEqual([edge.patchSize, edge.mergeSize, edge.temporalPatchSize, edge.maxPixels], [64, 8, 16, 1 << 26]);
});

test("engine.vision.max_pixels below the folder's min_pixels lowers both: the daemon's cap wins", () => {
  const c = parsePreprocessorConfig(BASE);
  const capped = cappedConfig(c, 8192);
  assert.deepEqual([capped.minPixels, capped.maxPixels], [8192, 8192]);
  // A 100×100 image no longer goes up to 256² (65536 pixels, 64 tokens): it stays within the cap.
  const [h, w] = smartResize(100, 100, capped);
  assert.ok(h * w <= 8192, `${w}×${h}`);
  assert.deepEqual(smartResize(100, 100, c), [256, 256]);
  // No cap, or one above the folder's maximum: the folder's bounds.
  assert.deepEqual(cappedConfig(c, 0), c);
  assert.deepEqual(cappedConfig(c, 1 << 25), { ...c, maxPixels: 16777216 });
});
