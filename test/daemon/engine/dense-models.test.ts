// The dense archs (qwen3, llama) on tiny synthetic models: a prompt prefilled whole equals the
// same prompt prefilled in two parts or finished by decode steps, and the engine after
// truncations matches the float64 reference. Greedy agreement (every kernel set) is in
// reference-agreement.test.ts. Llama 3.x's rope_scaling (llama3) and llama's attention / MLP
// biases against the reference too.
import { type TestContext, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type TensorSource, writeSafetensors } from '../../../daemon/models/safetensors-writer.js';
import { plainTensor } from '../../../daemon/tools/synth-weights.js';
import { EngineError, NativeModel } from '../../../daemon/engine/native-model.js';
import { referenceForward } from '../../../daemon/tools/reference/forward.js';
import { editJson, synthTemp } from '../../native/helpers/model-files.js';
import { assertClose, assertTruncations, logitsDiff } from './logits-compare.js';

for (const arch of ['qwen3', 'llama'] as const) {
  test(`${arch}: prefill = prefill + prefill = prefill + decode steps, and = the reference after truncations`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 6 });
    const model = await NativeModel.load(dir, { threads: 2, activationBits: 24 });
    t.after(() => model.dispose());
    assert.equal(model.summary.arch, arch);
    const prompt = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38];
    const s = await model.createSession();
    const whole = await s.prefill(prompt);
    await s.truncate(0);
    await s.prefill(prompt.slice(0, 6));
    assertClose(await s.prefill(prompt.slice(6)), whole, 'prefill 6 + prefill 4');
    await s.truncate(0);
    await s.prefill(prompt.slice(0, 7));
    let last: Float32Array | undefined;
    for (const tok of prompt.slice(7)) last = await s.decode(tok);
    assertClose(last!, whole, 'prefill 7 + 3 decode steps');

    const ref = referenceForward(dir);
    t.after(() => ref.close());
    await s.truncate(0);
    assertClose(await s.prefill(prompt), ref.prefill(prompt), 'prefill vs reference');
    await assertTruncations(s, ref, [
      [4, [26, 53]],
      [6, [58]],
    ] as const);
    s.dispose();
  });
}

/** Prefill `prompt` on `dir` as it is, apply `edit` to its config.json, then: the engine's prefill
 *  and one decode step equal the float64 reference's, and the edit moved the logits. */
async function editedMatchesReference(
  t: TestContext,
  dir: string,
  prompt: number[],
  edit: (j: Record<string, unknown>) => void,
  what: string,
): Promise<void> {
  const before = await NativeModel.load(dir, { threads: 1, backend: 'cpu-ref' });
  const unedited = await (await before.createSession()).prefill(prompt);
  before.dispose();
  editJson(join(dir, 'config.json'), edit);
  const model = await NativeModel.load(dir, { threads: 1, backend: 'cpu-ref' });
  t.after(() => model.dispose());
  const ref = referenceForward(dir);
  t.after(() => ref.close());
  const s = await model.createSession();
  const got = await s.prefill(prompt);
  assertClose(got, ref.prefill(prompt), `${what}: prefill vs reference`);
  assertClose(await s.decode(7), ref.decode(7), `${what}: decode vs reference`);
  assert.ok(logitsDiff(got, unedited).worst > 1e-2, `${what} changed the logits`);
  s.dispose();
}

test('llama with rope_scaling llama3 (Llama 3.1 / 3.2) matches the float64 reference; other types are refused', async (t) => {
  const dir = synthTemp(t, { arch: 'llama', seed: 6 });
  const prompt = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26];
  // Original context 16 (wavelengths 4..16 blend): with head_dim 32 the first pairs blend and the
  // rest are divided by the factor, all within the prompt's positions.
  const scaling = {
    rope_type: 'llama3',
    factor: 8,
    low_freq_factor: 1,
    high_freq_factor: 4,
    original_max_position_embeddings: 16,
  };
  await editedMatchesReference(t, dir, prompt, (j) => (j.rope_scaling = scaling), 'llama3 scaling');

  editJson(join(dir, 'config.json'), (j) => (j.rope_scaling = { rope_type: 'dynamic', factor: 4 }));
  await assert.rejects(NativeModel.load(dir), (e: Error) => {
    assert.ok(e instanceof EngineError, String(e));
    assert.match(e.message, /rope_scaling: field rope_type is not supported: .*"yarn".*, got "dynamic"/);
    return true;
  });
});

// Qwen3's documented long-context setting is YaRN (factor 4 over 32768 positions); here an original
// context of 8 so that the ramp's pairs (2..4 of 16) and the attention factor 1 + 0.1·ln 4 both
// act within the prompt. The reference scales cos and sin by the factor (Hugging Face); the engine
// scales the attention logits by its square: the same for RoPE over the whole head.
for (const arch of ['qwen3', 'qwen3_moe', 'llama'] as const) {
  test(`${arch} with rope_scaling yarn matches the float64 reference`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 6 });
    const prompt = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26];
    const yarn = { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 8 };
    await editedMatchesReference(t, dir, prompt, (j) => (j.rope_scaling = yarn), 'yarn scaling');
  });
}

test('rope_scaling on an architecture that does not read it is refused by name', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 6 });
  editJson(join(dir, 'config.json'), (j) => (j.rope_scaling = { rope_type: 'yarn', factor: 4 }));
  await assert.rejects(NativeModel.load(dir), /field rope_scaling is not supported for glm4_moe \(only plain RoPE\)/);
});

test('llama with attention_bias and mlp_bias (q/k/v/o and gate/up/down biases) matches the float64 reference', async (t) => {
  const dir = synthTemp(t, { arch: 'llama', seed: 6 });
  // The biases go into one more shard listed in the index, as a converter would write them.
  const tensors: TensorSource[] = [];
  for (let l = 0; l < 4; l++) {
    const p = `model.layers.${l}`;
    for (const [name, n] of [
      ['self_attn.q_proj', 128],
      ['self_attn.k_proj', 64],
      ['self_attn.v_proj', 64],
      ['self_attn.o_proj', 128],
      ['mlp.gate_proj', 256],
      ['mlp.up_proj', 256],
      ['mlp.down_proj', 128],
    ] as const)
      tensors.push(plainTensor(9, `${p}.${name}.bias`, 'BF16', [n], 0, 0.3));
  }
  writeSafetensors(join(dir, 'biases.safetensors'), tensors, { format: 'mlx' });
  editJson(join(dir, 'model.safetensors.index.json'), (j) => {
    for (const x of tensors) (j.weight_map as Record<string, string>)[x.name] = 'biases.safetensors';
  });
  const on = (j: Record<string, unknown>) => Object.assign(j, { attention_bias: true, mlp_bias: true });
  await editedMatchesReference(t, dir, [3, 14, 15, 92, 65, 35, 89, 79], on, 'biases');
});
