// What a model folder holds for its inputs: text only, or text + vision (a vision_config and
// multimodal RoPE sections in config.json, an onnx/vision_encoder*.onnx and a preprocessor_config.json). Read from the
// files alone (doctor and models.list report it without loading the model).
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isRecord } from '../../robot/common/validation/values.js';
import { MODEL_TEXT_MAX_BYTES } from '../engine/tokenizer.js';
import { mropeParams } from '../models/mrope-params.js';
import { readRegularTextSync } from '../util/file-roots.js';
import { findVisionEncoder } from './vision-tower.js';

export interface FolderInputs {
  /** ['text'] or ['text', 'image']. */
  inputs: string[];
  arch: string | null;
  /** Present when config.json declares a vision tower. */
  vision?: {
    encoder: string | null;
    preprocessor: boolean;
    deepstack_layers: number;
    /** Why images cannot be served, when something is missing. */
    missing?: string;
  };
}

export function describeModelFolder(dir: string): FolderInputs {
  let config: Record<string, unknown> = {};
  try {
    const raw = JSON.parse(readRegularTextSync(join(dir, 'config.json'), MODEL_TEXT_MAX_BYTES));
    if (isRecord(raw)) config = raw;
  } catch {
    return { inputs: ['text'], arch: null };
  }
  const arch = typeof config.model_type === 'string' ? config.model_type : null;
  const vc = config.vision_config;
  if (!isRecord(vc)) return { inputs: ['text'], arch };
  const encoder = findVisionEncoder(dir);
  const preprocessor = existsSync(join(dir, 'preprocessor_config.json'));
  const missing = !encoder
    ? 'no onnx/vision_encoder*.onnx (the vision tower as ONNX)'
    : !preprocessor
      ? 'no preprocessor_config.json'
      : !hasMropeSections(config)
        ? "no mrope_section in text_config.rope_parameters or rope_scaling (the image rows' 3-D RoPE positions)"
        : undefined;
  const deep = Array.isArray(vc.deepstack_visual_indexes) ? vc.deepstack_visual_indexes.length : 0;
  return {
    inputs: missing ? ['text'] : ['text', 'image'],
    arch,
    vision: {
      encoder: encoder ? relative(dir, encoder) : null,
      preprocessor,
      deepstack_layers: deep,
      ...(missing ? { missing } : {}),
    },
  };
}

/** Whether the text model declares multimodal RoPE sections (Qwen3-VL: rope_scaling; Qwen3.5:
 *  rope_parameters), without which image rows have no positions the engine takes. */
function hasMropeSections(config: Record<string, unknown>): boolean {
  return mropeParams(isRecord(config.text_config) ? config.text_config : config) !== undefined;
}
