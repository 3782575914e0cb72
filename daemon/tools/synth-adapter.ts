// Synthetic LoRA adapters for a model folder, in PEFT, mlx-lm or Edge0 layout. Each module's
// A ~ N(0, 1/in) and B ~ N(0, 1), then B is rescaled so the effective delta ΔW = s·B·A has exactly
// the requested RMS (‖BA‖²_F = trace(BᵀB · AAᵀ), r×r, computed after A is rounded to the dtype):
// the "rank 16, RMS 1e-3" adapters the merge check and the benchmarks use.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Prng } from '../../robot/common/prng.js';
import { patternKey } from '../engine/adapters/peft.js';
import type { AdapterFormat } from '../engine/adapters/plan.js';
import { transpose } from './reference/adapter-weights.js';
import { encodeFloats, roundTo } from '../models/float16.js';
import { expandTargets, targetModules, type TargetModule } from './lora-targets.js';
import { readRefConfig } from './reference/model-config.js';
import { writeSafetensors, type TensorSource } from '../models/safetensors-writer.js';

export type AdapterDtype = 'F32' | 'F16' | 'BF16';

export interface SynthAdapterOptions {
  model: string;
  out: string;
  format: AdapterFormat;
  rank: number;
  alpha: number;
  /** RMS of each module's ΔW = s·B·A. */
  rms: number;
  seed?: number;
  /** In-layer module paths or groups (attention, mlp, shared, all); default attention. */
  targets?: string[];
  /** Layers to adapt (default all; mlx-lm: the last numLayers). */
  numLayers?: number;
  dtype?: AdapterDtype;
  /** PEFT only: per-module overrides and rsLoRA (scale alpha/√r). */
  rankPattern?: Record<string, number>;
  alphaPattern?: Record<string, number>;
  rslora?: boolean;
  force?: boolean;
}

export interface SynthAdapterResult {
  dir: string;
  file: string;
  modules: { module: string; rank: number; scale: number }[];
  bytes: number;
}

const DEFAULT_DTYPE: Record<AdapterFormat, AdapterDtype> = { peft: 'F32', mlx: 'F32', edge0: 'F16' };

/** ‖B·A‖_F for A [r, in], B [out, r] via the r×r Gram matrices. */
export function productNorm(a: Float64Array, b: Float64Array, r: number, inDim: number, out: number): number {
  const ga = new Float64Array(r * r);
  const gb = new Float64Array(r * r);
  for (let i = 0; i < r; i++) {
    for (let j = 0; j < r; j++) {
      let s = 0;
      for (let c = 0; c < inDim; c++) s += a[i * inDim + c]! * a[j * inDim + c]!;
      ga[i * r + j] = s;
      let u = 0;
      for (let o = 0; o < out; o++) u += b[o * r + i]! * b[o * r + j]!;
      gb[i * r + j] = u;
    }
  }
  let t = 0;
  for (let i = 0; i < r * r; i++) t += ga[i]! * gb[i]!;
  return Math.sqrt(Math.max(t, 0));
}

function moduleFactors(
  t: TargetModule,
  r: number,
  scale: number,
  rms: number,
  rng: Prng,
  round: (x: number) => number,
) {
  const a = Float64Array.from({ length: r * t.in }, () => round(rng.normal() / Math.sqrt(t.in)));
  const b = Float64Array.from({ length: t.out * r }, () => rng.normal());
  const k = (rms * Math.sqrt(t.out * t.in)) / (Math.abs(scale) * productNorm(a, b, r, t.in, t.out));
  for (let i = 0; i < b.length; i++) b[i] = round(b[i]! * k);
  return { a, b };
}

