// Every expert executor path (exact, staged, hot, whole-layer) for prefill and decode, in both
// I/O modes, against the float64 reference forward on tiny models of both architectures: same
// greedy tokens, logits within the reference tolerance, and bit-identical logits across paths
// (they all feed the same gathered matmul with the same bytes). The counters say each path ran.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { loadNative } from '../../../daemon/native/binding.js';
import type { ExpertPath, IoMode } from '../../../daemon/native/binding.js';
import { referenceForward, referenceGreedy } from '../../../daemon/tools/reference/forward.js';
import type { Arch } from '../../../daemon/tools/synth-shapes.js';
import { Prng } from '../../../robot/common/prng.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { logitsDiff } from './logits-compare.js';

const STEPS = 10;
// 40 prompt tokens: two prefill chunks (32 + 8), so multi-chunk prefill runs every path too.
const PROMPT_LEN = 40;
const CASES: [ExpertPath, ExpertPath, IoMode][] = [
  ['exact', 'exact', 'page-cache'],
  ['whole-layer', 'staged', 'page-cache'],
  ['whole-layer', 'staged', 'direct'],
  ['staged', 'hot', 'direct'],
  ['hot', 'whole-layer', 'page-cache'],
  ['whole-layer', 'hot', 'direct'],
  ['exact', 'staged', 'direct'],
];

for (const arch of ['qwen3_moe', 'glm4_moe'] as Arch[]) {
  test(`${arch}: every expert path gives the reference's tokens and logits, identical across paths`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 21 });
    const rng = new Prng(77);
    const prompt = Array.from({ length: PROMPT_LEN }, () => rng.int(640));
    const ref = referenceForward(dir);
    const want = referenceGreedy(ref, prompt, STEPS);
    ref.close();
    let first: Float32Array[] | undefined;
    for (const [prefillPath, decodePath, ioMode] of CASES) {
      const name = `${arch} prefill ${prefillPath} / decode ${decodePath} / ${ioMode}`;
      // slots 2 < K = 4 makes staged prefill and decode fill their slots in waves; 24-bit
      // activations hold the reference's 1e-5 bound (the default 16 bits: reference-agreement).
      const model = await NativeModel.load(dir, {
        threads: 2,
        activationBits: 24,
        prefillPath,
        decodePath,
        ioMode,
        slots: decodePath === 'staged' && ioMode === 'direct' ? 2 : undefined,
        wholeLayerShare: 0, // whole-layer reads every chunk, however few experts it routes to
      });
      const session = await model.createSession();
      const got = await session.greedy(prompt, STEPS);
      const st = session.info().stream;
      model.dispose();
      assert.deepEqual(got.tokens, want.tokens, `${name}: greedy tokens`);
      for (let s = 0; s < STEPS; s++) {
        const d = logitsDiff(got.logits[s]!, want.logits[s]!);
        assert.ok(d.worst <= d.bound, `${name} step ${s}: token ${d.at} |Δ| ${d.worst} > ${d.bound}`);
        if (first) assert.deepEqual(got.logits[s], first[s], `${name} step ${s}: logits differ from the exact path`);
      }
      first ??= got.logits;
      assert.equal(st.drops, 0, `${name}: no routed row hits the zero slot`);
      const paths = [prefillPath, decodePath];
      if (paths.includes('staged'))
        assert.ok(st.loads > 0 && st.slotHits + st.slotMisses > 0, `${name}: staged loads ${JSON.stringify(st)}`);
      if (paths.includes('whole-layer'))
        assert.ok(st.layerReads > 0, `${name}: whole-layer reads ${JSON.stringify(st)}`);
      if (paths.includes('hot'))
        assert.ok(st.slotHits + st.fallbacks > 0, `${name}: hot lookups ${JSON.stringify(st)}`);
      if (!paths.includes('hot') && !paths.includes('staged')) assert.equal(st.loads, 0, `${name}: no slot loads`);
      if (paths.some((p) => p !== 'exact')) assert.ok(st.ioBytes > 0, `${name}: explicit reads ${JSON.stringify(st)}`);
    }
  });
}

