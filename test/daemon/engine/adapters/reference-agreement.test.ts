// The engine's unmerged LoRA against the float64 TS reference dequant(W)·x + s·B(A·x) on tiny
// models, for every format: PEFT (with rank_pattern, alpha_pattern and rsLoRA), mlx-lm (last N
// layers, transposed tensors), Edge0 (with and without adapter_config.json), F32/F16/BF16 A and B,
// targets on attention, dense MLP and shared-expert projections, and on the hybrid models' gated
// attention, Gated DeltaNet projections and gated shared expert, and bailing's fused query_key_value,
// dense and lightning g_proj.
//
// Tolerance: as the base engine-vs-reference test, 1e-5 × max(1, max|logit|): the engine keeps
// activations in float32 and the reference LoRA kernel accumulates in double, rounding once per
// output, so the adapter adds ~1e-7 relative error per projection. Each case also checks that the
// adapter moves the logits by far more than that bound (RMS 0.02 deltas), so a LoRA the engine
// ignored or applied with a wrong scale, transpose or target would fail.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { readAdapterWeights } from '../../../../daemon/tools/reference/adapter-weights.js';
import { readAdapter } from '../../../../daemon/engine/adapters/read-adapter.js';
import { NativeModel } from '../../../../daemon/engine/native-model.js';
import type { SynthAdapterOptions } from '../../../../daemon/tools/synth-adapter.js';
import { referenceForward, referenceGreedy } from '../../../../daemon/tools/reference/forward.js';
import type { Arch, SpecOverrides } from '../../../../daemon/tools/synth-shapes.js';
import { Prng } from '../../../../robot/common/prng.js';
import { synthTemp } from '../../../native/helpers/model-files.js';
import { maxAbs, maxAbsDiff, synthAdapterTemp } from './helpers.js';

interface Case {
  name: string;
  arch: Arch;
  model?: SpecOverrides;
  adapter: Omit<SynthAdapterOptions, 'model' | 'out' | 'rms' | 'seed'>;
  /** Expected scale per module (hand-computed from the config). */
  scale: (module: string) => number;
  dropConfig?: boolean;
}

const CASES: Case[] = [
  {
    name: 'PEFT qwen3_moe, attention + dense MLP, BF16',
    arch: 'qwen3_moe',
    model: { mlpOnlyLayers: [1] },
    adapter: { format: 'peft', rank: 8, alpha: 16, targets: ['attention', 'mlp'], dtype: 'BF16' },
    scale: () => 16 / 8,
  },
  {
    name: 'PEFT glm4_moe, rank_pattern + alpha_pattern + rsLoRA, attention + dense + shared experts, F16',
    arch: 'glm4_moe',
    adapter: {
      format: 'peft',
      rank: 8,
      alpha: 16,
      targets: ['all'],
      dtype: 'F16',
      rslora: true,
      rankPattern: { 'self_attn.v_proj': 4, 'model.layers.2.self_attn.q_proj': 12 },
      alphaPattern: { o_proj: 5 },
    },
    scale: (m) => {
      if (m.endsWith('v_proj')) return 16 / Math.sqrt(4);
      if (m === 'model.layers.2.self_attn.q_proj') return 16 / Math.sqrt(12);
      if (m.endsWith('o_proj')) return 5 / Math.sqrt(8);
      return 16 / Math.sqrt(8);
    },
  },
  {
    name: 'mlx-lm qwen3_moe, last 2 layers, F32',
    arch: 'qwen3_moe',
    adapter: { format: 'mlx', rank: 4, alpha: 10, targets: ['attention'], numLayers: 2 },
    scale: () => 10 / 4,
  },
  {
    name: 'Edge0 glm4_moe, attention + shared experts, F16',
    arch: 'glm4_moe',
    adapter: { format: 'edge0', rank: 8, alpha: 24, targets: ['attention', 'shared'] },
    scale: () => 24 / 8,
  },
  {
    name: 'Edge0 without adapter_config.json (r 16, alpha 32)',
    arch: 'qwen3_moe',
    adapter: { format: 'edge0', rank: 16, alpha: 32, targets: ['self_attn.q_proj', 'self_attn.v_proj'] },
    scale: () => 2,
    dropConfig: true,
  },
  {
    name: 'PEFT qwen3_5_moe, gated attention + linear attention + gated shared expert, BF16',
    arch: 'qwen3_5_moe',
    adapter: { format: 'peft', rank: 8, alpha: 16, targets: ['all'], dtype: 'BF16' },
    scale: () => 2,
  },
  {
    name: 'Edge0 qwen3_next, fused linear-attention projections (in_proj_qkvz, in_proj_ba, out_proj)',
    arch: 'qwen3_next',
    adapter: { format: 'edge0', rank: 4, alpha: 8, targets: ['linear'] },
    scale: () => 2,
  },
  {
    name: 'mlx-lm qwen3_next, last 2 layers (one linear, one full attention), F32',
    arch: 'qwen3_next',
    adapter: { format: 'mlx', rank: 4, alpha: 10, targets: ['linear', 'attention'], numLayers: 2 },
    scale: () => 10 / 4,
  },
  {
    name: 'PEFT bailing_moe_linear, query_key_value + dense (both layer kinds) + g_proj + dense MLP + shared experts',
    arch: 'bailing_moe_linear',
    adapter: { format: 'peft', rank: 8, alpha: 16, targets: ['all'], dtype: 'BF16' },
    scale: () => 2,
  },
];

