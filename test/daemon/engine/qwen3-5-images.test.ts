// qwen3_5_moe (a hybrid of Gated DeltaNet and gated attention) with images: image rows and their
// interleaved multimodal RoPE positions against the float64 reference, and truncations into or
// past the image, whose replay from a snapshot must run the image rows again (not their tokens).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { PrefixSession } from '../../../daemon/engine/prefix-cache.js';
import { referenceForward, type RefTokenInput } from '../../../daemon/tools/reference/forward.js';
import { type PromptImages, sliceImages } from '../../../daemon/vision/splice.js';
import { editJson, shardOf, synthTemp } from '../../native/helpers/model-files.js';
import { assertClose, logitsDiff } from './logits-compare.js';

const PAD = 612;
// Text, a 2×3 merged grid at base 2 (T = 2, H = 2 + row, W = 2 + col), text again from max + 1 = 5.
const PROMPT = [11, 40, PAD, PAD, PAD, PAD, PAD, PAD, 90, 91, 92];
const ROWS = [2, 3, 4, 5, 6, 7];
const T = [0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7];
const HP = [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7];
const W = [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7];
const NEXT = [7, 300, 12];

function promptImages(hidden: number): PromptImages {
  return {
    keys: PROMPT.map((t, i) => (ROWS.includes(i) ? `img:${i}` : t)),
    rows: Int32Array.from(ROWS),
    embeds: Float32Array.from({ length: ROWS.length * hidden }, (_, i) => Math.sin(i * 0.37)),
    deepstack: [],
    positions: Int32Array.from([...T, ...HP, ...W]),
    hidden,
  };
}

test('qwen3_5_moe: image rows with interleaved M-RoPE positions and decode match the float64 reference', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 5 });
  const model = await NativeModel.load(dir, { threads: 2, activationBits: 24, backend: 'cpu-ref' });
  t.after(() => model.dispose());
  const H = model.summary.hiddenSize;
  const images = promptImages(H);
  const session = await model.createSession();
  const logits = await session.prefill(PROMPT, sliceImages(images, 0, PROMPT.length));
  const ref = referenceForward(dir);
  t.after(() => ref.close());
  const mm: RefTokenInput[] = PROMPT.map((_, i) => {
    const r = ROWS.indexOf(i);
    return {
      pos3: [T[i]!, HP[i]!, W[i]!],
      ...(r >= 0 ? { embed: Float64Array.from(images.embeds.subarray(r * H, (r + 1) * H)) } : {}),
    };
  });
  assertClose(logits, ref.prefill(PROMPT, mm), 'prefill');
  for (const token of NEXT) assertClose(await session.decode(token), ref.decode(token), `decode ${token}`);
  // The image and its positions both reach the logits.
  const plain = await (await model.createSession()).prefill(PROMPT);
  assert.ok(logitsDiff(plain, logits).worst > 1e-2, 'image rows change the logits');
  const flat = sliceImages(
    { ...images, positions: Int32Array.from([0, 1, 2].flatMap(() => PROMPT.map((_, i) => i))) },
    0,
    PROMPT.length,
  );
  const linear = await (await model.createSession()).prefill(PROMPT, flat);
  assert.ok(logitsDiff(linear, logits).worst > 1e-4, '3-D positions change the logits');
});

test('qwen3_5_moe: truncating into or past an image replays its rows, in chunks, and continues exactly', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 6 });
  // Chunks of 4 tokens: the replay from the zero state splits the image across chunks.
  const model = await NativeModel.load(dir, { threads: 2, activationBits: 24, prefillChunk: 4 });
  t.after(() => model.dispose());
  const images = promptImages(model.summary.hiddenSize);
  const s = await model.createSession();
  const straight = [await s.prefill(PROMPT, sliceImages(images, 0, PROMPT.length))];
  for (const tok of NEXT) straight.push(await s.decode(tok));
  // Deepest first: the first replay runs on what the first prefill alone kept.
  for (let p = PROMPT.length - 1; p >= 1; p--) {
    await s.truncate(p);
    assert.equal(s.length, p);
    const got = [await s.prefill(PROMPT.slice(p), sliceImages(images, p, PROMPT.length))];
    for (const tok of NEXT) got.push(await s.decode(tok));
    got.forEach((l, i) => assertClose(l, straight[i]!, `truncate(${p}) step ${i}`));
  }
  // Past the image, into decoded text: the replay runs the image rows and the later text positions.
  await s.truncate(PROMPT.length + 1);
  assertClose(await s.decode(NEXT[1]!), straight[2]!, 'truncate into decoded text');
  s.dispose();
});

