// Edge0-style LoRA adapters: one safetensors file (e.g. lora_edge0_35b.safetensors) of
// <module>.lora_A [r, in] and <module>.lora_B [out, r] keyed by MLX module paths. Scale = alpha / r
// from adapter_config.json next to it (`lora_r` or `r`, `lora_alpha` or `alpha`); without one,
// Edge0's tier defaults r = 16, alpha = 32 (scale 2).
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { exists } from '../../util/file-roots.js';
import { readSafetensorsHeader, type TensorInfo } from '../../models/safetensors-reader.js';
import { ConfigJson } from './config-json.js';
import { AdapterError, pairRank, pairTensors, plannedModule, type AdapterPlan } from './plan.js';

export const EDGE0_DEFAULT_R = 16;
export const EDGE0_DEFAULT_ALPHA = 32;

/** The adapter file: `path` itself, or the folder's only *.safetensors (else its only lora*.safetensors). */
export async function edge0File(path: string): Promise<string> {
  if (!(await stat(path)).isDirectory()) return path;
  const all = (await readdir(path)).filter((f) => f.endsWith('.safetensors')).sort();
  const lora = all.filter((f) => f.startsWith('lora'));
  const pick = all.length === 1 ? all : lora;
  if (pick.length !== 1) {
    throw new AdapterError(
      `${path}: expected one *.safetensors of <module>.lora_A / .lora_B tensors (or one lora*.safetensors), found ${all.length === 0 ? 'none' : all.join(', ')}`,
    );
  }
  return join(path, pick[0]!);
}

function unexpected(file: string) {
  return (t: TensorInfo): never => {
    throw new AdapterError(
      `${file}: tensor ${t.name} is not an Edge0 LoRA tensor (expected <module>.lora_A / <module>.lora_B)`,
    );
  };
}

export async function readEdge0(path: string, layers: number, name: string): Promise<AdapterPlan> {
  const file = await edge0File(path);
  const configPath = join(dirname(file), 'adapter_config.json');
  let r = EDGE0_DEFAULT_R;
  let alpha = EDGE0_DEFAULT_ALPHA;
  const hasConfig = await exists(configPath);
  if (hasConfig) {
    const c = await ConfigJson.read(configPath);
    r = c.has('lora_r') ? c.int('lora_r', 1) : c.int('r', 1, EDGE0_DEFAULT_R);
    alpha = c.has('lora_alpha') ? c.num('lora_alpha') : c.num('alpha', EDGE0_DEFAULT_ALPHA);
  }
  const st = await readSafetensorsHeader(file);
  const pairs = pairTensors(st.tensors.values(), '.lora_A', '.lora_B', (m) => m, unexpected(file));
  if (pairs.length === 0) throw new AdapterError(`${file}: has no LoRA tensors`);
  const modules = pairs.map((p) => {
    const rank = pairRank(p, false, file);
    if (rank !== r) {
      const from = hasConfig
        ? `${basename(configPath)} gives r = ${r}`
        : `Edge0's default r is ${r} (no adapter_config.json)`;
      throw new AdapterError(
        `${file}: tensor ${p.a!.name} has rank ${rank} (shape [${p.a!.shape.join(', ')}]) but ${from}`,
      );
    }
    return plannedModule(p, rank, alpha / r, false, file, layers);
  });
  return { name, file, format: 'edge0', source: path, modules };
}
