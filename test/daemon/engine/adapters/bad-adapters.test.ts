// Bad adapters get a clear error naming the module or tensor, what was expected and what was
// found: unsupported features (DoRA, bias, modules_to_save), config/tensor disagreements (rank,
// target_modules, num_layers, keys), half pairs, and — checked natively against the loaded model —
// modules it does not have, shape mismatches, routed experts, routers and wrong dtypes.
import { truncateSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdapterManager } from '../../../../daemon/engine/adapters/adapter-manager.js';
import { AdapterError } from '../../../../daemon/engine/adapters/plan.js';
import { readAdapter } from '../../../../daemon/engine/adapters/read-adapter.js';
import { EngineError, NativeModel } from '../../../../daemon/engine/native-model.js';
import { tempDir } from '../../../helpers/temp.js';
import { synthTemp } from '../../../native/helpers/model-files.js';
import { peftConfig, writeAdapterDir, type RawTensor } from './helpers.js';

// Tiny qwen3_moe: hidden 128, q 4×32 = 128, k/v 2×32 = 64, 16 experts of 128, 4 layers, all MoE.
const peft = (module: string, aShape = [4, 128], bShape = [128, 4]): RawTensor[] => [
  { name: `base_model.model.${module}.lora_A.weight`, shape: aShape },
  { name: `base_model.model.${module}.lora_B.weight`, shape: bShape },
];
const Q = 'model.layers.0.self_attn.q_proj';

