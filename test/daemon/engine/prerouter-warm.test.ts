// Prediction and page-cache reuse add up: on the exact path the prerouter's predicted experts are
// read into the page cache by the I/O threads one token ahead, and the layer that routes them
// computes after the warm landed (waiting for one still on its way), so the counts are exact.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { loadNative } from '../../../daemon/native/binding.js';
import { synthTemp } from '../../native/helpers/model-files.js';

test('exact path + prerouter: predicted experts are warmed one token ahead and found warm', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 12 });
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.safetensors'))
    .map((f) => join(dir, f));
  await loadNative().dropPageCache(files);
  const model = await NativeModel.load(dir, { threads: 1, decodePath: 'exact', prerouter: 'on' });
  t.after(() => model.dispose());
  const k = model.summary.topK;
  const owners = model.summary.stream.prerouterOwners.length;
  const perStep = k * owners;
  const s = await model.createSession();
  await s.prefill([5, 6, 7, 8]);
  const steps = 6;
  for (let i = 1; i <= steps; i++) await s.decode(30 + i);
  const st = s.info().stream;
  assert.equal(st.warmExperts, (steps + 1) * perStep, 'the prefill and every decode step warm the next step');
  assert.equal(
    st.warmHits,
    steps * perStep,
    `every predicted expert was warm when its layer ran: ${JSON.stringify(st)}`,
  );
  assert.equal(st.predictedLayers, steps * owners);
  assert.ok(st.warmBytes <= st.warmExperts * model.summary.expertBytes, 'warms read at most the experts they were for');
  assert.equal(st.loads, 0, 'the exact path loads no slots');
});

test('without the prerouter the exact path warms nothing', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 3 });
  const model = await NativeModel.load(dir, { threads: 1, decodePath: 'exact' });
  t.after(() => model.dispose());
  const s = await model.createSession();
  await s.prefill([5, 6, 7, 8]);
  for (let i = 0; i < 3; i++) await s.decode(40 + i);
  const st = s.info().stream;
  assert.deepEqual([st.warmExperts, st.warmBytes, st.warmHits], [0, 0, 0]);
});
