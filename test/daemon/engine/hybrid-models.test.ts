// The hybrid linear-attention MoE archs (qwen3_next, qwen3_5_moe: Gated DeltaNet; bailing_moe_linear:
// lightning attention) on tiny synthetic models: the
// recurrent state survives truncation (a prefix restores the state at that prefix, from a
// snapshot or a replay), agrees with the float64 reference after truncation, malformed
// hybrid folders fail naming the tensor or key, and adapters are checked against layer types. Plain agreement with the reference (prefill,
// decode, every kernel set) is in reference-agreement.test.ts.
import { type TestContext, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readAdapter } from '../../../daemon/engine/adapters/read-adapter.js';
import { EngineError, NativeModel } from '../../../daemon/engine/native-model.js';
import { referenceForward } from '../../../daemon/tools/reference/forward.js';
import { type Arch, configJson, synthSpec } from '../../../daemon/tools/synth-shapes.js';
import { Prng } from '../../../robot/common/prng.js';
import { editHeader, editJson, shardOf, synthTemp } from '../../native/helpers/model-files.js';
import { peftConfig, type RawTensor, writeAdapterDir } from './adapters/helpers.js';
import { assertClose, assertTruncations } from './logits-compare.js';

const HYBRID = ['qwen3_next', 'qwen3_5_moe', 'bailing_moe_linear'] as const;

for (const arch of HYBRID) {
  test(`${arch}: truncating to every position of a prompt and continuing gives the straight run's logits`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 3 });
    const rng = new Prng(9);
    const prompt = Array.from({ length: 12 }, () => rng.int(600));
    const next = [5, 77, 301];
    const model = await NativeModel.load(dir, { threads: 2, activationBits: 24 });
    t.after(() => model.dispose());
    const s = await model.createSession();
    // Straight: the prompt, then three decode steps.
    const straight = [await s.prefill(prompt)];
    for (const tok of next) straight.push(await s.decode(tok));
    for (let p = 0; p < prompt.length; p++) {
      // Rewind into the prompt (a snapshot or the zero state plus a replay), then continue.
      await s.truncate(p);
      assert.equal(s.length, p);
      const got = [await s.prefill(prompt.slice(p))];
      for (const tok of next) got.push(await s.decode(tok));
      got.forEach((l, i) => assertClose(l, straight[i]!, `truncate(${p}) step ${i}`));
      // A snapshot hit restores the exact state: prefill(prompt[:p]) then prefill(rest) twice.
      if (p < 2) continue;
      await s.truncate(0);
      await s.prefill(prompt.slice(0, p));
      const first = await s.prefill(prompt.slice(p));
      await s.truncate(p);
      const again = await s.prefill(prompt.slice(p));
      assert.deepEqual(again, first, `snapshot at ${p}: continuation differs`);
    }
    await s.truncate(0);
    s.dispose();
  });

  test(`${arch}: the engine after truncations matches the float64 reference`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 4 });
    const model = await NativeModel.load(dir, { threads: 1, backend: 'cpu-ref' });
    t.after(() => model.dispose());
    const ref = referenceForward(dir);
    t.after(() => ref.close());
    const s = await model.createSession();
    const prompt = [3, 14, 15, 92, 65, 35, 89, 79];
    assertClose(await s.prefill(prompt), ref.prefill(prompt), 'prefill');
    await assertTruncations(s, ref, [
      [5, [26, 53]],
      [2, [58, 97, 93]],
      [4, [23]],
    ] as const);
    s.dispose();
  });
}

