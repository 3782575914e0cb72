// `lora merge-check`: how much of a LoRA survives being merged into the int4 weights. Per module:
// W = dequant(W4) (the float copy), ΔW = s·B·A, both W and W + ΔW re-quantised with the model's
// MLX affine format (same bits and group, float32 arithmetic, scales/biases rounded to their stored
// dtype), weight_retention = ‖Q(W+ΔW) − Q(W)‖ / ‖ΔW‖; weight_projection = ⟨Q(W+ΔW) − Q(W), ΔW⟩ /
// ‖ΔW‖², the part of the change that points along ΔW (rounding noise excluded). At the logits, over
// seeded prompts, two temporary folders with the re-quantised modules (merged Q(W+ΔW) and
// requantised base Q(W)) against the unmerged adapter on the original base:
// logits_retention = ‖L(merged) − L(Q(W))‖ / ‖L(unmerged) − L(base)‖ (and its projection).
// Re-quantising is not idempotent (a group's bias is rounded to bf16 before its scale is derived),
// so Q(W) ≠ W4 in a few groups; comparing with Q(W) keeps that drift out, and it is reported.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { roundTo } from '../models/float16.js';
import { writeMergedFolder } from './merged-folder.js';
import {
  dequantizeAffine,
  quantizeAffine,
  type QuantBits,
  type QuantGroup,
  type QuantizedMatrix,
} from '../models/mlx-quant.js';
import { readRefConfig } from './reference/model-config.js';
import { RefWeights } from './reference/weights.js';
import { Prng } from '../../robot/common/prng.js';
import { NativeModel, type NativeSession } from '../engine/native-model.js';
import { readAdapterWeights, type FloatLora } from './reference/adapter-weights.js';
import { AdapterError, type AdapterPlan } from '../engine/adapters/plan.js';
import { readAdapter } from '../engine/adapters/read-adapter.js';

/** Published retention when merging a LoRA into int4 (FACTS.md, LoRA adapter formats). */
export const PUBLISHED_RETENTION = { attention_projection: 0.34, dense_projection: 0.02, logits: 0.18 } as const;

export interface ModuleRetention {
  module: string;
  rank: number;
  scale: number;
  /** RMS of ΔW = s·B·A. */
  delta_rms: number;
  /** RMS of the module's quantisation step |scale| (the int4 grid spacing). */
  step_rms: number;
  weight_retention: number;
  /** ⟨Q(W+ΔW) − Q(W), ΔW⟩ / ‖ΔW‖². */
  weight_projection: number;
  /** ‖Q(W) − W‖ / ‖ΔW‖: 0 when re-quantising the dequantised base reproduces it. */
  requant_drift: number;
  /** Share of codes that differ between Q(W + ΔW) and Q(W). */
  codes_changed: number;
}

export interface MergeCheckResult {
  model: string;
  adapter: string;
  format: string;
  modules: ModuleRetention[];
  /** Pooled over modules of a kind (attention, dense_mlp, shared_mlp): retention and projection. */
  pooled: Record<string, { weight_retention: number; weight_projection: number }>;
  logits_retention: number | null;
  logits_projection: number | null;
  /** ‖L(Q(W)) − L(base)‖ / ‖L(unmerged) − L(base)‖. */
  logits_requant_drift: number | null;
  prompts: number;
  tokens: number;
  published: typeof PUBLISHED_RETENTION;
}

export interface MergeCheckOptions {
  model: string;
  adapter: string;
  /** Module paths or in-layer suffixes (e.g. self_attn.q_proj); default every adapter module. */
  modules?: string[];
  prompts: number;
  tokens: number;
  threads: number;
  seed: number;
  /** Skip the logits comparison (weights only). */
  weightsOnly?: boolean;
}

