// The streaming auto-size: hand-computed cases on the 30B-A3B int4 geometry, and seeded
// properties over random geometries and budgets (never plans past the budget; cache and residency
// monotone in it, slots too while the paths stay).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  autoStream,
  reserveBytes,
  STREAM_IO_THREADS,
  stagedBytes,
  type ModelGeometry,
} from '../../../daemon/engine/stream-autosize.js';
import { Prng } from '../../../robot/common/prng.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
// Qwen3-30B-A3B 4-bit g64: 48 MoE layers × 128 experts × (3 × (768·2048/2 + 2·768·32·2)) bytes.
const M30: ModelGeometry = { fileBytes: 17_190_000_000, expertBytes: 2_654_208, moeLayers: 48, experts: 128, topK: 8 };

test('30B-A3B under 4 GiB: streams, staged direct decode (18% cacheable), whole-layer prefill, slots by hand', () => {
  const a = autoStream({ ...M30, budgetBytes: 4 * GiB });
  // reserve 512 MiB; dense = 17.19e9 − 48·128·2,654,208 = 882,546,048; free = 4 GiB − 512 MiB − dense
  const dense = M30.fileBytes - 48 * 128 * 2_654_208;
  assert.equal(dense, 882_546_048);
  const free = 4 * GiB - 512 * MiB - dense;
  const layerSet = 48 * 2_654_208; // 127,401,984
  const wholeBuffers = 2 * 128 * 2_654_208; // 679,477,248: fits beside 9 slot sets (1,146,617,856)
  // Direct reads: the slots take all that the dense weights and the two layer buffers leave.
  assert.equal(a.slots, Math.floor((free - wholeBuffers) / layerSet) - 1);
  assert.equal(a.slots, 16);
  // The hot cache (page-cache reads) keeps half for the page cache's reuse.
  assert.equal(a.cacheBytes, (Math.floor(Math.floor(free / 2) / layerSet) - 1) * layerSet);
  assert.equal(a.cacheBytes, 10 * layerSet);
  // 17 slot sets (16 + the zero slot) and two whole-layer buffers of 128 experts.
  assert.equal(a.plannedBytes, 17 * layerSet + wholeBuffers);
  assert.deepEqual(
    [a.resident, a.decodePath, a.prefillPath, a.ioMode, a.ioThreads, a.prefillChunk],
    [false, 'staged', 'whole-layer', 'direct', 32, 512],
  );
  assert.match(a.reasons.join('\n'), /exceed the budget 4\.00 GiB/);
  assert.match(a.reasons.join('\n'), /prefill whole-layer in chunks of 512 tokens/);
  assert.match(a.reasons.join('\n'), /holds 18% of the routed experts/);
});

test('30B-A3B: 8 and 12 GiB stage 45 and 75 slots (41%, 64% cacheable), 16 GiB decodes exact (87%), 24 GiB holds the weights resident; 32 I/O threads whenever it streams, 2 resident', () => {
  const layerSet = 127_401_984;
  const wholeBuffers = 2 * 128 * 2_654_208;
  const at8 = autoStream({ ...M30, budgetBytes: 8 * GiB });
  assert.deepEqual([at8.decodePath, at8.ioMode, at8.prefillPath], ['staged', 'direct', 'whole-layer']);
  assert.equal(at8.slots, Math.floor((8 * GiB - GiB - 882_546_048 - wholeBuffers) / layerSet) - 1); // reserve 1 GiB
  assert.equal(at8.slots, 45);
  assert.equal(at8.plannedBytes, 46 * layerSet + wholeBuffers);
  assert.match(at8.reasons.join('\n'), /holds 41% of the routed experts \(< 75%\)/);
  const at12 = autoStream({ ...M30, budgetBytes: 12 * GiB });
  assert.deepEqual([at12.decodePath, at12.ioMode, at12.prefillPath], ['staged', 'direct', 'whole-layer']);
  assert.equal(at12.slots, Math.floor((12 * GiB - 1.5 * GiB - 882_546_048 - wholeBuffers) / layerSet) - 1); // reserve 1.5 GiB
  assert.equal(at12.slots, 75);
  assert.match(at12.reasons.join('\n'), /holds 64% of the routed experts \(< 75%\)/);
  const at16 = autoStream({ ...M30, budgetBytes: 16 * GiB });
  assert.deepEqual(
    [at16.decodePath, at16.ioMode, at16.prefillPath, at16.plannedBytes, at16.prefillChunk],
    ['exact', 'page-cache', 'whole-layer', 0, 512],
  );
  assert.match(at16.reasons.join('\n'), /holds 87% of the routed experts: decode exact/);
  const at24 = autoStream({ ...M30, budgetBytes: 24 * GiB });
  assert.deepEqual(
    [at24.resident, at24.decodePath, at24.prefillPath, at24.plannedBytes, at24.prefillChunk],
    [true, 'exact', 'exact', M30.fileBytes, 512],
  );
  assert.deepEqual(
    [
      at8.ioThreads,
      at12.ioThreads,
      at16.ioThreads,
      at24.ioThreads,
      autoStream({ ...M30, topK: 4, budgetBytes: 4 * GiB }).ioThreads,
    ],
    [32, 32, 32, 2, 32],
  );
});

