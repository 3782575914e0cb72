// Prefill under a memory limit takes the whole-layer path in chunks: each forward step (one
// chunk of the prompt) reads every MoE layer's experts exactly once, whatever the chunk's
// routing, so a prompt costs ⌈tokens / chunk⌉ reads of the experts, in both I/O modes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import type { IoMode } from '../../../daemon/native/binding.js';
import { synthTemp } from '../../native/helpers/model-files.js';

for (const ioMode of ['page-cache', 'direct'] as IoMode[]) {
  test(`whole-layer prefill in chunks of 5 reads each expert once per chunk (${ioMode})`, async (t) => {
    const dir = synthTemp(t, { arch: 'glm4_moe', seed: 8 });
    const model = await NativeModel.load(dir, { threads: 1, prefillPath: 'whole-layer', prefillChunk: 5, ioMode });
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