export function synthAdapter(o: SynthAdapterOptions): SynthAdapterResult {
  if (!Number.isInteger(o.rank) || o.rank < 1) throw new RangeError(`rank must be an integer ≥ 1, got ${o.rank}`);
  if (!(o.rms > 0) || !Number.isFinite(o.alpha) || o.alpha === 0)
    throw new RangeError(`rms must be > 0 and alpha finite and non-zero, got ${o.rms} / ${o.alpha}`);
  if (existsSync(o.out) && readdirSync(o.out).length > 0 && !o.force)
    throw new Error(`--out ${o.out} is not empty (pass --force to write into it)`);
  const cfg = readRefConfig(o.model);
  const dtype = o.dtype ?? DEFAULT_DTYPE[o.format];
  const round = roundTo(dtype);
  const n = o.numLayers ?? cfg.layers;
  if (!Number.isInteger(n) || n < 1 || n > cfg.layers)
    throw new RangeError(`--num-layers must be in [1, ${cfg.layers}] (the model's layers), got ${n}`);
  const targets = expandTargets(o.targets ?? ['attention']);
  const layers = Array.from({ length: n }, (_, i) => cfg.layers - n + i);
  const mods = targetModules(cfg, targets, layers);
  if (mods.length === 0) throw new RangeError(`targets ${targets.join(', ')} select no module of this model`);
  const rng = new Prng(o.seed ?? 0);
  const tensors: TensorSource[] = [];
  const summary: SynthAdapterResult['modules'] = [];
  const put = (name: string, shape: number[], values: Float64Array) => {
    const data = encodeFloats(values, dtype);
    tensors.push({ name, dtype, shape, chunks: () => [data] });
  };
  for (const t of mods) {
    const rk =
      o.format === 'peft'
        ? patternKey(Object.keys(o.rankPattern ?? {}), t.module, 'rankPattern', 'rank_pattern')
        : undefined;
    const ak =
      o.format === 'peft'
        ? patternKey(Object.keys(o.alphaPattern ?? {}), t.module, 'alphaPattern', 'alpha_pattern')
        : undefined;
    const r = rk === undefined ? o.rank : o.rankPattern![rk]!;
    const alpha = ak === undefined ? o.alpha : o.alphaPattern![ak]!;
    const scale = alpha / (o.format === 'peft' && o.rslora ? Math.sqrt(r) : r);
    const { a, b } = moduleFactors(t, r, scale, o.rms, rng, round);
    summary.push({ module: t.module, rank: r, scale });
    if (o.format === 'peft') {
      put(`base_model.model.${t.module}.lora_A.weight`, [r, t.in], a);
      put(`base_model.model.${t.module}.lora_B.weight`, [t.out, r], b);
    } else if (o.format === 'mlx') {
      put(`${t.module}.lora_a`, [t.in, r], transpose(a, r, t.in));
      put(`${t.module}.lora_b`, [r, t.out], transpose(b, t.out, r));
    } else {
      put(`${t.module}.lora_A`, [r, t.in], a);
      put(`${t.module}.lora_B`, [t.out, r], b);
    }
  }
  mkdirSync(o.out, { recursive: true });
  const fileName = {
    peft: 'adapter_model.safetensors',
    mlx: 'adapters.safetensors',
    edge0: 'lora_adapter.safetensors',
  }[o.format];
  const file = join(o.out, fileName);
  const size = writeSafetensors(file, tensors, { format: o.format === 'mlx' ? 'mlx' : 'pt' });
  writeFileSync(
    join(o.out, 'adapter_config.json'),
    JSON.stringify(adapterConfig(o, targets, n === cfg.layers ? null : layers), null, 2),
  );
  return { dir: o.out, file, modules: summary, bytes: size };
}

/** layers: the adapted layers when not all (PEFT layers_to_transform; mlx-lm counts them from the end). */
function adapterConfig(o: SynthAdapterOptions, targets: string[], layers: number[] | null): Record<string, unknown> {
  if (o.format === 'mlx') {
    return {
      fine_tune_type: 'lora',
      num_layers: layers?.length ?? -1,
      lora_parameters: { rank: o.rank, scale: o.alpha / o.rank, dropout: 0, keys: targets },
    };
  }
  if (o.format === 'edge0') return { lora_r: o.rank, lora_alpha: o.alpha };
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: o.model,
    inference_mode: true,
    r: o.rank,
    lora_alpha: o.alpha,
    lora_dropout: 0,
    target_modules: targets,
    rank_pattern: o.rankPattern ?? {},
    alpha_pattern: o.alphaPattern ?? {},
    use_rslora: o.rslora ?? false,
    use_dora: false,
    bias: 'none',
    modules_to_save: null,
    fan_in_fan_out: false,
    init_lora_weights: true,
    layers_to_transform: layers,
  };
}