// A replay that fails (a weight file shrank) leaves the session at a shorter prefix; what it kept
// of the image past that prefix must not outlive the failure into the next replay.
test('qwen3_5_moe: after a replay into the image fails, the image appended again replays exactly', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 6 });
  const model = await NativeModel.load(dir, { threads: 2, activationBits: 24, prefillChunk: 4 });
  t.after(() => model.dispose());
  const images = promptImages(model.summary.hiddenSize);
  const s = await model.createSession();
  const straight = await s.prefill(PROMPT, sliceImages(images, 0, PROMPT.length));
  const shard = shardOf(dir, 'language_model.model.embed_tokens.weight');
  const bytes = readFileSync(shard);
  truncateSync(shard, Math.floor(bytes.length / 2));
  await assert.rejects(s.truncate(6), /shrank from \d+ to \d+ bytes/);
  writeFileSync(shard, bytes);
  const p = s.length;
  assert.ok(p < 6, `the failed replay left ${p} tokens`);
  assertClose(await s.prefill(PROMPT.slice(p), sliceImages(images, p, PROMPT.length)), straight, 'appended again');
  for (const q of [5, 3]) {
    await s.truncate(q);
    assertClose(await s.prefill(PROMPT.slice(q), sliceImages(images, q, PROMPT.length)), straight, `truncate(${q})`);
  }
  s.dispose();
});

test('qwen3_5_moe behind the prefix cache: a follow-up about the cached image replays only the text after it', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 6 });
  const model = await NativeModel.load(dir, { threads: 2, activationBits: 24 });
  t.after(() => model.dispose());
  const H = model.summary.hiddenSize;
  // The same image (rows 2..7), then other text from token 9 on; text positions continue at i − 3.
  const FOLLOW = [...PROMPT.slice(0, 9), 55, 56];
  const imagesOf = (prompt: number[]): PromptImages => {
    const base = promptImages(H);
    const pos = (a: number[]) => prompt.map((_, i) => (i < 8 ? a[i]! : i - 3));
    return {
      ...base,
      keys: prompt.map((tok, i) => (ROWS.includes(i) ? `img:${i}` : tok)),
      positions: Int32Array.from([...pos(T), ...pos(HP), ...pos(W)]),
    };
  };
  const engine = await model.createSession();
  const cache = new PrefixSession(engine);
  await cache.start(PROMPT, undefined, null, imagesOf(PROMPT));
  await cache.decode(NEXT[0]!);
  const before = engine.info().tokens;
  const r = await cache.start(FOLLOW, undefined, null, imagesOf(FOLLOW));
  assert.deepEqual([r?.reused, r?.prefilled], [9, 2]);
  // The first prefill ended after the image (a snapshot at 8): one token replayed, two prefilled.
  assert.equal(engine.info().tokens - before, 3, 'tokens run for the follow-up');
  const fresh = await (await model.createSession()).prefill(FOLLOW, sliceImages(imagesOf(FOLLOW), 0, FOLLOW.length));
  assertClose(r!.logits, fresh, 'follow-up vs a fresh session');
});

test('qwen3_5_moe: DeepStack features are refused, and the M-RoPE sections are checked', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_5_moe', seed: 1 });
  const model = await NativeModel.load(dir, { threads: 1 });
  const H = model.summary.hiddenSize;
  const s = await model.createSession();
  const mm = { embeds: new Float32Array(H), rows: Int32Array.of(1), deepstack: new Float32Array(H) };
  await assert.rejects(s.prefill([1, 2, 3], mm), /takes image rows without DeepStack features/);
  assert.equal(s.info().nPast, 0);
  s.dispose();
  model.dispose();
  editJson(join(dir, 'config.json'), (c) => {
    (c.text_config as { rope_parameters: { mrope_section: number[] } }).rope_parameters.mrope_section = [2, 2, 2];
  });
  await assert.rejects(
    NativeModel.load(dir, { threads: 1 }),
    /text_config rope_parameters: field mrope_section must sum to the rotary dims \/ 2 = \d+ frequency slots/,
  );
});
