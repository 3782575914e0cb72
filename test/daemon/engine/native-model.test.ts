// The engine through its TS classes on synthetic tiny models: prefill/decode/truncate agree
// with each other, results do not depend on thread count or sharding, the routing width
// override works, and every misuse is a rejected promise with a clear message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { EngineError, NativeModel, argmax } from '../../../daemon/engine/native-model.js';
import { PrefixSession } from '../../../daemon/engine/prefix-cache.js';
import { loadNative } from '../../../daemon/native/binding.js';
import type { Arch } from '../../../daemon/tools/synth-shapes.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { populateSupported } from '../../helpers/populate.js';

const ARCHS: Arch[] = ['qwen3_moe', 'glm4_moe'];
const PROMPT = [1, 5, 9, 20, 33, 40, 2, 7, 64, 11, 300, 599];
const VOCAB = 640; // tiny

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const maxAbs = (a: Float32Array) => a.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

// Decode's integer kernels quantise activations; prefill's float path does not. Paths that mix
// the two agree within 1e-5 of the logits' scale with activationBits 24 and within 5e-4 with the
// default 16 (see reference-agreement.test.ts for both bounds).
const PRECISIONS = [
  [24, 1e-5],
  [16, 5e-4],
] as const;

for (const arch of ARCHS) {
  test(`${arch}: one prefill equals prefill + token-by-token decode`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 1 });
    for (const [activationBits, rel] of PRECISIONS) {
      const model = await NativeModel.load(dir, { activationBits });
      t.after(() => model.dispose());
      const whole = await model.createSession();
      const full = await whole.prefill(PROMPT);
      const steps = await model.createSession();
      let last = await steps.prefill(PROMPT.slice(0, 3));
      for (const tok of PROMPT.slice(3)) last = await steps.decode(tok);
      assert.ok(
        maxAbsDiff(full, last) <= rel * maxAbs(full),
        `${arch} ${activationBits} bits: diff ${maxAbsDiff(full, last)}`,
      );
      assert.equal(whole.info().nPast, PROMPT.length);
      assert.equal(steps.info().nPast, PROMPT.length);
      assert.ok(Number.isFinite(maxAbs(full)) && maxAbs(full) > 0.1, 'logits are finite and not degenerate');
    }
  });

  test(`${arch}: truncate reuses a prefix and reproduces the same logits`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 3 });
    for (const [activationBits, rel] of PRECISIONS) {
      const model = await NativeModel.load(dir, { activationBits });
      t.after(() => model.dispose());
      const s = await model.createSession({ contextLength: 64 });
      await s.prefill(PROMPT.slice(0, 6));
      const first = await s.prefill(PROMPT.slice(6));
      await s.truncate(6);
      assert.equal(s.info().nPast, 6);
      assert.deepEqual(await s.prefill(PROMPT.slice(6)), first);
      await s.truncate(2);
      const other = await s.decode(50);
      const fresh = await model.createSession();
      await fresh.prefill(PROMPT.slice(0, 2));
      // The cached rows 0-1 came from a 6-token prefill here and a 2-token one there: the fast
      // kernels round differently for different batch shapes (float32 level, never by thread count).
      const want = await fresh.decode(50);
      assert.ok(
        maxAbsDiff(other, want) <= rel * maxAbs(want),
        `${activationBits} bits: diff ${maxAbsDiff(other, want)}`,
      );
      await assert.rejects(
        s.truncate(99),
        (e: Error) => e instanceof EngineError && /outside the session's 3 cached tokens/.test(e.message),
      );
    }
  });

  test(`${arch}: thread count and sharding do not change the logits`, async (t) => {
    const single = await NativeModel.load(synthTemp(t, { arch, seed: 5, maxShardBytes: 2 ** 30 }), { threads: 1 });
    const sharded = await NativeModel.load(synthTemp(t, { arch, seed: 5, maxShardBytes: 256 * 1024 }), { threads: 3 });
    t.after(() => {
      single.dispose();
      sharded.dispose();
    });
    assert.equal(single.summary.files, 1);
    assert.ok(sharded.summary.files > 3, `${sharded.summary.files} shards`);
    assert.equal(sharded.summary.threads, 3);
    const a = await (await single.createSession()).greedy(PROMPT, 6);
    const b = await (await sharded.createSession()).greedy(PROMPT, 6);
    assert.deepEqual(b.tokens, a.tokens);
    for (let i = 0; i < a.logits.length; i++) assert.deepEqual(b.logits[i], a.logits[i], `step ${i}`);
  });

  test(`${arch}: routing width override changes routing and is bounded`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 7 });
    const base = await NativeModel.load(dir);
    const wide = await NativeModel.load(dir, { topK: 6 });
    t.after(() => {
      base.dispose();
      wide.dispose();
    });
    assert.equal(base.summary.topK, 4);
    assert.equal(wide.summary.topK, 6);
    assert.equal(wide.summary.configTopK, 4);
    const lb = await (await base.createSession()).prefill(PROMPT);
    const sw = await wide.createSession();
    const lw = await sw.prefill(PROMPT);
    assert.ok(maxAbsDiff(lb, lw) > 1e-3, 'six experts per token give other logits than four');
    // Decode computes exactly K experts per MoE layer.
    const before = sw.info().expertsComputed;
    await sw.decode(3);
    assert.equal(sw.info().expertsComputed - before, 6 * wide.summary.moeLayers);
    const max = arch === 'glm4_moe' ? 8 : 16; // glm tiny: topk_group 2 of 4 groups of 4 experts
    // The refused option comes named, with its rule apart, for a caller to name its own flag.
    const detail = `must be between 1 and ${max} for this model (the experts a token can reach), got ${max + 1}`;
    await assert.rejects(NativeModel.load(dir, { topK: max + 1 }), {
      name: 'EngineError',
      message: `topK (routing width): ${detail}`,
      option: 'topK',
      detail,
    });
  });
}