for (const c of CASES) {
  test(`${c.name}: engine logits equal the float64 reference with the LoRA`, async (t) => {
    const dir = synthTemp(t, { arch: c.arch, seed: 4, ...c.model });
    const adir = synthAdapterTemp(t, { ...c.adapter, model: dir, rms: 0.02, seed: 8 });
    if (c.dropConfig) rmSync(join(adir, 'adapter_config.json'));
    const plan = await readAdapter(adir, { layers: 4, name: 'tuned' });
    assert.equal(plan.format, c.adapter.format);
    for (const m of plan.modules)
      assert.ok(
        Math.abs(m.scale - c.scale(m.module)) < 1e-12,
        `${c.name}: ${m.module} scale ${m.scale}, want ${c.scale(m.module)}`,
      );
    if (c.adapter.numLayers)
      assert.ok(
        plan.modules.every((m) => m.layer >= 4 - c.adapter.numLayers!),
        'only the last layers',
      );

    // 24-bit decode activations hold the 1e-5 bound (the default 16 bits: engine reference-agreement).
    const model = await NativeModel.load(dir, { threads: 2, activationBits: 24 });
    t.after(() => model.dispose());
    const adapter = await model.loadAdapter(plan);
    assert.deepEqual(
      adapter.summary.modules.map((m) => [m.module, m.rank]),
      plan.modules.map((m) => [m.module, m.rank]),
    );
    const session = await model.createSession();
    session.setAdapter(adapter);
    assert.equal(session.info().adapter, 'tuned');

    const rng = new Prng(31);
    const prompt = Array.from({ length: 8 }, () => rng.int(640));
    const got = await session.greedy(prompt, 8);
    const ref = referenceForward(dir, { adapter: readAdapterWeights(plan) });
    const want = referenceGreedy(ref, prompt, 8);
    ref.close();
    const plain = referenceForward(dir);
    const base = referenceGreedy(plain, prompt, 1);
    plain.close();
    assert.deepEqual(got.tokens, want.tokens, `${c.name}: greedy tokens`);
    for (let step = 0; step < 8; step++) {
      const bound = 1e-5 * Math.max(1, maxAbs(want.logits[step]!));
      const d = maxAbsDiff(got.logits[step]!, want.logits[step]!);
      assert.ok(d <= bound, `${c.name} step ${step}: engine vs reference |Δ| ${d} > ${bound}`);
    }
    const effect = maxAbsDiff(base.logits[0]!, want.logits[0]!);
    assert.ok(
      effect > 100 * 1e-5 * maxAbs(want.logits[0]!),
      `${c.name}: the adapter moves the first logits by ${effect}`,
    );
  });
}
