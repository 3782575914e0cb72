// mlx-lm LoRA adapters (`mlx_lm.lora`): adapter_config.json (fine_tune_type, num_layers = the
// last N layers, lora_parameters {rank, scale, dropout, keys}) + adapters.safetensors with
// <module>.lora_a [in, r] and <module>.lora_b [r, out] (transposed against PEFT). The scale is
// absolute (mlx-lm's default 20), not alpha / r. DoRA (`.m` tensors) and full fine-tunes are refused.
import { join } from 'node:path';
import { exists } from '../../util/file-roots.js';
import { readSafetensorsHeader, type TensorInfo } from '../../models/safetensors-reader.js';
import { ConfigJson } from './config-json.js';
import { AdapterError, layerOf, pairRank, pairTensors, plannedModule, type AdapterPlan } from './plan.js';

export const MLX_DEFAULT_SCALE = 20;

function unexpected(file: string) {
  return (t: TensorInfo): never => {
    const why = t.name.endsWith('.m')
      ? 'a DoRA magnitude vector (DoRA is not supported)'
      : 'not an mlx-lm LoRA tensor (expected <module>.lora_a / <module>.lora_b)';
    throw new AdapterError(`${file}: tensor ${t.name} is ${why}`);
  };
}

export async function readMlxLm(dir: string, layers: number, name: string): Promise<AdapterPlan> {
  const c = await ConfigJson.read(join(dir, 'adapter_config.json'));
  const type = c.str('fine_tune_type', 'lora');
  if (type !== 'lora') c.fail('fine_tune_type', 'must be "lora" (DoRA and full fine-tunes are not applied unmerged)');
  // Older mlx-lm versions wrote lora_layers; -1 means every layer.
  const key = c.has('num_layers') ? 'num_layers' : 'lora_layers';
  const n = c.int(key, -1, 16);
  const first = n < 0 ? 0 : layers - n;
  if (n > layers)
    c.fail(
      key,
      c.has(key)
        ? `must not exceed the model's ${layers} layers`
        : `is absent, so mlx-lm's default 16 applies, which exceeds the model's ${layers} layers (a PEFT adapter is format peft)`,
    );
  const p = c.obj('lora_parameters');
  const rank = p.int('rank', 1, 8);
  const scale = p.num('scale', MLX_DEFAULT_SCALE);
  let keys: string[] | undefined;
  if (p.has('keys')) {
    const k = p.raw.keys;
    if (!Array.isArray(k) || !k.every((x) => typeof x === 'string'))
      p.fail('keys', 'must be a list of module paths inside a layer (e.g. "self_attn.q_proj")');
    keys = k as string[];
  }
  const file = join(dir, 'adapters.safetensors');
  if (!(await exists(file)))
    throw new AdapterError(`${dir}: mlx-lm adapter has adapter_config.json but no adapters.safetensors`);
  const st = await readSafetensorsHeader(file);
  const pairs = pairTensors(st.tensors.values(), '.lora_a', '.lora_b', (m) => m, unexpected(file));
  if (pairs.length === 0) throw new AdapterError(`${file}: has no LoRA tensors`);
  const modules = pairs.map((pair) => {
    const r = pairRank(pair, true, file);
    if (r !== rank) {
      throw new AdapterError(
        `${file}: tensor ${pair.a!.name} has rank ${r} (shape [${pair.a!.shape.join(', ')}]) but adapter_config.json lora_parameters.rank is ${rank}`,
      );
    }
    const layer = layerOf(pair.module) ?? -1;
    if (layer >= 0 && layer < first) {
      throw new AdapterError(
        `${file}: tensor ${pair.a!.name} is in layer ${layer}, but ${key} ${n} puts LoRA layers at ${first}..${layers - 1} (the last ${n})`,
      );
    }
    const inLayer = pair.module.replace(/^.*?\.layers\.\d+\./, '');
    if (keys && !keys.includes(inLayer)) {
      throw new AdapterError(
        `${file}: tensor ${pair.a!.name} targets ${inLayer}, which lora_parameters.keys ${JSON.stringify(keys)} does not list`,
      );
    }
    return plannedModule(pair, r, scale, true, file, layers);
  });
  return { name, file, format: 'mlx', source: dir, modules };
}
