// The dense archs (qwen3, llama) on tiny synthetic models: a prompt prefilled whole equals the
// same prompt prefilled in two parts or finished by decode steps, and the engine after
// truncations matches the float64 reference. Greedy agreement (every kernel set) is in
// reference-agreement.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { referenceForward } from '../../../daemon/tools/reference/forward.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { assertClose, assertTruncations } from './logits-compare.js';

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