/** s·B·A as a row-major [out, in] matrix. */
export function deltaWeight(l: FloatLora): Float64Array {
  const d = new Float64Array(l.out * l.in);
  for (let o = 0; o < l.out; o++) {
    for (let k = 0; k < l.rank; k++) {
      const bk = l.scale * l.b[o * l.rank + k]!;
      for (let c = 0; c < l.in; c++) d[o * l.in + c]! += bk * l.a[k * l.in + c]!;
    }
  }
  return d;
}

/** Retention of one module's delta through re-quantisation (see the file comment). */
export function moduleRetention(
  w: Float64Array,
  delta: Float64Array,
  rows: number,
  cols: number,
  bits: QuantBits,
  group: QuantGroup,
  roundParam: (x: number) => number,
) {
  const merged = quantizeAffine(
    Float32Array.from(w, (v, i) => v + delta[i]!),
    rows,
    cols,
    bits,
    group,
    { roundParam },
  );
  const base = quantizeAffine(Float32Array.from(w), rows, cols, bits, group, { roundParam });
  const dm = dequantizeAffine(merged);
  const db = dequantizeAffine(base);
  let num = 0,
    den = 0,
    dot = 0,
    drift = 0;
  for (let i = 0; i < w.length; i++) {
    num += (dm[i]! - db[i]!) ** 2;
    dot += (dm[i]! - db[i]!) * delta[i]!;
    den += delta[i]! ** 2;
    drift += (db[i]! - w[i]!) ** 2;
  }
  let changed = 0;
  for (let i = 0; i < merged.weight.length; i++) {
    const x = merged.weight[i]! ^ base.weight[i]!;
    for (let p = 0; p < 32; p += bits) changed += (x >>> p) & ((1 << bits) - 1) ? 1 : 0;
  }
  let step = 0;
  for (const s of base.scales) step += s * s;
  return {
    merged,
    base,
    num,
    den,
    dot,
    retention: Math.sqrt(num / den),
    projection: dot / den,
    drift: Math.sqrt(drift / den),
    changed: changed / w.length,
    deltaRms: Math.sqrt(den / w.length),
    stepRms: Math.sqrt(step / base.scales.length),
  };
}

function kindOf(module: string): string {
  if (module.includes('.self_attn.')) return 'attention';
  return module.includes('.shared_experts.') ? 'shared_mlp' : 'dense_mlp';
}

function chosen(plan: AdapterPlan, filter?: string[]): AdapterPlan {
  if (!filter || filter.length === 0) return plan;
  const modules = plan.modules.filter((m) => filter.some((f) => m.module === f || m.module.endsWith(`.${f}`)));
  if (modules.length === 0)
    throw new AdapterError(
      `--modules ${filter.join(',')} selects none of the adapter's ${plan.modules.length} modules (e.g. ${plan.modules[0]?.module})`,
    );
  return { ...plan, modules };
}