// prefillChunk only changes how a prompt is cut into forward steps: a 12-token prompt in chunks
// of 5 (5 + 5 + 2) gives the logits of one chunk within the batching tolerance above.
test('prefillChunk cuts a prompt into forward steps without changing its logits', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 11 });
  const whole = await NativeModel.load(dir, { activationBits: 24 });
  const chunked = await NativeModel.load(dir, { activationBits: 24, prefillChunk: 5 });
  t.after(() => (whole.dispose(), chunked.dispose()));
  assert.equal(whole.summary.prefillChunk, 128);
  assert.equal(chunked.summary.prefillChunk, 5);
  const a = await (await whole.createSession()).prefill(PROMPT);
  const b = await (await chunked.createSession()).prefill(PROMPT);
  assert.ok(maxAbsDiff(a, b) <= 1e-5 * maxAbs(a), `diff ${maxAbsDiff(a, b)}`);
  await assert.rejects(NativeModel.load(dir, { prefillChunk: 0 }), /prefillChunk.*0/);
});

test('a native session serves prompt-prefix reuse (PrefixSession)', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 9 });
  for (const [activationBits, rel] of PRECISIONS) {
    const model = await NativeModel.load(dir, { activationBits });
    t.after(() => model.dispose());
    const reuse = new PrefixSession(await model.createSession());
    await reuse.start(PROMPT.slice(0, 8));
    await reuse.decode(17);
    const turn2 = [...PROMPT.slice(0, 8), 17, 4, 5];
    const r = await reuse.start(turn2);
    assert.equal(r?.reused, 9);
    assert.equal(r?.prefilled, 2);
    assert.equal(reuse.source.length, 11);
    const cold = await (await model.createSession()).prefill(turn2);
    assert.ok(
      maxAbsDiff(r!.logits, cold) <= rel * maxAbs(cold),
      `${activationBits} bits: diff ${maxAbsDiff(r!.logits, cold)}`,
    );
    const branch = await reuse.start([...PROMPT.slice(0, 4), 99]);
    assert.equal(branch?.reused, 4, 'a diverging prompt truncates to the common prefix');
    const coldBranch = await (await model.createSession()).prefill([...PROMPT.slice(0, 4), 99]);
    assert.ok(maxAbsDiff(branch!.logits, coldBranch) <= rel * maxAbs(cold));
  }
});

test('active bytes per decoded token are counted from the weights actually read', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', seed: 2 }));
  t.after(() => model.dispose());
  const s = await model.createSession();
  await s.prefill(PROMPT);
  const before = s.info().weightBytes;
  await s.decode(4);
  const perToken = s.info().weightBytes - before;
  const { matrixBytes, expertBytes, moeLayers, topK, experts } = model.summary;
  // Everything except the experts not routed to, and all but one embedding row.
  const unusedExperts = (experts - topK) * expertBytes * moeLayers;
  assert.ok(perToken < matrixBytes - unusedExperts, `${perToken} < ${matrixBytes - unusedExperts}`);
  assert.ok(perToken > topK * expertBytes * moeLayers, `${perToken} counts the routed experts`);
});

test('tied embeddings serve as the output projection', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', tieWordEmbeddings: true }));
  t.after(() => model.dispose());
  assert.equal(model.summary.tieEmbeddings, true);
  const logits = await (await model.createSession()).prefill(PROMPT);
  assert.equal(logits.length, VOCAB);
  assert.ok(argmax(logits) >= 0);
});

