// The synthetic vision tower of a qwen3_vl_moe (or qwen3_5_moe --vision) folder: its vision_config, preprocessor_config.json
// and a random-weight ONNX graph with the published exports' signature (onnx/vision_encoder.onnx:
// pixel_values [N, 3·T·P·P] float + image_grid_thw [n_img, 3] int64 → image_features
// [N/merge², out_hidden]) plus deepstack_features_{j} outputs where the config lists DeepStack
// layers. The graph is a small stand-in for the real tower (no attention, no position table):
// patch embedding, pre-LN GELU MLP blocks, 2×2 patch merger; reference/vision.ts computes it in float64.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configJson, type ShapeName, type SynthSpec } from './synth-shapes.js';
import { QWEN_ADDED_TOKENS, regularVocabSize } from './tokenizer-synth.js';
import { tensorPrng } from './synth-weights.js';
import { encodeOnnxModel, ONNX_FLOAT, ONNX_INT64, type OnnxGraph, type OnnxNode } from '../vision/onnx-writer.js';

export interface VisionSpec {
  depth: number;
  hidden: number;
  intermediate: number;
  patch: number;
  temporal: number;
  merge: number;
  outHidden: number;
  /** Blocks after which a DeepStack merger taps the features (Qwen3-VL: [8, 16, 24]). */
  deepstack: number[];
  minPixels: number;
  maxPixels: number;
}

export const LN_EPS = 1e-6;

export function visionSpec(shape: ShapeName, textHidden: number): VisionSpec {
  const tiny = shape === 'tiny';
  return {
    depth: tiny ? 2 : 4,
    hidden: tiny ? 32 : 128,
    intermediate: tiny ? 64 : 256,
    patch: 16,
    temporal: 2,
    merge: 2,
    outHidden: textHidden,
    deepstack: tiny ? [0] : [1, 2],
    // Qwen3-VL's bounds are 256² and 4096² pixels; tiny admits 32² so tests can use small images.
    minPixels: tiny ? 32 * 32 : 65536,
    maxPixels: tiny ? 512 * 512 : 16777216,
  };
}

/** Floats of one row of pixel_values: channels × temporal patch × patch². */
export const patchDim = (v: VisionSpec): number => 3 * v.temporal * v.patch * v.patch;

export interface VisionTensor {
  dims: number[];
  data: Float32Array;
}

/** Every weight of the tower by name; matrices are [in, out] (ONNX MatMul's right operand). */
export function visionWeights(v: VisionSpec, seed: number): Map<string, VisionTensor> {
  const w = new Map<string, VisionTensor>();
  const uniform = (name: string, dims: number[], center: number, half: number) => {
    const n = dims.reduce((a, b) => a * b, 1);
    const words = new Uint32Array(n);
    tensorPrng(seed, `vision_tower.${name}`).fillU32(words);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = center + (words[i] / 2147483648 - 1) * half;
    w.set(name, { dims, data });
  };
  const linear = (name: string, inp: number, out: number, gain = 1) => {
    uniform(`${name}.weight`, [inp, out], 0, (gain * Math.sqrt(3)) / Math.sqrt(inp));
    uniform(`${name}.bias`, [out], 0, 0.05);
  };
  const norm = (name: string, n: number) => {
    uniform(`${name}.weight`, [n], 1, 0.1);
    uniform(`${name}.bias`, [n], 0, 0.1);
  };
  const D = v.hidden;
  const M = D * v.merge * v.merge;
  linear('patch_embed', patchDim(v), D);
  for (let b = 0; b < v.depth; b++) {
    norm(`blocks.${b}.norm`, D);
    linear(`blocks.${b}.fc1`, D, v.intermediate);
    linear(`blocks.${b}.fc2`, v.intermediate, D, 0.5);
  }
  norm('merger.norm', D);
  linear('merger.fc1', M, M);
  linear('merger.fc2', M, v.outHidden);
  v.deepstack.forEach((_, j) => {
    norm(`deepstack.${j}.norm`, M);
    linear(`deepstack.${j}.fc1`, M, M);
    linear(`deepstack.${j}.fc2`, M, v.outHidden);
  });
  return w;
}