export async function mergeCheck(o: MergeCheckOptions): Promise<MergeCheckResult> {
  const cfg = readRefConfig(o.model);
  const plan = chosen(await readAdapter(o.adapter, { layers: cfg.layers, name: 'merge-check' }), o.modules);
  const loras = readAdapterWeights(plan);
  const weights = RefWeights.open(o.model, cfg, false);
  const modules: ModuleRetention[] = [];
  const merged = new Map<string, QuantizedMatrix>();
  const requantised = new Map<string, QuantizedMatrix>();
  const pooled = new Map<string, [number, number, number]>();
  try {
    for (const m of plan.modules) {
      if (!weights.has(`${m.module}.scales`))
        throw new AdapterError(`${o.model}: module ${m.module} is not quantised; merge-check compares int4 merges`);
      const mat = weights.matrix(m.module);
      const w = new Float64Array(mat.rows * mat.cols);
      for (let r = 0; r < mat.rows; r++) w.set(mat.row(r), r * mat.cols);
      const { bits, groupSize } = weights.quantFor(m.module);
      const round = roundTo(weights.st.info(`${m.module}.scales`).dtype as 'F32' | 'F16' | 'BF16');
      const x = moduleRetention(
        w,
        deltaWeight(loras.get(m.module)!),
        mat.rows,
        mat.cols,
        bits as QuantBits,
        groupSize as QuantGroup,
        round,
      );
      merged.set(m.module, x.merged);
      requantised.set(m.module, x.base);
      const p = pooled.get(kindOf(m.module)) ?? [0, 0, 0];
      pooled.set(kindOf(m.module), [p[0] + x.num, p[1] + x.den, p[2] + x.dot]);
      modules.push({
        module: m.module,
        rank: m.rank,
        scale: m.scale,
        delta_rms: x.deltaRms,
        step_rms: x.stepRms,
        weight_retention: x.retention,
        weight_projection: x.projection,
        requant_drift: x.drift,
        codes_changed: x.changed,
      });
    }
  } finally {
    weights.close();
  }
  const result: MergeCheckResult = {
    model: o.model,
    adapter: o.adapter,
    format: plan.format,
    modules,
    pooled: Object.fromEntries(
      [...pooled].map(([k, [n, d, dot]]) => [k, { weight_retention: Math.sqrt(n / d), weight_projection: dot / d }]),
    ),
    logits_retention: null,
    logits_projection: null,
    logits_requant_drift: null,
    prompts: o.prompts,
    tokens: o.tokens,
    published: PUBLISHED_RETENTION,
  };
  if (!o.weightsOnly) Object.assign(result, await logitsRetention(o, plan, merged, requantised, cfg.vocabSize));
  return result;
}

type LogitsNumbers = Pick<MergeCheckResult, 'logits_retention' | 'logits_projection' | 'logits_requant_drift'>;

async function logitsRetention(
  o: MergeCheckOptions,
  plan: AdapterPlan,
  merged: Map<string, QuantizedMatrix>,
  requantised: Map<string, QuantizedMatrix>,
  vocab: number,
): Promise<LogitsNumbers> {
  const tmp = mkdtempSync(join(tmpdir(), 'bs-merged-'));
  const models: NativeModel[] = [];
  const sessions: NativeSession[] = [];
  try {
    writeMergedFolder(o.model, join(tmp, 'merged'), merged);
    writeMergedFolder(o.model, join(tmp, 'requantised'), requantised);
    for (const dir of [o.model, join(tmp, 'merged'), join(tmp, 'requantised')]) {
      models.push(await NativeModel.load(dir, { threads: o.threads, contextLength: o.tokens }));
    }
    const adapter = await models[0]!.loadAdapter(plan);
    for (const m of [models[0]!, ...models]) sessions.push(await m.createSession());
    // base, unmerged (base + adapter), merged Q(W+ΔW), requantised base Q(W)
    const [sb, su, sm, sq] = sessions as [NativeSession, NativeSession, NativeSession, NativeSession];
    su.setAdapter(adapter);
    const rng = new Prng(o.seed);
    let num = 0,
      den = 0,
      dot = 0,
      drift = 0;
    for (let p = 0; p < o.prompts; p++) {
      const prompt = Array.from({ length: o.tokens }, () => rng.int(vocab));
      const [lb, lu, lm, lq] = [
        await sb.prefill(prompt),
        await su.prefill(prompt),
        await sm.prefill(prompt),
        await sq.prefill(prompt),
      ];
      for (let v = 0; v < lb.length; v++) {
        const effect = lu[v]! - lb[v]!;
        num += (lm[v]! - lq[v]!) ** 2;
        dot += (lm[v]! - lq[v]!) * effect;
        den += effect ** 2;
        drift += (lq[v]! - lb[v]!) ** 2;
      }
      for (const s of sessions) await s.truncate(0);
    }
    adapter.dispose();
    return {
      logits_retention: Math.sqrt(num / den),
      logits_projection: dot / den,
      logits_requant_drift: Math.sqrt(drift / den),
    };
  } finally {
    for (const s of sessions) s.dispose();
    for (const m of models) m.dispose();
    rmSync(tmp, { recursive: true, force: true });
  }
}