const CONFIG_CASES: [string, string, RawTensor[], Record<string, unknown> | undefined, RegExp][] = [
  [
    'DoRA in the config',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ use_dora: true }),
    /use_dora must be false: DoRA adds a magnitude vector .*, got true/,
  ],
  [
    'DoRA magnitude tensor',
    'adapter_model.safetensors',
    [...peft(Q), { name: `base_model.model.${Q}.lora_magnitude_vector`, shape: [128] }],
    peftConfig(),
    /tensor base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_magnitude_vector is a DoRA magnitude vector/,
  ],
  [
    'LoRA bias',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ bias: 'lora_only' }),
    /bias must be "none": LoRA bias tensors are not supported, got "lora_only"/,
  ],
  [
    'bias tensor',
    'adapter_model.safetensors',
    [...peft(Q), { name: `base_model.model.${Q}.lora_B.bias`, shape: [128] }],
    peftConfig(),
    /lora_B\.bias is a bias/,
  ],
  [
    'modules_to_save',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ modules_to_save: ['lm_head'] }),
    /modules_to_save must be null or empty: .*, got \["lm_head"\]/,
  ],
  [
    'other PEFT method',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ peft_type: 'IA3' }),
    /peft_type must be "LORA"/,
  ],
  [
    'rank disagreeing with r',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ r: 8 }),
    /tensor base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight has rank 4 \(shape \[4, 128\]\) but adapter_config\.json gives r = 8 for model\.layers\.0\.self_attn\.q_proj/,
  ],
  [
    'rank disagreeing with rank_pattern',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ rank_pattern: { q_proj: 2 } }),
    /has rank 4 .* gives rank_pattern\["q_proj"\] = 2/,
  ],
  [
    'half a pair',
    'adapter_model.safetensors',
    peft(Q).slice(0, 1),
    peftConfig(),
    /lora_A\.weight has no matching LoRA B tensor for module model\.layers\.0\.self_attn\.q_proj/,
  ],
  [
    'module outside target_modules',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ target_modules: ['v_proj'] }),
    /targets model\.layers\.0\.self_attn\.q_proj, which adapter_config\.json target_modules \["v_proj"\] does not select/,
  ],
  [
    'layer outside layers_to_transform',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ layers_to_transform: [2, 3] }),
    /layers_to_transform \[2,3\] does not select/,
  ],
  [
    'layer the model does not have',
    'adapter_model.safetensors',
    peft('model.layers.9.self_attn.q_proj'),
    peftConfig(),
    /targets model\.layers\.9\.self_attn\.q_proj, which is in layer 9 but the model has 4 layers/,
  ],
  [
    'a non-PEFT tensor name',
    'adapter_model.safetensors',
    [
      { name: 'q_proj.lora_A.weight', shape: [4, 128] },
      { name: 'q_proj.lora_B.weight', shape: [128, 4] },
    ],
    peftConfig(),
    /does not start with base_model\.model\./,
  ],
  [
    'bad target_modules regex',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ target_modules: '(?P<x>q_proj' }),
    /target_modules is not a regular expression this engine can run/,
  ],
  // Tested in a worker with a time limit: on the main thread these would hold the daemon for minutes.
  [
    'a target_modules regex that backtracks catastrophically',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ target_modules: '(.|.)*(.|.)*(.|.)*(.|.)*(.|.)*z' }),
    /target_modules took over 2000 ms to match 1 module name \(a pattern that backtracks catastrophically\); simplify it/,
  ],
  [
    'a rank_pattern key that backtracks catastrophically',
    'adapter_model.safetensors',
    peft(Q),
    peftConfig({ rank_pattern: { q: 4, '(.|.)*(.|.)*(.|.)*(.|.)*(.|.)*z': 2 } }),
    /rank_pattern key "\(\.\|\.\)\*.*z" took over 2000 ms/,
  ],
  [
    'mlx-lm DoRA',
    'adapters.safetensors',
    [],
    { fine_tune_type: 'dora', num_layers: 4, lora_parameters: { rank: 4, scale: 20 } },
    /fine_tune_type must be "lora" .*, got "dora"/,
  ],
  [
    'mlx-lm without num_layers on a model of fewer than 16 layers',
    'adapters.safetensors',
    [],
    { lora_parameters: { rank: 4, scale: 20 } },
    /lora_layers is absent, so mlx-lm's default 16 applies, which exceeds the model's 4 layers \(a PEFT adapter is format peft\)/,
  ],
  [
    'mlx-lm layer before num_layers',
    'adapters.safetensors',
    [
      { name: `${Q}.lora_a`, shape: [128, 4] },
      { name: `${Q}.lora_b`, shape: [4, 128] },
    ],
    { num_layers: 2, lora_parameters: { rank: 4, scale: 20 } },
    /lora_a is in layer 0, but num_layers 2 puts LoRA layers at 2\.\.3 \(the last 2\)/,
  ],
  [
    'mlx-lm key not listed',
    'adapters.safetensors',
    [
      { name: `${Q}.lora_a`, shape: [128, 4] },
      { name: `${Q}.lora_b`, shape: [4, 128] },
    ],
    { num_layers: 4, lora_parameters: { rank: 4, scale: 20, keys: ['self_attn.v_proj'] } },
    /targets self_attn\.q_proj, which lora_parameters\.keys \["self_attn\.v_proj"\] does not list/,
  ],
  [
    'mlx-lm rank disagreeing',
    'adapters.safetensors',
    [
      { name: `${Q}.lora_a`, shape: [128, 4] },
      { name: `${Q}.lora_b`, shape: [4, 128] },
    ],
    { num_layers: 4, lora_parameters: { rank: 8, scale: 20 } },
    /has rank 4 \(shape \[128, 4\]\) but adapter_config\.json lora_parameters\.rank is 8/,
  ],
  [
    'mlx-lm DoRA tensor',
    'adapters.safetensors',
    [
      { name: `${Q}.lora_a`, shape: [128, 4] },
      { name: `${Q}.lora_b`, shape: [4, 128] },
      { name: `${Q}.m`, shape: [128] },
    ],
    { num_layers: 4, lora_parameters: { rank: 4, scale: 20 } },
    /q_proj\.m is a DoRA magnitude vector/,
  ],
  [
    'Edge0 rank without a config',
    'lora_x.safetensors',
    [
      { name: `${Q}.lora_A`, shape: [8, 128] },
      { name: `${Q}.lora_B`, shape: [128, 8] },
    ],
    undefined,
    /has rank 8 \(shape \[8, 128\]\) but Edge0's default r is 16 \(no adapter_config\.json\)/,
  ],
  [
    'Edge0 stray tensor',
    'lora_x.safetensors',
    [{ name: `${Q}.weight`, shape: [16, 128] }],
    undefined,
    /tensor model\.layers\.0\.self_attn\.q_proj\.weight is not an Edge0 LoRA tensor/,
  ],
];

for (const [name, file, tensors, config, want] of CONFIG_CASES) {
  test(`bad adapter (${name}) is refused with its reason`, async (t) => {
    const dir = writeAdapterDir(t, file, tensors, config);
    await assert.rejects(
      readAdapter(dir, { layers: 4 }),
      (e: Error) => e instanceof AdapterError && want.test(e.message) && e.message.includes(dir),
      `${name}: want ${want}`,
    );
  });
}

test('a 17 MiB adapter_config.json is refused unread', async (t) => {
  const dir = writeAdapterDir(t, 'adapter_model.safetensors', peft(Q), peftConfig());
  truncateSync(join(dir, 'adapter_config.json'), 17 << 20);
  await assert.rejects(
    readAdapter(dir, { layers: 4 }),
    /adapter_config\.json is 17825792 bytes, over the 16 MiB it may take/,
  );
});

test('a folder with no adapter in it says what it looked for', async (t) => {
  const dir = tempDir('bs-empty-');
  t.after(() => dir.remove());
  await assert.rejects(
    readAdapter(dir.path, { layers: 4 }),
    /expected one \*\.safetensors of <module>\.lora_A \/ \.lora_B tensors .*found none/,
  );
  await assert.rejects(readAdapter(`${dir.path}/nope`, { layers: 4 }), /adapter path .*nope does not exist/);
});

