import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthModel, type SynthOptions } from '../../../daemon/tools/synth.js';
import { SafetensorsFile, SafetensorsModel } from '../../../daemon/models/safetensors-reader.js';
import { referenceForward } from '../../../daemon/tools/reference/forward.js';
import { readRefConfig } from '../../../daemon/tools/reference/model-config.js';
import { RefWeights } from '../../../daemon/tools/reference/weights.js';

let root = '';
before(() => {
  root = mkdtempSync(join(tmpdir(), 'brainstem-synth-'));
});
after(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
const synth = (o: Omit<SynthOptions, 'out'>) => synthModel({ ...o, out: join(root, `m${n++}`) });
const json = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8'));
const hashes = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => [
        f,
        createHash('sha256')
          .update(readFileSync(join(dir, f)))
          .digest('hex'),
      ]),
  );

test('same seed gives identical files; another seed changes only the weights', () => {
  const a = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 5 });
  const b = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 5 });
  const c = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 6 });
  const [ha, hb, hc] = [hashes(a.dir), hashes(b.dir), hashes(c.dir)];
  assert.deepEqual(ha, hb);
  for (const f of Object.keys(ha)) {
    if (f.endsWith('.safetensors')) assert.notEqual(ha[f], hc[f], f);
    else assert.equal(ha[f], hc[f], f);
  }
});

test('qwen3_moe tiny: mlx-community config keys, 8-bit routers, sharded MLX safetensors with index', () => {
  const r = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 1 });
  const cfg = json(r.dir, 'config.json');
  assert.deepEqual(Object.keys(cfg), [
    'architectures',
    'attention_bias',
    'attention_dropout',
    'bos_token_id',
    'decoder_sparse_step',
    'eos_token_id',
    'head_dim',
    'hidden_act',
    'hidden_size',
    'initializer_range',
    'intermediate_size',
    'max_position_embeddings',
    'max_window_layers',
    'mlp_only_layers',
    'model_type',
    'moe_intermediate_size',
    'norm_topk_prob',
    'num_attention_heads',
    'num_experts',
    'num_experts_per_tok',
    'num_hidden_layers',
    'num_key_value_heads',
    'output_router_logits',
    'quantization',
    'quantization_config',
    'rms_norm_eps',
    'rope_scaling',
    'rope_theta',
    'router_aux_loss_coef',
    'sliding_window',
    'tie_word_embeddings',
    'torch_dtype',
    'transformers_version',
    'use_cache',
    'use_sliding_window',
    'vocab_size',
  ]);
  assert.deepEqual(cfg.quantization, cfg.quantization_config);
  assert.deepEqual(cfg.quantization, {
    group_size: 64,
    bits: 4,
    mode: 'affine',
    ...Object.fromEntries([0, 1, 2, 3].map((l) => [`model.layers.${l}.mlp.gate`, { group_size: 64, bits: 8 }])),
  });
  assert.equal(cfg.eos_token_id, 602);
  const shards = readdirSync(r.dir)
    .filter((f) => f.endsWith('.safetensors'))
    .sort();
  assert.ok(shards.length >= 3, `tiny is sharded: ${shards.join(', ')}`);
  shards.forEach((f, k) => assert.equal(f, `model-0000${k + 1}-of-0000${shards.length}.safetensors`));
  for (const f of shards) {
    const st = SafetensorsFile.open(join(r.dir, f));
    assert.deepEqual(st.metadata, { format: 'mlx' });
    st.close();
  }
  const index = json(r.dir, 'model.safetensors.index.json');
  const m = SafetensorsModel.open(r.dir);
  assert.deepEqual(Object.keys(index.weight_map).sort(), m.names().sort());
  assert.equal(index.metadata.total_size, r.tensorBytes);
  const expect: [string, string, number[]][] = [
    ['model.embed_tokens.weight', 'U32', [640, 16]],
    ['model.embed_tokens.scales', 'BF16', [640, 2]],
    ['model.layers.0.self_attn.q_proj.weight', 'U32', [128, 16]],
    ['model.layers.0.self_attn.k_proj.biases', 'BF16', [64, 2]],
    ['model.layers.0.self_attn.q_norm.weight', 'BF16', [32]],
    ['model.layers.2.mlp.gate.weight', 'U32', [16, 32]],
    ['model.layers.2.mlp.gate.scales', 'BF16', [16, 2]],
    ['model.layers.3.mlp.switch_mlp.gate_proj.weight', 'U32', [16, 128, 16]],
    ['model.layers.3.mlp.switch_mlp.down_proj.scales', 'BF16', [16, 128, 2]],
    ['lm_head.weight', 'U32', [640, 16]],
    ['model.norm.weight', 'BF16', [128]],
  ];
  for (const [name, dtype, shape] of expect) {
    const info = m.info(name);
    assert.deepEqual([info.dtype, info.shape], [dtype, shape], name);
  }
  assert.equal(m.names().length, r.tensorCount);
  m.close();
});

