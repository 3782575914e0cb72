// What a model folder holds for its inputs: text only, or text + vision (a vision_config in
// config.json, an onnx/vision_encoder*.onnx and a preprocessor_config.json). Read from the
// files alone (doctor and models.list report it without loading the model).
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { isRecord } from '../../robot/common/validation/values.js';
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
    const raw = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
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