const MODEL_CASES: [string, RawTensor[], RegExp][] = [
  [
    'a module the model does not have',
    peft('model.layers.0.self_attn.x_proj'),
    /tensor base_model\.model\.model\.layers\.0\.self_attn\.x_proj\.lora_A\.weight targets model\.layers\.0\.self_attn\.x_proj, which is not a module of this qwen3_moe model \(LoRA targets: /,
  ],
  [
    'A with the wrong input width',
    peft(Q, [4, 64]),
    /tensor base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight has shape \[4, 64\] but module model\.layers\.0\.self_attn\.q_proj takes 128 inputs: expected \[r, 128\] \(lora_A \[r, in\], lora_B \[out, r\]\)/,
  ],
  [
    'B with the wrong output width',
    peft('model.layers.1.self_attn.k_proj', [4, 128], [128, 4]),
    /lora_B\.weight has shape \[128, 4\] but module model\.layers\.1\.self_attn\.k_proj has 64 outputs and rank 4 \(from .*lora_A\.weight\): expected \[64, 4\]/,
  ],
  [
    'routed experts',
    peft('model.layers.0.mlp.experts.3.gate_proj'),
    /targets model\.layers\.0\.mlp\.experts\.3\.gate_proj, a routed-expert projection: LoRA on routed experts is not supported/,
  ],
  [
    'the router',
    peft('model.layers.0.mlp.gate', [4, 128], [16, 4]),
    /targets model\.layers\.0\.mlp\.gate, the MoE router, which cannot carry a LoRA/,
  ],
  [
    'a dense MLP in a MoE layer',
    peft('model.layers.0.mlp.gate_proj'),
    /targets model\.layers\.0\.mlp\.gate_proj, but layer 0 is a MoE layer without a dense MLP/,
  ],
  [
    'shared experts the model lacks',
    peft('model.layers.0.mlp.shared_experts.up_proj'),
    /but layer 0 has no shared experts/,
  ],
  [
    'an integer tensor',
    [
      { name: `base_model.model.${Q}.lora_A.weight`, shape: [4, 128], dtype: 'I32' },
      { name: `base_model.model.${Q}.lora_B.weight`, shape: [128, 4] },
    ],
    /lora_A\.weight has dtype I32 but must be F16, BF16 or F32/,
  ],
];

test('the engine checks every module against the model it is loaded for', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', seed: 1 }));
  t.after(() => model.dispose());
  for (const [name, tensors, want] of MODEL_CASES) {
    const dir = writeAdapterDir(t, 'adapter_model.safetensors', tensors, peftConfig({ target_modules: 'all-linear' }));
    await assert.rejects(
      model.loadAdapter(await readAdapter(dir, { layers: 4, name: 'bad' })),
      (e: Error) =>
        e instanceof EngineError &&
        want.test(e.message) &&
        e.message.startsWith(`adapter "bad" (${dir}/adapter_model.safetensors): `),
      `${name}: want ${want}`,
    );
  }
  // mlx-lm names routed experts switch_mlp, with a stacked [E, in, r] lora_a.
  const sw = 'model.layers.3.mlp.switch_mlp.gate_proj';
  const dir = writeAdapterDir(
    t,
    'adapters.safetensors',
    [
      { name: `${sw}.lora_a`, shape: [16, 128, 4] },
      { name: `${sw}.lora_b`, shape: [16, 4, 128] },
    ],
    { num_layers: 2, lora_parameters: { rank: 4, scale: 20 } },
  );
  await assert.rejects(
    model.loadAdapter(await readAdapter(dir, { layers: 4 })),
    /targets model\.layers\.3\.mlp\.switch_mlp\.gate_proj, a routed-expert projection: LoRA on routed experts is not supported/,
  );
});

test('the adapter manager names bad names, duplicates, limits and unknown adapters', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', seed: 1 }));
  t.after(() => model.dispose());
  const dir = writeAdapterDir(t, 'adapter_model.safetensors', peft(Q), peftConfig());
  const m = new AdapterManager(model, undefined, 2);
  await assert.rejects(
    m.load('base:tuned', dir),
    /adapter name must be 1-64 letters, digits, '\.', '_' or '-' .*, got "base:tuned"/,
  );
  await m.load('a', dir);
  await assert.rejects(m.load('a', dir), /adapter "a" is already loaded; unload it first/);
  await m.load('b', dir);
  await assert.rejects(m.load('c', dir), /2 adapters are already resident \(the limit\); unload one first/);
  assert.throws(() => m.get('zz'), /adapter "zz" is not loaded \(loaded: a, b\)/);
  const bad = writeAdapterDir(t, 'adapter_model.safetensors', peft(Q, [4, 64]), peftConfig());
  m.unload('b');
  await assert.rejects(m.load('b', bad), /takes 128 inputs/);
  assert.deepEqual(
    m.list().map((x) => x.name),
    ['a'],
    'a failed load leaves nothing behind',
  );
});