test('hybrid decode keeps a snapshot: truncating into generated text replays fewer than 32 tokens', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 3 });
  const model = await NativeModel.load(dir, { threads: 2, activationBits: 24 });
  t.after(() => model.dispose());
  const s = await model.createSession();
  const prompt = [3, 14, 15, 92, 65, 35, 89, 79];
  const straight = [await s.prefill(prompt)];
  const generated: number[] = [];
  for (let i = 0; i < 70; i++) {
    generated.push((i * 37) % 600);
    straight.push(await s.decode(generated[i]!));
  }
  // 78 tokens; decode snapshots at 40 and 72 (every 32 after the prefill's at 8).
  for (const [to, replayed] of [
    [75, 3],
    [60, 20],
    [41, 1],
  ] as const) {
    const before = s.info().tokens;
    await s.truncate(to);
    assert.equal(s.info().tokens - before, replayed, `truncate(${to}) replays from the latest snapshot`);
    for (let i = to - prompt.length; i < to - prompt.length + 3; i++) {
      assertClose(await s.decode(generated[i]!), straight[i + 1]!, `truncate(${to}) then decode ${i}`);
    }
  }
  s.dispose();
});

const conv = 'model.layers.0.linear_attn.conv1d.weight';
const rejects = async (dir: string, pattern: RegExp) => {
  await assert.rejects(NativeModel.load(dir), (e: Error) => {
    assert.ok(e instanceof EngineError, String(e));
    assert.match(e.message, pattern);
    return true;
  });
};

test('malformed hybrid folders are refused naming the tensor or key', async (t) => {
  let dir = synthTemp(t, { arch: 'qwen3_next', seed: 1 });
  editHeader(shardOf(dir, conv), (h) => delete h[conv]);
  editJson(join(dir, 'model.safetensors.index.json'), (j) => delete (j.weight_map as Record<string, string>)[conv]);
  await rejects(dir, /missing tensor model\.layers\.0\.linear_attn\.conv1d\.weight/);

  dir = synthTemp(t, { arch: 'qwen3_next', seed: 1 });
  editHeader(shardOf(dir, conv), (h) => {
    h[conv]!.shape = [h[conv]!.shape[0]! / 2, 8, 1];
  });
  await rejects(dir, /tensor model\.layers\.0\.linear_attn\.conv1d\.weight has shape \[128, 8, 1\].*\[256, 4, 1\]/);

  dir = synthTemp(t, { arch: 'qwen3_next', seed: 1 });
  editJson(join(dir, 'config.json'), (j) => (j.full_attention_interval = 4));
  await rejects(dir, /layer 1 is linear_attention by config\.json .* model\.layers\.1\.self_attn tensors/);

  dir = synthTemp(t, { arch: 'qwen3_next', seed: 1 });
  editJson(join(dir, 'config.json'), (j) => (j.full_attention_interval = 0));
  await rejects(dir, /field full_attention_interval must be an integer in \[1, /);

  // Expert layouts: Hugging Face per-expert tensors beside switch_mlp.
  const rename = (d: string, from: string, to: string) => {
    editHeader(shardOf(d, from), (h) => {
      h[to] = h[from]!;
      delete h[from];
    });
    editJson(join(d, 'model.safetensors.index.json'), (j) => {
      const map = j.weight_map as Record<string, string>;
      map[to] = map[from]!;
      delete map[from];
    });
  };
  const mlp = 'model.layers.0.mlp';
  dir = synthTemp(t, { arch: 'qwen3_next', seed: 1 });
  rename(dir, `${mlp}.switch_mlp.up_proj.weight`, `${mlp}.experts.0.gate_proj.weight`);
  await rejects(
    dir,
    /tensors model\.layers\.0\.mlp\.switch_mlp\.gate_proj\.weight and .*experts\.0\.gate_proj\.weight mix/,
  );
  // Per-expert alone loads (expert-layouts.test.ts): here expert 0 is a stacked tensor renamed.
  rename(dir, `${mlp}.switch_mlp.gate_proj.weight`, `${mlp}.experts.1.gate_proj.weight`);
  await rejects(dir, /tensor model\.layers\.0\.mlp\.experts\.0\.gate_proj\.weight has dtype U32 and no/);

  dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 1 });
  editJson(join(dir, 'config.json'), (j) => {
    const text = j.text_config as { layer_types: string[] };
    text.layer_types = text.layer_types.slice(0, 3);
  });
  await rejects(dir, /text_config: field layer_types must list one type per layer \(num_hidden_layers 4\)/);

  dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 1 });
  editJson(join(dir, 'config.json'), (j) => {
    const text = j.text_config as { layer_types: string[] };
    text.layer_types[0] = 'full_attention';
  });
  await rejects(dir, /field full_attention_interval disagrees with layer_types at layer 0/);

  dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 1 });
  editJson(join(dir, 'config.json'), (j) => {
    const text = j.text_config as Record<string, unknown>;
    delete text.full_attention_interval;
    (text.layer_types as string[])[0] = 'full_attention';
  });
  await rejects(dir, /layer 0 is full_attention .* language_model\.model\.layers\.0\.linear_attn tensors/);
});

