// Prefill under a memory limit takes the whole-layer path in chunks: each forward step (one
// chunk of the prompt) reads every MoE layer's experts exactly once, so a prompt costs
// ⌈tokens / chunk⌉ reads of the experts, in both I/O modes; a chunk that routes to fewer than
// wholeLayerShare of a layer's experts reads just those (exact path), with the same logits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import type { IoMode } from '../../../daemon/native/binding.js';
import { synthTemp } from '../../native/helpers/model-files.js';

for (const ioMode of ['page-cache', 'direct'] as IoMode[]) {
  test(`whole-layer prefill in chunks of 5 reads each expert once per chunk (${ioMode})`, async (t) => {
    const dir = synthTemp(t, { arch: 'glm4_moe', seed: 8 });
    const model = await NativeModel.load(dir, {
      threads: 1,
      prefillPath: 'whole-layer',
      prefillChunk: 5,
      ioMode,
      wholeLayerShare: 0,
    });
    t.after(() => model.dispose());
    const { moeLayers, experts, expertBytes } = model.summary;
    const s = await model.createSession();
    await s.prefill([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]); // 12 tokens: chunks of 5, 5, 2
    const st = s.info().stream;
    assert.equal(st.layerReads, 3 * moeLayers, `one read per MoE layer per chunk: ${JSON.stringify(st)}`);
    assert.equal(st.ioBytes, 3 * moeLayers * experts * expertBytes, 'every expert read once per chunk');
    assert.equal(st.loads, 0, 'no expert read one by one');
  });
}

for (const ioMode of ['page-cache', 'direct'] as IoMode[]) {
  test(`whole-layer prefill reads a layer whole only where the chunk routes to >= 0.7 of its experts (${ioMode})`, async (t) => {
    const dir = synthTemp(t, { arch: 'glm4_moe', seed: 8 });
    const load = (wholeLayerShare?: number) =>
      NativeModel.load(dir, { threads: 1, prefillPath: 'whole-layer', prefillChunk: 64, ioMode, wholeLayerShare });
    const model = await load();
    const forced = await load(0);
    t.after(() => {
      model.dispose();
      forced.dispose();
    });
    const { moeLayers, experts, expertBytes, topK } = model.summary;
    assert.equal(model.summary.stream.wholeLayerShare, 0.7);
    // 2 tokens route to at most 2K = 8 of E = 16 experts (< 0.7 E): every layer runs exact, no layer read.
    assert.ok(2 * topK < 0.7 * experts, `2K ${2 * topK} vs E ${experts}`);
    const s = await model.createSession();
    const short = await s.prefill([3, 4]);
    const st = s.info().stream;
    assert.equal(st.layerReads, 0, `2-token chunk: no whole-layer read ${JSON.stringify(st)}`);
    // 40 tokens × K = 160 rows over 16 experts reach nearly all of them: every layer read whole, once.
    const long = await s.prefill(Array.from({ length: 40 }, (_, i) => 5 + ((i * 7) % 50)));
    const st2 = s.info().stream;
    assert.equal(st2.layerReads, moeLayers, `40-token chunk: one read per MoE layer ${JSON.stringify(st2)}`);
    assert.equal(st2.ioBytes - st.ioBytes, moeLayers * experts * expertBytes, 'every expert read once');
    // The paths give the same numbers: logits equal those of a session reading every layer whole.
    const f = await forced.createSession();
    assert.deepEqual(await f.prefill([3, 4]), short, 'logits after the short chunk');
    assert.deepEqual(
      await f.prefill(Array.from({ length: 40 }, (_, i) => 5 + ((i * 7) % 50))),
      long,
      'after the long one',
    );
    assert.equal(f.info().stream.layerReads, 2 * moeLayers, 'the forced session read both chunks whole');
  });
}