test('a budget too small for K slots or two layers decodes and prefills exact, nothing pinned', () => {
  const a = autoStream({ ...M30, budgetBytes: 1.5 * GiB });
  assert.deepEqual([a.decodePath, a.prefillPath, a.ioMode, a.prefillChunk], ['exact', 'exact', 'page-cache', 128]);
  assert.equal(a.slots, 1, 'the engine needs at least one slot; staged is not chosen');
  assert.equal(a.plannedBytes, 0);
  assert.match(a.reasons.join('\n'), /fewer than K=8 slots fit/);
});

test('seeded properties: within the budget and monotone in it', () => {
  const rng = new Prng(20);
  for (let i = 0; i < 300; i++) {
    const experts = 8 + rng.int(249);
    const g: ModelGeometry = {
      expertBytes: 4096 + rng.int(8 * MiB),
      moeLayers: 1 + rng.int(94),
      experts,
      topK: 1 + rng.int(Math.min(16, experts)),
      fileBytes: 0,
    };
    g.fileBytes = g.moeLayers * g.experts * g.expertBytes + rng.int(4 * GiB);
    let prev: ReturnType<typeof autoStream> | undefined;
    for (let b = 256 * MiB; b <= 96 * GiB; b *= 1.37) {
      const budgetBytes = Math.floor(b);
      const a = autoStream({ ...g, budgetBytes });
      const ctx = `${JSON.stringify(g)} at ${budgetBytes}`;
      assert.ok(a.plannedBytes <= budgetBytes, `planned within the budget: ${ctx}`);
      const dense = g.fileBytes - g.moeLayers * g.experts * g.expertBytes;
      const room = budgetBytes - reserveBytes(budgetBytes) - dense;
      if (!a.resident) assert.ok(a.plannedBytes <= Math.max(0, room), `buffers beside the dense weights: ${ctx}`);
      if (a.slots > 1) assert.ok(stagedBytes(g, a.slots) <= room, `staged slots fit: ${ctx}`);
      if (a.decodePath === 'staged') assert.ok(a.slots >= g.topK && a.ioMode === 'direct', ctx);
      assert.ok(a.cacheBytes <= Math.max(0, room), `hot cache fits: ${ctx}`);
      assert.ok(a.slots >= 1 && a.slots <= g.experts, ctx);
      assert.equal(a.ioThreads, a.resident ? 2 : STREAM_IO_THREADS, ctx);
      // Slots grow with the budget while the paths stay; where whole-layer prefill starts to fit
      // (its buffers come out of the direct slots) or exact decode takes over (the page cache
      // then shares the room), they may step down.
      if (prev && prev.decodePath === a.decodePath && prev.prefillPath === a.prefillPath) {
        assert.ok(a.slots >= prev.slots, `slots monotone: ${ctx}`);
      }
      if (prev) {
        assert.ok(a.cacheBytes >= prev.cacheBytes, `cache monotone: ${ctx}`);
        assert.ok(a.resident || !prev.resident, `once resident, resident with more memory: ${ctx}`);
      }
      prev = a;
    }
  }
});