const peft = (module: string, inDim: number, outDim: number): RawTensor[] => [
  { name: `base_model.model.${module}.lora_A.weight`, shape: [4, inDim] },
  { name: `base_model.model.${module}.lora_B.weight`, shape: [outDim, 4] },
];

/** Each rank-4 PEFT adapter of `cases` is refused by a tiny `arch` model with its message. */
async function refusesAdapters(t: TestContext, arch: Arch, cases: [RawTensor[], RegExp][]): Promise<void> {
  const model = await NativeModel.load(synthTemp(t, { arch, seed: 1 }));
  t.after(() => model.dispose());
  for (const [tensors, want] of cases) {
    const dir = writeAdapterDir(t, 'adapter_model.safetensors', tensors, peftConfig({ target_modules: 'all-linear' }));
    await assert.rejects(model.loadAdapter(await readAdapter(dir, { layers: 4, name: 'bad' })), (e: Error) => {
      assert.ok(e instanceof EngineError, String(e));
      assert.match(e.message, want);
      return true;
    });
  }
}

test('adapters on hybrid models: a projection the layer does not have is refused naming it', async (t) => {
  await refusesAdapters(t, 'qwen3_next', [
    [peft('model.layers.0.self_attn.q_proj', 128, 256), /but layer 0 is a linear-attention layer/],
    [peft('model.layers.1.linear_attn.out_proj', 128, 128), /but layer 1 is not a linear-attention layer/],
    [
      peft('model.layers.0.linear_attn.in_proj_qkv', 128, 256),
      /but this qwen3_next model's linear attention has no such projection/,
    ],
    [peft('model.layers.0.mlp.shared_expert_gate', 128, 1), /the shared-expert gate, which cannot carry a LoRA/],
    [
      peft('model.layers.0.linear_attn.in_proj_ba', 128, 4),
      /module model\.layers\.0\.linear_attn\.in_proj_ba has 8 outputs and rank 4/,
    ],
  ]);
});

test('moe-35b has the published Qwen3.5-35B-A3B dimensions; shapes are per architecture family', () => {
  const s = synthSpec('qwen3_5_moe', 'moe-35b');
  const text = configJson(s).text_config as Record<string, unknown>;
  const want: Record<string, unknown> = {
    hidden_size: 2048,
    num_hidden_layers: 40,
    num_attention_heads: 16,
    num_key_value_heads: 2,
    head_dim: 256,
    linear_num_key_heads: 16,
    linear_key_head_dim: 128,
    linear_num_value_heads: 32,
    linear_value_head_dim: 128,
    linear_conv_kernel_dim: 4,
    full_attention_interval: 4,
    num_experts: 256,
    num_experts_per_tok: 8,
    moe_intermediate_size: 512,
    shared_expert_intermediate_size: 512,
    vocab_size: 248320,
    max_position_embeddings: 262144,
  };
  for (const [k, v] of Object.entries(want)) assert.equal(text[k], v, k);
  assert.deepEqual(text.rope_parameters, {
    partial_rotary_factor: 0.25,
    rope_theta: 1e7,
    mrope_interleaved: true,
    mrope_section: [11, 11, 10],
    rope_type: 'default',
  });
  const types = text.layer_types as string[];
  assert.equal(types.filter((x) => x === 'full_attention').length, 10);
  assert.equal(types[3], 'full_attention');
  assert.throws(() => synthSpec('qwen3_5_moe', 'moe-30b'), /shape moe-30b is not defined for qwen3_5_moe/);
  assert.throws(() => synthSpec('qwen3_moe', 'moe-35b'), /shape moe-35b is not defined for qwen3_moe/);
});

