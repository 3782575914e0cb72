// describeModelFolder: a folder serves images only with a vision_config, the ONNX tower, the
// preprocessor config and multimodal RoPE sections; otherwise text, naming what is missing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { synthModel } from '../../../daemon/tools/synth.js';
import { describeModelFolder } from '../../../daemon/vision/model-folder.js';
import { editJson } from '../../native/helpers/model-files.js';
import { tempDir } from '../../helpers/temp.js';

test('a qwen3_5_moe folder serves images only with its tower, preprocessor config and M-RoPE sections', (t) => {
  const dir = tempDir('bs-folder-');
  t.after(() => dir.remove());
  synthModel({ arch: 'qwen3_5_moe', shape: 'tiny', out: dir.path, seed: 1, force: true, vision: true });
  const full = describeModelFolder(dir.path);
  assert.deepEqual(full.inputs, ['text', 'image']);
  assert.deepEqual(full.vision, {
    encoder: join('onnx', 'vision_encoder.onnx'),
    preprocessor: true,
    deepstack_layers: 0,
  });
  // An mlx-vlm conversion without the ONNX tower (what `models synth` writes without --vision).
  const plain = tempDir('bs-folder-');
  t.after(() => plain.remove());
  synthModel({ arch: 'qwen3_5_moe', shape: 'tiny', out: plain.path, seed: 1, force: true });
  assert.deepEqual(describeModelFolder(plain.path).inputs, ['text']);
  assert.match(describeModelFolder(plain.path).vision?.missing ?? '', /no onnx\/vision_encoder\*\.onnx/);
  editJson(join(dir.path, 'config.json'), (c) => {
    delete (c.text_config as { rope_parameters: Record<string, unknown> }).rope_parameters.mrope_section;
  });
  assert.deepEqual(describeModelFolder(dir.path).inputs, ['text']);
  assert.match(describeModelFolder(dir.path).vision?.missing ?? '', /no mrope_section in text_config/);
  rmSync(join(dir.path, 'preprocessor_config.json'));
  assert.match(describeModelFolder(dir.path).vision?.missing ?? '', /no preprocessor_config\.json/);
});

test('a qwen3_vl_moe folder reads its sections from rope_scaling; a text model has no vision entry', (t) => {
  const dir = tempDir('bs-folder-');
  t.after(() => dir.remove());
  synthModel({ arch: 'qwen3_vl_moe', shape: 'tiny', out: dir.path, seed: 1, force: true });
  assert.deepEqual(describeModelFolder(dir.path).inputs, ['text', 'image']);
  const text = tempDir('bs-folder-');
  t.after(() => text.remove());
  synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: text.path, seed: 1, force: true });
  assert.deepEqual(describeModelFolder(text.path), { inputs: ['text'], arch: 'qwen3_moe' });
});
