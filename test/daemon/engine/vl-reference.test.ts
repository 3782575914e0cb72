// qwen3_vl_moe in the native engine against the float64 reference: text only, then a prefill with
// image embeddings spliced at given rows, DeepStack features after layer 0 and 3-D (time, height,
// width) RoPE positions, then decode continuing after the image's largest position.
// Bound as in reference-agreement.test.ts (float32 engine vs float64 reference: 1e-5 of the logit scale).
import { test } from 'node:test';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { referenceForward, type RefTokenInput } from '../../../daemon/tools/reference/forward.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { logitsDiff } from './logits-compare.js';

test('qwen3_vl_moe: text, spliced image rows with DeepStack and M-RoPE positions, and decode match the reference', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 5 });
  const model = await NativeModel.load(dir, { threads: 2, activationBits: 24 });
  t.after(() => model.dispose());
  assert.equal(model.summary.arch, 'qwen3_vl_moe');
  const H = model.summary.hiddenSize;
  const prompt = [11, 40, 612, 612, 612, 612, 90, 91];
  const rows = [2, 3, 4, 5];
  const embeds = Float32Array.from({ length: rows.length * H }, (_, i) => Math.sin(i * 0.37));
  const deepstack = Float32Array.from({ length: rows.length * H }, (_, i) => 0.3 * Math.cos(i * 0.11));
  // A 2×2 merged grid at base 2: T = 2, H = 2 + row, W = 2 + col; text resumes at max + 1 = 4.
  const T = [0, 1, 2, 2, 2, 2, 4, 5];
  const Hp = [0, 1, 2, 2, 3, 3, 4, 5];
  const W = [0, 1, 2, 3, 2, 3, 4, 5];
  const session = await model.createSession();
  const logits = await session.prefill(prompt, {
    embeds,
    rows: Int32Array.from(rows),
    deepstack,
    positions: Int32Array.from([...T, ...Hp, ...W]),
  });
  const ref = referenceForward(dir);
  t.after(() => ref.close());
  const mm: RefTokenInput[] = prompt.map((_, i) => {
    const r = rows.indexOf(i);
    const part = (a: Float32Array) => Float64Array.from(a.subarray(r * H, (r + 1) * H));
    return { pos3: [T[i], Hp[i], W[i]], ...(r >= 0 ? { embed: part(embeds), deepstack: [part(deepstack)] } : {}) };
  });
  const want = ref.prefill(prompt, mm);
  const close = (got: Float32Array, w: Float64Array, what: string) => {
    const d = logitsDiff(got, w);
    assert.ok(d.worst <= d.bound, `${what}: |Δ| ${d.worst} at ${d.at} > ${d.bound}`);
  };
  close(logits, want, 'prefill');
  for (const token of [7, 300, 12]) {
    const got = await session.decode(token);
    const w = ref.decode(token);
    close(got, w, `decode ${token}`);
  }
  // The image changes the logits (same tokens, text embeddings instead).
  const plain = await (await model.createSession()).prefill(prompt);
  assert.ok(logitsDiff(plain, want).worst > 1e-2);
  // Truncating into the image and re-prefilling text continues from the kept rows' positions.
  await session.truncate(6);
  ref.truncate(6);
  const again = await session.prefill([50, 51]);
  const w2 = ref.prefill([50, 51]);
  close(again, w2, 'after truncate');
});

test('multimodal prefill rejects bad rows, sizes and positions with a clear message', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 1 });
  const model = await NativeModel.load(dir, { threads: 1 });
  t.after(() => model.dispose());
  const H = model.summary.hiddenSize;
  const s = await model.createSession();
  const embeds = new Float32Array(2 * H);
  await assert.rejects(s.prefill([1, 2, 3], { embeds, rows: Int32Array.of(2, 1) }), /ascending token indices/);
  await assert.rejects(s.prefill([1, 2, 3], { embeds, rows: Int32Array.of(0) }), /rows.length × hidden_size/);
  await assert.rejects(
    s.prefill([1, 2, 3], { embeds, rows: Int32Array.of(0, 1), positions: Int32Array.of(1, 2) }),
    /3 × 3 positions/,
  );
  assert.equal(s.info().nPast, 0);
});

test('qwen3_vl_moe config errors name text_config and rope_scaling', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 1 });
  const path = join(dir, 'config.json');
  const config = JSON.parse(readFileSync(path, 'utf8'));
  const load = async (edit: (c: any) => void, message: RegExp) => {
    const c = structuredClone(config);
    edit(c);
    writeFileSync(path, JSON.stringify(c));
    await assert.rejects(NativeModel.load(dir, { threads: 1 }), message);
  };
  await load((c) => delete c.text_config, /config\.json: field text_config is missing \(qwen3_vl_moe needs it\)/);
  await load(
    (c) => (c.text_config.rope_scaling = null),
    /config\.json text_config: field rope_scaling must give mrope_section/,
  );
  await load(
    (c) => (c.text_config.rope_scaling.mrope_section = [8, 5, 5]),
    /text_config rope_scaling: field mrope_section must sum to the rotary dims \/ 2 = 16 frequency slots/,
  );
  await load((c) => (c.text_config.rope_scaling.mrope_section = [16]), /mrope_section must list 3 sections/);
});

test("qwen3_vl_moe reads its M-RoPE sections and theta from transformers 5's rope_parameters too", async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 3 });
  const prompt = [11, 40, 612, 612, 612, 612, 90, 91];
  const positions = Int32Array.from([0, 1, 2, 2, 2, 2, 4, 5, 0, 1, 2, 2, 3, 3, 4, 5, 0, 1, 2, 3, 2, 3, 4, 5]);
  const run = async () => {
    const model = await NativeModel.load(dir, { threads: 1, activationBits: 24 });
    const H = model.summary.hiddenSize;
    const embeds = Float32Array.from({ length: 4 * H }, (_, i) => Math.cos(i * 0.21));
    const logits = await (await model.createSession()).prefill(prompt, {
      embeds,
      rows: Int32Array.of(2, 3, 4, 5),
      positions,
    });
    model.dispose();
    return logits;
  };
  const before = await run();
  const path = join(dir, 'config.json');
  const config = JSON.parse(readFileSync(path, 'utf8'));
  const text = config.text_config;
  text.rope_parameters = { ...text.rope_scaling, rope_theta: text.rope_theta };
  delete text.rope_scaling;
  delete text.rope_theta;
  writeFileSync(path, JSON.stringify(config));
  assert.deepEqual(await run(), before);
  const ref = referenceForward(dir);
  t.after(() => ref.close());
  assert.deepEqual(ref.config.mrope?.section, text.rope_parameters.mrope_section);
});