test('glm4_moe tiny: dense layer 0, bf16 router, f32 nonzero correction bias, shared experts, q/k/v biases, 4 groups', () => {
  const r = synth({ arch: 'glm4_moe', shape: 'tiny', seed: 1 });
  const cfg = json(r.dir, 'config.json');
  assert.equal(cfg.n_group, 4);
  assert.equal(cfg.topk_group, 2);
  assert.equal(cfg.partial_rotary_factor, 0.5);
  assert.equal(cfg.first_k_dense_replace, 1);
  assert.deepEqual(cfg.quantization, { group_size: 64, bits: 4, mode: 'affine' });
  for (const k of [
    'scoring_func',
    'topk_method',
    'routed_scaling_factor',
    'n_shared_experts',
    'use_qk_norm',
    'attention_bias',
  ])
    assert.ok(k in cfg, k);
  const m = SafetensorsModel.open(r.dir);
  assert.equal(m.info('model.layers.1.mlp.gate.weight').dtype, 'BF16');
  assert.deepEqual(m.info('model.layers.1.mlp.gate.weight').shape, [16, 128]);
  assert.ok(!m.has('model.layers.1.mlp.gate.scales'));
  const bias = m.info('model.layers.1.mlp.gate.e_score_correction_bias');
  assert.equal(bias.dtype, 'F32');
  assert.ok(new Float32Array(m.read(bias.name).buffer.slice(0)).some((v) => v !== 0));
  assert.deepEqual(m.info('model.layers.0.mlp.gate_proj.weight').shape, [256, 16]);
  assert.ok(!m.has('model.layers.0.mlp.gate.weight'));
  assert.deepEqual(m.info('model.layers.2.mlp.shared_experts.down_proj.weight').shape, [128, 16]);
  assert.equal(m.info('model.layers.0.self_attn.q_proj.bias').dtype, 'BF16');
  assert.ok(!m.has('model.layers.0.self_attn.q_norm.weight'));
  m.close();
  const one = synth({ arch: 'glm4_moe', shape: 'tiny', seed: 1, nGroup: 1 });
  assert.deepEqual([json(one.dir, 'config.json').n_group, json(one.dir, 'config.json').topk_group], [1, 1]);
});

test('quantised modules carry both scale signs; expert weights have the intended spread', () => {
  const r = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 2 });
  const c = readRefConfig(r.dir);
  const w = RefWeights.open(r.dir, c);
  for (const name of ['model.layers.0.self_attn.q_proj.scales', 'model.layers.1.mlp.switch_mlp.up_proj.scales']) {
    const s = w.floats(name);
    const neg = s.filter((v) => v < 0).length;
    assert.ok(neg > s.length * 0.2 && neg < s.length * 0.8, `${name}: ${neg}/${s.length} negative`);
  }
  const e = w.matrix('model.layers.1.mlp.switch_mlp.gate_proj', 5);
  let ss = 0;
  let sum = 0;
  for (let i = 0; i < e.rows; i++) for (const v of e.row(i)) (ss += v * v), (sum += v);
  const count = e.rows * e.cols;
  const std = Math.sqrt(ss / count);
  assert.ok(Math.abs(std * Math.sqrt(128) - 1) < 0.15, `expert std ${std} vs 1/sqrt(128)`);
  assert.ok(Math.abs(sum / count) < 0.1 * std, `expert mean ${sum / count}`);
  w.close();
});