test('misuse is a rejected promise with a message naming the problem', async (t) => {
  const model = await NativeModel.load(synthTemp(t, { arch: 'glm4_moe' }), { contextLength: 12 });
  const s = await model.createSession();
  await s.prefill([1, 2, 3]);
  await assert.rejects(s.decode(VOCAB), /token id 640 at index 0 is outside the vocabulary \[0, 640\)/);
  await assert.rejects(s.prefill([4, -1]), /token id -1 at index 1/);
  assert.equal(s.info().nPast, 3, 'a rejected call leaves the cache unchanged');
  await assert.rejects(s.prefill([]), /no tokens given/);
  await assert.rejects(s.decode(1.5), /decode: token must be an integer between 0 and 2147483647, got 1.5/);
  await assert.rejects(
    s.prefill(Array.from({ length: 10 }, () => 4)),
    /context is full: 3 cached \+ 10 new tokens exceed the session's contextLength 12/,
  );
  const pending = s.decode(5);
  await assert.rejects(s.decode(6), /the session is busy with another call; await it before the next/);
  await pending;
  assert.equal(s.info().nPast, 4);

  const addon = loadNative();
  await assert.rejects(
    addon.prefill(s as never, new Int32Array([1])),
    /prefill: first argument is not a session handle/,
  );
  await assert.rejects(addon.loadModel(42 as never), /loadModel: dir must be a string/);
  await assert.rejects(
    NativeModel.load('/x', { threads: 0 }),
    /loadModel: option threads must be an integer between 1 and 256, got 0/,
  );
  await assert.rejects(
    NativeModel.load('/x', { contextLength: 'long' as never }),
    /option contextLength must be an integer .* got a string/,
  );
  await assert.rejects(
    NativeModel.load('/x', { backend: 'cuda-9' }),
    /backend "cuda-9" is not compiled into this build \(available: auto, cpu-ref[^)]*\)/,
  );
  await assert.rejects(
    NativeModel.load('/x', { kvCache: 'f8' as never }),
    /loadModel: kvCache must be "f32" or "f16", got "f8"/,
  );
  await assert.rejects(
    NativeModel.load('/x', { activationBits: 21 as never }),
    /loadModel: activationBits must be 8, 16 or 24, got 21/,
  );
  assert.equal(model.summary.activationBits, 16);
  await assert.rejects(
    model.createSession({ contextLength: 0 }),
    /createSession: option contextLength must be an integer between 1/,
  );

  s.dispose();
  await assert.rejects(s.decode(1), /decode: the session was disposed/);
  const kept = await model.createSession();
  model.dispose();
  await assert.rejects(model.createSession(), /the model was disposed; load it again/);
  assert.equal((await kept.prefill([1, 2])).length, VOCAB, 'a session keeps its model alive after dispose');
  kept.dispose();
});

/** Resident and mapped bytes of this process's mappings of the safetensors files in `dir` (/proc/self/smaps). */
function mappedPages(dir: string): { rss: number; size: number } {
  let rss = 0;
  let size = 0;
  let ours = false;
  for (const line of readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) ours = head[1]!.startsWith(`${dir}/`) && head[1]!.endsWith('.safetensors');
    else if (ours && line.startsWith('Rss:')) rss += Number(line.split(/\s+/)[1]) * 1024;
    else if (ours && line.startsWith('Size:')) size += Number(line.split(/\s+/)[1]) * 1024;
  }
  return { rss, size };
}

// prefault maps every page of the weight files in the background from load on
// (MADV_POPULATE_READ, Linux 5.14+), so requests take no page faults once it is done; without
// it the routed experts stay unmapped until used.
test('prefault maps every weight page into the process in the background', {
  skip: process.platform !== 'linux',
}, async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
  const plain = await NativeModel.load(dir, {});
  const lazy = mappedPages(dir);
  assert.equal(plain.summary.prefault, false);
  assert.equal(plain.prefaultStatus(), null);
  plain.dispose();
  assert.ok(lazy.size > 0 && lazy.rss < lazy.size, `without prefault ${lazy.rss} of ${lazy.size} bytes mapped`);
  const model = await NativeModel.load(dir, { prefault: true });
  t.after(() => model.dispose());
  assert.equal(model.summary.prefault, true);
  const st = await model.prefaultDone();
  assert.ok(st && st.totalBytes > 0 && st.doneBytes === st.totalBytes, JSON.stringify(st));
  // Then every routed expert's first-use check ran on the same thread (every layer is MoE).
  assert.equal(st.expertsChecked, model.summary.layers * model.summary.experts, JSON.stringify(st));
  if (populateSupported()) {
    assert.equal(st.state, 'mapped');
    const eager = mappedPages(dir);
    assert.equal(eager.rss, eager.size, `with prefault ${eager.rss} of ${eager.size} bytes mapped`);
  } else {
    assert.equal(st.state, 'advised');
  }
  // Either way the model computes as without it; a model disposed while mapping stops it.
  const other = await NativeModel.load(dir, {});
  t.after(() => other.dispose());
  const a = await (await model.createSession()).prefill(PROMPT);
  assert.deepEqual(a, await (await other.createSession()).prefill(PROMPT));
  const brief = await NativeModel.load(dir, { prefault: true });
  brief.dispose();
  assert.equal(brief.prefaultStatus(), null);
});