/** The tower as an ONNX graph (opset 17: LayerNormalization; GELU written out in its tanh form). */
export function visionGraph(v: VisionSpec, weights: Map<string, VisionTensor>): OnnxGraph {
  const nodes: OnnxNode[] = [];
  let k = 0;
  const tmp = (tag: string) => `${tag}_${k++}`;
  const op = (type: string, inputs: string[], attrs?: OnnxNode['attrs']) => {
    const out = tmp(type.toLowerCase());
    nodes.push({ op: type, inputs, outputs: [out], ...(attrs ? { attrs } : {}) });
    return out;
  };
  const linear = (x: string, name: string) => op('Add', [op('MatMul', [x, `${name}.weight`]), `${name}.bias`]);
  const layerNorm = (x: string, name: string) =>
    op(
      'LayerNormalization',
      [x, `${name}.weight`, `${name}.bias`],
      [
        { name: 'axis', i: -1 },
        { name: 'epsilon', f: LN_EPS },
      ],
    );
  const gelu = (x: string) => {
    const cube = op('Mul', [op('Mul', [x, x]), x]);
    const inner = op('Mul', [op('Add', [x, op('Mul', [cube, 'c_gelu_cubic'])]), 'c_gelu_scale']);
    return op('Mul', [op('Mul', [x, op('Add', [op('Tanh', [inner]), 'c_one'])]), 'c_half']);
  };
  const merged = (x: string) => op('Reshape', [x, 'c_merge_shape']);
  const head = (x: string, name: string) => linear(gelu(linear(x, `${name}.fc1`)), `${name}.fc2`);
  let x = linear('pixel_values', 'patch_embed');
  const taps: string[] = [];
  for (let b = 0; b < v.depth; b++) {
    x = op('Add', [x, linear(gelu(linear(layerNorm(x, `blocks.${b}.norm`), `blocks.${b}.fc1`)), `blocks.${b}.fc2`)]);
    const j = v.deepstack.indexOf(b);
    if (j >= 0) taps[j] = head(layerNorm(merged(x), `deepstack.${j}.norm`), `deepstack.${j}`);
  }
  const outputs = ['image_features', ...v.deepstack.map((_, j) => `deepstack_features_${j}`)];
  const finals = [head(merged(layerNorm(x, 'merger.norm')), 'merger'), ...taps];
  finals.forEach((f, i) => nodes.push({ op: 'Identity', inputs: [f], outputs: [outputs[i]] }));
  const scalar = (value: number) => ({ dims: [], data: Float32Array.of(value) });
  const M = v.hidden * v.merge * v.merge;
  return {
    name: 'vision_encoder',
    opset: 17,
    nodes,
    initializers: [
      ...[...weights].map(([name, t]) => ({ name, dims: t.dims, data: t.data })),
      { name: 'c_gelu_cubic', ...scalar(0.044715) },
      { name: 'c_gelu_scale', ...scalar(Math.sqrt(2 / Math.PI)) },
      { name: 'c_one', ...scalar(1) },
      { name: 'c_half', ...scalar(0.5) },
      { name: 'c_merge_shape', dims: [2], data: BigInt64Array.of(-1n, BigInt(M)) },
    ],
    inputs: [
      { name: 'pixel_values', type: ONNX_FLOAT, dims: ['num_patches', patchDim(v)] },
      { name: 'image_grid_thw', type: ONNX_INT64, dims: ['num_images', 3] },
    ],
    outputs: outputs.map((name) => ({ name, type: ONNX_FLOAT, dims: ['num_image_tokens', v.outHidden] })),
  };
}

export const VL_TENSOR_PREFIX = 'language_model.';

/** config.json's vision token ids in the synthetic vocabulary (Qwen's added tokens after the regular ones). */
export function visionTokenIds(vocabSize: number): Record<string, number> {
  const id = (token: string) => regularVocabSize(vocabSize) + QWEN_ADDED_TOKENS.findIndex((t) => t.content === token);
  return {
    image_token_id: id('<|image_pad|>'),
    video_token_id: id('<|video_pad|>'),
    vision_end_token_id: id('<|vision_end|>'),
    vision_start_token_id: id('<|vision_start|>'),
  };
}

/** A qwen3_5_moe config.json with its vision tower: the token ids and vision_config (Qwen3.5
 *  has no DeepStack). Its M-RoPE sections are already in text_config.rope_parameters. */