for (const arch of ['qwen3_moe', 'glm4_moe', 'qwen3_next', 'qwen3_5_moe', 'bailing_moe_linear'] as const) {
  test(`${arch} tiny: activations finite, routing spread over experts, next-token distribution not degenerate`, () => {
    const r = synth({ arch, shape: 'tiny', seed: 3 });
    const used = new Map<number, Set<number>>();
    const weights: number[] = [];
    const model = referenceForward(r.dir, {
      onRoute: (l, route) => {
        if (!used.has(l)) used.set(l, new Set());
        route.experts.forEach((x) => used.get(l)!.add(x));
        weights.push(Math.max(...route.weights) / route.weights.reduce((a, b) => a + b, 0));
      },
    });
    for (let t = 0; t < 16; t++) {
      const logits = model.decode((t * 37 + 11) % 600);
      assert.ok(logits.every(Number.isFinite), `finite logits at ${t}`);
      const max = Math.max(...logits);
      const z = logits.reduce((a, v) => a + Math.exp(v - max), 0);
      assert.ok(1 / z < 0.99 && 1 / z > 2 / 640, `top probability ${1 / z} at ${t}`);
    }
    for (const [l, set] of used) assert.ok(set.size >= 12, `layer ${l} used ${set.size}/16 experts`);
    const meanTop = weights.reduce((a, b) => a + b, 0) / weights.length;
    // top-4: an even split gives 0.25; sigmoid scores sit closer together than softmax ones.
    assert.ok(meanTop > 0.27 && meanTop < 0.9, `mean share of the top expert ${meanTop}`);
    model.close();
  });
}

test('variants: 8-bit g32, 4-bit g128, dense qwen3 layers, tied embeddings', () => {
  const v8 = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 4, bits: 8, groupSize: 32 });
  const m8 = SafetensorsModel.open(v8.dir);
  assert.deepEqual(m8.info('model.layers.0.self_attn.o_proj.weight').shape, [128, 32]);
  assert.deepEqual(m8.info('model.layers.0.self_attn.o_proj.scales').shape, [128, 4]);
  m8.close();
  const g128 = synth({ arch: 'glm4_moe', shape: 'tiny', seed: 4, groupSize: 128 });
  const dense = synth({ arch: 'qwen3_moe', shape: 'tiny', seed: 4, mlpOnlyLayers: [1], tieWordEmbeddings: true });
  const cfg = json(dense.dir, 'config.json');
  assert.ok(!('model.layers.1.mlp.gate' in cfg.quantization));
  const md = SafetensorsModel.open(dense.dir);
  assert.ok(md.has('model.layers.1.mlp.gate_proj.weight') && !md.has('lm_head.weight'));
  md.close();
  for (const r of [v8, g128, dense]) {
    const model = referenceForward(r.dir);
    assert.ok(model.prefill([1, 2, 3]).every(Number.isFinite), r.dir);
    model.close();
  }
});

test('bad options are refused with the rule that failed', () => {
  assert.throws(
    () => synth({ arch: 'glm4_moe', shape: 'tiny', nGroup: 3 }),
    /n_group 3 does not divide the 16 experts/,
  );
  assert.throws(
    () => synth({ arch: 'qwen3_moe', shape: 'tiny', groupSize: 128, bits: 4, mlpOnlyLayers: [9] }),
    /mlp_only_layers entry 9/,
  );
  const r = synth({ arch: 'qwen3_moe', shape: 'tiny' });
  assert.throws(() => synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: r.dir }), /is not empty \(pass --force/);
});