test('profile options are checked and reported in the summary', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 3 });
  const m = await NativeModel.load(dir, {
    decodePath: 'staged',
    prefillPath: 'whole-layer',
    slots: 6,
    ioThreads: 2,
    ioMode: 'direct',
    cacheBytes: 0,
  });
  assert.deepEqual(
    { ...m.summary.stream },
    {
      prefillPath: 'whole-layer',
      decodePath: 'staged',
      slots: 6,
      hotSlots: 8,
      ioThreads: 2,
      ioMode: 'direct',
      measureRecall: false,
      wholeLayerShare: 0.7,
      deviceExpertBytes: 0,
      prerouter: null,
      prerouterOwners: [],
    },
  );
  m.dispose();
  // A budget of 2^31 + 5 experts per layer: every expert fits (the count was cast to an int
  // first, which wrapped it negative: "holds less than one expert").
  const perLayer = m.summary.expertBytes * m.summary.moeLayers;
  const huge = await NativeModel.load(dir, { decodePath: 'hot', cacheBytes: perLayer * (2 ** 31 + 5) });
  assert.equal(huge.summary.stream.hotSlots, 16);
  huge.dispose();
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ decodePath: 'fast' }, /option decodePath must be "exact", "staged", "hot" or "whole-layer", got "fast"/],
    [{ ioMode: 'mmap' }, /option ioMode must be "page-cache" or "direct", got "mmap"/],
    [{ slots: 0 }, /option slots must be an integer between 1 and/],
    [{ slots: 17 }, /slots must be at most the 16 experts of a layer, got 17/],
    [{ ioThreads: 65 }, /option ioThreads must be an integer between 1 and 64, got 65/],
    [
      { decodePath: 'hot', cacheBytes: 1000 },
      /cacheBytes 1000 holds less than one expert per MoE layer for the hot path \(needs ≥ \d+ bytes: 4 layers × \d+ bytes\)/,
    ],
    [{ measureRecall: 'yes' }, /option measureRecall must be true or false, got a string/],
    [{ wholeLayerShare: 1.5 }, /option wholeLayerShare must be a number between 0\.0+ and 1\.0+, got 1\.5/],
    [{ deviceExpertBytes: -1 }, /option deviceExpertBytes must be an integer between 0 and/],
  ];
  for (const [opts, re] of bad) {
    await assert.rejects(
      NativeModel.load(dir, opts as never),
      (e: Error) => re.test(e.message),
      `${JSON.stringify(opts)} → ${re}`,
    );
  }
});

// A hint goes only to a routed expert whose pages are not all in memory (mincore on the mapping:
// a hint walks each page in the page cache, 9 syscalls an expert). A just-written model is
// cached: no hint. With the page cache dropped after loading, the first passes hint the experts
// they read from storage (the gate is on: see test-read-hints.cpp for when it goes off).
test('read hints go only to experts whose pages are not in memory', async (t) => {
  // Two models: a page still mapped by a disposed model is not dropped.
  const hintsOver = async (seed: number, drop: boolean) => {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed });
    const model = await NativeModel.load(dir, { threads: 2 });
    try {
      const files = readdirSync(dir)
        .filter((f) => f.endsWith('.safetensors'))
        .map((f) => join(dir, f));
      if (drop) await loadNative().dropPageCache(files);
      const s = await model.createSession();
      await s.prefill([11]); // one token: most experts are first read by the decode passes
      for (let i = 0; i < 8; i++) await s.decode(20 + i);
      return s.info().stream.readHints;
    } finally {
      model.dispose();
    }
  };
  assert.equal(await hintsOver(4, false), 0, 'every page of the just-written model is cached');
  assert.ok((await hintsOver(5, true)) > 0, 'experts read from storage are hinted');
});
