// preprocessor_config.json of a Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 folder, read into one
// typed shape. size.{shortest_edge,longest_edge} are the min/max pixel AREA (min_pixels /
// max_pixels, which older files name directly and which win when present).
import { join } from 'node:path';
import { isRecord } from '../../robot/common/validation/values.js';
import { MODEL_TEXT_MAX_BYTES } from '../engine/tokenizer.js';
import { readRegularTextSync } from '../util/file-roots.js';

export interface PreprocessorConfig {
  patchSize: number;
  temporalPatchSize: number;
  mergeSize: number;
  minPixels: number;
  maxPixels: number;
  /** Multiplies raw 0..255 values when doRescale (1/255). */
  rescaleFactor: number;
  doRescale: boolean;
  doNormalize: boolean;
  mean: [number, number, number];
  std: [number, number, number];
}

/** Upper bounds on a folder's values: beyond them one image would cost unbounded memory or time
 *  (max_pixels 2^26 is 16× Qwen3-VL's 4096²). */
export const PREPROCESSOR_BOUNDS = { patch_size: 64, merge_size: 8, temporal_patch_size: 16, max_pixels: 1 << 26 };

export class PreprocessorConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PreprocessorConfigError';
  }
}

export function readPreprocessorConfig(dir: string): PreprocessorConfig {
  const path = join(dir, 'preprocessor_config.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularTextSync(path, MODEL_TEXT_MAX_BYTES));
  } catch (e) {
    throw new PreprocessorConfigError(`${path}: cannot read (${(e as Error).message})`);
  }
  return parsePreprocessorConfig(raw, path);
}

export function parsePreprocessorConfig(raw: unknown, where = 'preprocessor_config.json'): PreprocessorConfig {
  if (!isRecord(raw)) throw new PreprocessorConfigError(`${where}: must be a JSON object`);
  const size = isRecord(raw.size) ? raw.size : {};
  const num = (key: string, v: unknown, min: number, fallback?: number): number => {
    const x = v ?? fallback;
    if (typeof x !== 'number' || !Number.isFinite(x) || x < min)
      throw new PreprocessorConfigError(`${where}: ${key} must be a number ≥ ${min}, got ${JSON.stringify(v)}`);
    return x;
  };
  const int = (key: keyof typeof PREPROCESSOR_BOUNDS | 'min_pixels', v: unknown, fallback: number): number => {
    const x = num(key, v, 1, fallback);
    if (!Number.isInteger(x)) throw new PreprocessorConfigError(`${where}: ${key} must be an integer, got ${x}`);
    const max = key === 'min_pixels' ? Infinity : PREPROCESSOR_BOUNDS[key];
    if (x > max) throw new PreprocessorConfigError(`${where}: ${key} must be at most ${max}, got ${x}`);
    return x;
  };
  const triple = (key: string, v: unknown, fallback: number): [number, number, number] => {
    const a = v ?? [fallback, fallback, fallback];
    if (!Array.isArray(a) || a.length !== 3)
      throw new PreprocessorConfigError(`${where}: ${key} must be a list of 3 numbers, got ${JSON.stringify(v)}`);
    return a.map((x, i) => num(`${key}[${i}]`, x, key === 'image_std' ? 1e-12 : -1e9)) as [number, number, number];
  };
  const cfg: PreprocessorConfig = {
    patchSize: int('patch_size', raw.patch_size, 14),
    temporalPatchSize: int('temporal_patch_size', raw.temporal_patch_size, 2),
    mergeSize: int('merge_size', raw.merge_size, 2),
    minPixels: int('min_pixels', raw.min_pixels ?? size.shortest_edge, 56 * 56),
    maxPixels: int('max_pixels', raw.max_pixels ?? size.longest_edge, 28 * 28 * 1280),
    rescaleFactor: num('rescale_factor', raw.rescale_factor, 0, 1 / 255),
    doRescale: raw.do_rescale !== false,
    doNormalize: raw.do_normalize !== false,
    mean: triple('image_mean', raw.image_mean, 0.5),
    std: triple('image_std', raw.image_std, 0.5),
  };
  if (cfg.minPixels > cfg.maxPixels)
    throw new PreprocessorConfigError(`${where}: min_pixels ${cfg.minPixels} exceeds max_pixels ${cfg.maxPixels}`);
  const f = cfg.patchSize * cfg.mergeSize;
  if (f * f > cfg.maxPixels)
    throw new PreprocessorConfigError(
      `${where}: max_pixels ${cfg.maxPixels} is below one merged patch, (patch_size·merge_size)² = ${f * f}`,
    );
  return cfg;
}