export function hybridVisionConfigJson(config: Record<string, unknown>, s: SynthSpec, v: VisionSpec) {
  const all: Record<string, unknown> = {
    ...config,
    ...visionTokenIds(s.vocabSize),
    vision_config: { ...visionConfigJson(v), model_type: 'qwen3_5_moe' },
  };
  return Object.fromEntries(
    Object.keys(all)
      .sort()
      .map((k) => [k, all[k]]),
  );
}

/** config.json of a qwen3_vl_moe folder as mlx-vlm writes it: the qwen3_moe text keys under
 *  text_config (with multimodal RoPE), vision_config, the vision token ids and the quantization
 *  (module paths under language_model.) at the top. */
export function vlConfigJson(s: SynthSpec, v: VisionSpec): Record<string, unknown> {
  const text = configJson(s);
  const ids = visionTokenIds(s.vocabSize);
  const quantization = Object.fromEntries(
    Object.entries(text.quantization as Record<string, unknown>).map(([k, q]) =>
      typeof q === 'object' ? [VL_TENSOR_PREFIX + k, q] : [k, q],
    ),
  );
  const slots = s.headDim / 2;
  const hw = Math.round((slots * 20) / 64);
  const { quantization: _q, quantization_config: _qc, architectures: _a, tie_word_embeddings: tie, ...rest } = text;
  return {
    architectures: ['Qwen3VLMoeForConditionalGeneration'],
    image_token_id: ids.image_token_id,
    model_type: 'qwen3_vl_moe',
    quantization,
    quantization_config: quantization,
    text_config: {
      ...rest,
      model_type: 'qwen3_vl_moe_text',
      rope_scaling: { mrope_interleaved: true, mrope_section: [slots - 2 * hw, hw, hw], rope_type: 'default' },
    },
    tie_word_embeddings: tie,
    video_token_id: ids.video_token_id,
    vision_config: visionConfigJson(v),
    vision_end_token_id: ids.vision_end_token_id,
    vision_start_token_id: ids.vision_start_token_id,
  };
}

/** vision_config as the converters write it (Qwen3-VL-MoE keys). */
export function visionConfigJson(v: VisionSpec): Record<string, unknown> {
  return {
    deepstack_visual_indexes: v.deepstack,
    depth: v.depth,
    hidden_act: 'gelu_pytorch_tanh',
    hidden_size: v.hidden,
    in_channels: 3,
    initializer_range: 0.02,
    intermediate_size: v.intermediate,
    model_type: 'qwen3_vl_moe',
    num_heads: 4,
    num_position_embeddings: 2304,
    out_hidden_size: v.outHidden,
    patch_size: v.patch,
    spatial_merge_size: v.merge,
    temporal_patch_size: v.temporal,
  };
}

/** preprocessor_config.json as Qwen3-VL ships it (size = min/max pixel area). */
export function preprocessorConfigJson(v: VisionSpec): Record<string, unknown> {
  return {
    do_convert_rgb: true,
    do_normalize: true,
    do_rescale: true,
    do_resize: true,
    image_mean: [0.5, 0.5, 0.5],
    image_processor_type: 'Qwen2VLImageProcessorFast',
    image_std: [0.5, 0.5, 0.5],
    merge_size: v.merge,
    patch_size: v.patch,
    processor_class: 'Qwen3VLProcessor',
    resample: 3,
    rescale_factor: 1 / 255,
    size: { longest_edge: v.maxPixels, shortest_edge: v.minPixels },
    temporal_patch_size: v.temporal,
  };
}

/** Writes onnx/vision_encoder.onnx and preprocessor_config.json; returns their names and sizes. */
export function writeVisionTower(dir: string, v: VisionSpec, seed: number): { name: string; bytes: number }[] {
  mkdirSync(join(dir, 'onnx'), { recursive: true });
  const onnx = encodeOnnxModel(visionGraph(v, visionWeights(v, seed)));
  writeFileSync(join(dir, 'onnx', 'vision_encoder.onnx'), onnx);
  const pre = JSON.stringify(preprocessorConfigJson(v), null, 2);
  writeFileSync(join(dir, 'preprocessor_config.json'), pre);
  return [
    { name: 'onnx/vision_encoder.onnx', bytes: onnx.length },
    { name: 'preprocessor_config.json', bytes: Buffer.byteLength(pre) },
  ];
}
