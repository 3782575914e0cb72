// The synthetic qwen3_vl_moe folder's ONNX vision tower, written by our own protobuf writer and run
// by onnxruntime-node, against the float64 reference of the same graph; and its signature
// against the published exports (pixel_values, image_grid_thw → image_features).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { prepareImage } from '../../../daemon/vision/image-input.js';
import { pickProvider } from '../../../daemon/vision/execution-provider.js';
import { VisionTower } from '../../../daemon/vision/vision-tower.js';
import { visionSpec, visionWeights } from '../../../daemon/tools/synth-vision.js';
import { referenceVision } from '../../../daemon/tools/reference/vision.js';
import { synthTemp } from '../../native/helpers/model-files.js';

const LIMITS = { maxInputPixels: 1e7, maxBytes: 1 << 22, maxPixels: 0 };

// A fixed 96×64 gradient image (3×2 merged blocks → 24 patches, 6 image tokens).
async function gradient(): Promise<Buffer> {
  const raw = Buffer.alloc(96 * 64 * 3);
  for (let y = 0; y < 64; y++)
    for (let x = 0; x < 96; x++) raw.set([(x * 5) & 255, (y * 7) & 255, (x * y) & 255], (y * 96 + x) * 3);
  return sharp(raw, { raw: { width: 96, height: 64, channels: 3 } })
    .png()
    .toBuffer();
}

test('ONNX tower output matches the float64 reference of the same graph (features and DeepStack)', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 3 });
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
  assert.equal(config.vision_config.out_hidden_size, config.text_config.hidden_size);
  const tower = await VisionTower.load(dir, { threads: 1, provider: 'cpu' });
  t.after(() => tower.dispose());
  assert.deepEqual(tower.deepstackOutputs, ['deepstack_features_0']);
  const img = await prepareImage(await gradient(), tower.preprocessor, LIMITS, 'image/png');
  assert.deepEqual(img.grid, [1, 4, 6]);
  const out = await tower.encode(img);
  assert.equal(out.tokens, 6);
  const spec = visionSpec('tiny', config.text_config.hidden_size);
  const ref = referenceVision(spec, visionWeights(spec, 3), img.pixels, 24);
  const check = (got: Float32Array, want: Float64Array, what: string) => {
    assert.equal(got.length, want.length, what);
    let scale = 0;
    let err = 0;
    for (let i = 0; i < want.length; i++) {
      scale = Math.max(scale, Math.abs(want[i]));
      err = Math.max(err, Math.abs(got[i] - want[i]));
    }
    // float32 through ~8 matmuls of ≤ 1536 terms: ~1e-6 of the scale; a wrong op moves it by > 1e-2.
    assert.ok(err <= 1e-4 * Math.max(1, scale), `${what}: max error ${err} at scale ${scale}`);
  };
  check(out.features, ref.features, 'image_features');
  check(out.deepstack[0], ref.deepstack[0], 'deepstack_features_0');
});

test('execution provider: CoreML on macOS, CUDA only with its library, CPU otherwise', () => {
  const backends = [
    { name: 'cpu', bundled: true },
    { name: 'cuda', bundled: false },
  ];
  assert.equal(pickProvider('auto', { platform: 'linux', backends, cudaLibrary: false }).provider, 'cpu');
  assert.equal(pickProvider('auto', { platform: 'linux', backends, cudaLibrary: true }).provider, 'cuda');
  const mac = [...backends, { name: 'coreml', bundled: true }];
  assert.equal(pickProvider('auto', { platform: 'darwin', backends: mac, cudaLibrary: false }).provider, 'coreml');
  assert.equal(pickProvider('cpu', { platform: 'darwin', backends: mac, cudaLibrary: false }).provider, 'cpu');
  assert.throws(() => pickProvider('cuda', { platform: 'linux', backends, cudaLibrary: false }), /GPU build/);
});
