// engine.vision: how vision towers run (onnxruntime threads and execution provider) and what
// images a request may carry. Applies to every model whose folder has a vision tower.
import { int, obj, oneOf, type Infer } from '../../robot/common/validation/builders.js';
import { PROVIDERS } from './execution-provider.js';
import type { VisionOptions } from './vision-runtime.js';

export const visionSchema = obj(
  {
    threads: int({
      min: 0,
      max: 256,
      default: 0,
      doc: "onnxruntime intra-op threads of a vision tower (0 = onnxruntime's default, one per core)",
    }),
    provider: oneOf(PROVIDERS, {
      default: 'auto',
      doc: 'execution provider: auto (CoreML on macOS, CUDA where a GPU build of onnxruntime is installed, else CPU; `brainstem doctor` says which), cpu, cuda or coreml',
    }),
    max_pixels: int({
      min: 0,
      max: 1 << 28,
      default: 0,
      doc: "images are downscaled to at most this many pixels before patching (0 = the model's preprocessor_config.json max_pixels); below its min_pixels it lowers that too",
    }),
    max_input_pixels: int({
      min: 1,
      max: 1 << 30,
      default: 40_000_000,
      doc: 'images (chat image parts, policy.start reference images) whose header declares more pixels are refused (HTTP 400) before decoding',
    }),
    max_image_bytes: int({
      min: 1,
      max: 1 << 30,
      default: 20 * 1024 * 1024,
      doc: 'largest encoded image accepted per image part or policy.start reference image, in bytes (HTTP 400 above)',
    }),
    max_images: int({
      min: 1,
      max: 1024,
      default: 64,
      doc: "most images one request may carry (HTTP 400 above): each is decoded and encoded before the first token, whatever the context; also the most image references of a policy.start. 64 holds a policy episode's local-model prompt: up to 48 compiled goal and keyframe images (the context compiler's cap) and policy.keep_images camera frames",
    }),
    cache_images: int({
      min: 0,
      max: 1024,
      default: 16,
      doc: 'encoded images kept per model by content hash, so a repeated image is not preprocessed or encoded again (0 = none)',
    }),
  },
  { doc: 'Vision towers (models whose folder has onnx/vision_encoder*.onnx): onnxruntime and image limits' },
);

export type VisionConfig = Infer<typeof visionSchema>;

export function visionOptions(v: VisionConfig): VisionOptions {
  return {
    threads: v.threads,
    provider: v.provider,
    limits: {
      maxPixels: v.max_pixels,
      maxInputPixels: v.max_input_pixels,
      maxBytes: v.max_image_bytes,
      maxImages: v.max_images,
    },
    cacheImages: v.cache_images,
  };
}

/** engine.vision with every default: for profiles made without a config (tests, tools). */
export const DEFAULT_VISION = visionOptions(visionSchema.check({}, 'engine.vision', [])!);