test('malformed bailing_moe_linear folders are refused naming the tensor or key', async (t) => {
  const cases: [(j: Record<string, unknown>) => void, RegExp][] = [
    [
      (j) => (j.layer_group_size = 4),
      /layer 1 is a linear-attention layer by config\.json \(layer_group_size\) but the folder has no model\.layers\.1\.attention\.g_proj\.weight/,
    ],
    [(j) => (j.layer_group_size = 1), /layer 0 is a softmax-attention layer .* model\.layers\.0\.attention\.g_proj/],
    [(j) => (j.layer_group_size = 5), /field layer_group_size must not exceed num_hidden_layers, got 5/],
    [(j) => (j.score_function = 'softmax'), /field score_function must be "sigmoid" .*, got "softmax"/],
    [(j) => (j.group_norm_size = 3), /field group_norm_size must divide hidden_size, got 3/],
    [(j) => (j.norm_head = true), /field norm_head must be false/],
    [(j) => (j.first_k_dense_replace = 9), /field first_k_dense_replace must not exceed num_hidden_layers/],
  ];
  for (const [edit, want] of cases) {
    const dir = synthTemp(t, { arch: 'bailing_moe_linear', seed: 1 });
    editJson(join(dir, 'config.json'), edit);
    await rejects(dir, want);
  }
  const bias = 'model.layers.1.mlp.gate.expert_bias';
  const dir = synthTemp(t, { arch: 'bailing_moe_linear', seed: 1 });
  editHeader(shardOf(dir, bias), (h) => delete h[bias]);
  editJson(join(dir, 'model.safetensors.index.json'), (j) => delete (j.weight_map as Record<string, string>)[bias]);
  await rejects(dir, /missing tensor model\.layers\.1\.mlp\.gate\.expert_bias/);
});

test('adapters on bailing_moe_linear: g_proj only on lightning layers, no self_attn names', async (t) => {
  await refusesAdapters(t, 'bailing_moe_linear', [
    [peft('model.layers.1.attention.g_proj', 128, 128), /but layer 1 is not a linear-attention layer/],
    [peft('model.layers.0.self_attn.q_proj', 128, 128), /which is not a module of this bailing_moe_linear model/],
    [peft('model.layers.1.mlp.gate.gate_proj', 128, 16), /the MoE router, which cannot carry a LoRA/],
  ]);
});

test('ring-mini has the published Ring-mini-linear-2.0 dimensions', () => {
  const c = configJson(synthSpec('bailing_moe_linear', 'ring-mini'));
  const want: Record<string, unknown> = {
    hidden_size: 2048,
    num_hidden_layers: 20,
    num_attention_heads: 16,
    num_key_value_heads: 4,
    head_dim: 128,
    layer_group_size: 5,
    group_norm_size: 4,
    first_k_dense_replace: 1,
    intermediate_size: 5120,
    num_experts: 256,
    num_experts_per_tok: 8,
    moe_intermediate_size: 512,
    num_shared_experts: 1,
    moe_shared_expert_intermediate_size: 512,
    score_function: 'sigmoid',
    moe_router_enable_expert_bias: true,
    n_group: 8,
    topk_group: 4,
    routed_scaling_factor: 2.5,
    partial_rotary_factor: 0.5,
    rope_theta: 1e6,
    vocab_size: 157184,
    use_qk_norm: true,
  };
  for (const [k, v] of Object.entries(want)) assert.equal(c[k], v, k);
  assert.deepEqual((c.quantization as Record<string, unknown>)['model.layers.1.mlp.gate.gate_proj'], {
    group_size: 64,
    bits: 8,
  });
});
