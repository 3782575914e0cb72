// Reads any supported LoRA adapter into a plan: the format is told by the files present
// (PEFT: adapter_model.safetensors; mlx-lm: adapters.safetensors; Edge0: a lone *.safetensors of
// <module>.lora_A/.lora_B, or that file's path), or forced by `format`.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { exists } from '../../util/file-roots.js';
import { readEdge0 } from './edge0.js';
import { readMlxLm } from './mlx-lm.js';
import { readPeft } from './peft.js';
import { AdapterError, type AdapterFormat, type AdapterPlan } from './plan.js';

export interface ReadAdapterOptions {
  /** Layers of the model it will be applied to (mlx-lm num_layers counts from the end). */
  layers: number;
  /** Name the adapter is known by (default: the folder or file name). */
  name?: string;
  format?: AdapterFormat;
}

export async function detectFormat(path: string): Promise<AdapterFormat> {
  const s = await stat(path).catch(() => undefined);
  if (!s) throw new AdapterError(`adapter path ${path} does not exist`);
  if (!s.isDirectory()) return 'edge0';
  if ((await exists(join(path, 'adapter_model.safetensors'))) || (await exists(join(path, 'adapter_model.bin'))))
    return 'peft';
  if (await exists(join(path, 'adapters.safetensors'))) return 'mlx';
  return 'edge0';
}

export async function readAdapter(path: string, o: ReadAdapterOptions): Promise<AdapterPlan> {
  const format = o.format ?? (await detectFormat(path));
  const name =
    o.name ??
    path
      .replace(/[/\\]+$/, '')
      .split(/[/\\]/)
      .pop()!
      .replace(/\.safetensors$/, '');
  if (format === 'peft') return readPeft(path, o.layers, name);
  if (format === 'mlx') return readMlxLm(path, o.layers, name);
  return readEdge0(path, o.layers, name);
}
