// The merge check's arithmetic on hand-built groups (one code moved by exactly one step: all of
// it survives; 0.4 of a step: none does), large deltas survive almost whole, tiny ones vanish,
// and the whole check on a tiny model (re-quantised temp folders, logits).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mergeCheck, moduleRetention } from '../../../daemon/tools/merge-check.js';
import { roundBf16 } from '../../../daemon/models/float16.js';
import { dequantizeAffine, quantizeAffine } from '../../../daemon/models/mlx-quant.js';
import { Prng } from '../../../robot/common/prng.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { synthAdapterTemp } from '../engine/adapters/helpers.js';

// One 4-bit group of 64 on the grid b + s·q, q = i mod 16: s = -2^-7, b = 15·2^-7, so the edge
// (largest magnitude, q = 0) is positive and the scale negative, all exact in float32 and bf16.
const S = -(2 ** -7);
const grid = Float64Array.from({ length: 64 }, (_, i) => 15 * 2 ** -7 + S * (i % 16));

test('one code moved by a whole step is kept; 0.4 of a step is lost', () => {
  const one = new Float64Array(64);
  one[7] = S; // q 7 → 8
  const kept = moduleRetention(grid, one, 1, 64, 4, 64, roundBf16);
  assert.equal(kept.drift, 0, 're-quantising the grid reproduces it');
  assert.equal(kept.retention, 1);
  assert.equal(kept.projection, 1);
  assert.equal(kept.changed, 1 / 64);
  const part = new Float64Array(64);
  part[7] = 0.4 * S;
  const lost = moduleRetention(grid, part, 1, 64, 4, 64, roundBf16);
  assert.deepEqual([lost.retention, lost.projection, lost.changed], [0, 0, 0]);
});

test('random matrices: deltas far above the step survive, deltas far below vanish', () => {
  for (const seed of [1, 2, 3]) {
    const rng = new Prng(seed);
    const rows = 16,
      cols = 256;
    // A genuine int4 base: random floats through the quantiser, dequantised.
    const w = dequantizeAffine(
      quantizeAffine(
        Float64Array.from({ length: rows * cols }, () => rng.normal() * 0.05),
        rows,
        cols,
        4,
        64,
        { roundParam: roundBf16 },
      ),
    );
    const noise = (rms: number) => Float64Array.from({ length: rows * cols }, () => rng.normal() * rms);
    const big = moduleRetention(w, noise(0.2), rows, cols, 4, 64, roundBf16);
    assert.ok(
      Math.abs(big.retention - 1) < 0.1 && Math.abs(big.projection - 1) < 0.1,
      `seed ${seed}: big delta kept ${big.retention} / ${big.projection}`,
    );
    // A delta 1e-5 of the step moves no code, except where re-quantising drifted the grid so a
    // value sits on a rounding boundary (a handful of codes).
    const tiny = moduleRetention(w, noise(1e-7), rows, cols, 4, 64, roundBf16);
    assert.ok(
      tiny.changed < 0.01 && (tiny.changed === 0) === (tiny.retention === 0),
      `seed ${seed}: tiny delta moved ${tiny.changed} of the codes`,
    );
  }
});

test('merge-check on a tiny model: per-module and logits retention, modules filter', async (t) => {
  const model = synthTemp(t, { arch: 'qwen3_moe', seed: 2, mlpOnlyLayers: [1] });
  const small = synthAdapterTemp(t, {
    model,
    format: 'peft',
    rank: 16,
    alpha: 32,
    rms: 1e-3,
    seed: 1,
    targets: ['attention', 'mlp'],
  });
  const r = await mergeCheck({ model, adapter: small, prompts: 2, tokens: 6, threads: 2, seed: 1 });
  assert.equal(r.modules.length, 4 * 4 + 3);
  for (const m of r.modules) {
    assert.ok(Math.abs(m.delta_rms - 1e-3) < 1e-5, `${m.module}: ΔW RMS ${m.delta_rms}`);
    assert.ok(
      m.weight_projection < 0.5,
      `${m.module}: an RMS-1e-3 delta is mostly lost (projection ${m.weight_projection})`,
    );
    assert.ok(Number.isFinite(m.weight_retention) && m.step_rms > 5 * m.delta_rms);
  }
  assert.deepEqual(Object.keys(r.pooled).sort(), ['attention', 'dense_mlp']);
  assert.ok(
    r.logits_retention! > 0 && r.logits_projection! < 0.5,
    `logits ${r.logits_retention} / ${r.logits_projection}`,
  );
  // A delta far above the int4 step survives the merge almost whole, at the weights and the logits.
  const big = synthAdapterTemp(t, {
    model,
    format: 'mlx',
    rank: 16,
    alpha: 32,
    rms: 0.1,
    seed: 1,
    targets: ['self_attn.v_proj'],
  });
  const rb = await mergeCheck({ model, adapter: big, prompts: 2, tokens: 6, threads: 2, seed: 1 });
  assert.ok(rb.pooled.attention!.weight_projection > 0.9, `big: ${JSON.stringify(rb.pooled)}`);
  assert.ok(
    rb.logits_projection! > 0.8 && rb.logits_retention! < 1.3,
    `big logits: ${rb.logits_retention} / ${rb.logits_projection}`,
  );
  const only = await mergeCheck({
    model,
    adapter: small,
    modules: ['self_attn.o_proj'],
    prompts: 1,
    tokens: 4,
    threads: 1,
    seed: 1,
    weightsOnly: true,
  });
  assert.deepEqual(
    only.modules.map((m) => m.module),
    [0, 1, 2, 3].map((l) => `model.layers.${l}.self_attn.o_proj`),
  );
  assert.equal(only.logits_retention, null);
  await assert.rejects(
    mergeCheck({
      model,
      adapter: small,
      modules: ['mlp.shared_experts.up_proj'],
      prompts: 1,
      tokens: 4,
      threads: 1,
      seed: 1,
    }),
    /--modules mlp\.shared_experts\.up_proj selects none of the adapter's 19 modules/,
  );
});
