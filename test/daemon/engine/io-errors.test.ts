// A weight file that shrinks under a running model: the next request is rejected with a clear
// error naming the file (no SIGBUS from the mapping, no crash), other models keep working, and
// once the file is whole again the same session continues with the right logits. Expert reads
// that fail in the I/O threads (prefetches in flight when the file shrank) leave no trace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { EngineError, NativeModel, argmax } from '../../../daemon/engine/native-model.js';
import type { LoadModelOptions } from '../../../daemon/native/binding.js';
import { shardOf, synthTemp } from '../../native/helpers/model-files.js';

const PROMPT = [3, 14, 15, 92, 65, 35, 89, 79];
const PROFILES: [string, LoadModelOptions][] = [
  [
    'staged decode, direct reads, prerouter',
    { decodePath: 'staged', prefillPath: 'whole-layer', ioMode: 'direct', prerouter: 'on' },
  ],
  ['exact path (experts read through the mapping)', {}],
  ['hot decode, page-cache reads', { decodePath: 'hot', prefillPath: 'staged' }],
];

for (const [name, opts] of PROFILES) {
  test(`${name}: a shrunk weight file fails the request, not the process`, async (t) => {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
    const control = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
    const model = await NativeModel.load(dir, { threads: 2, ...opts });
    const other = await NativeModel.load(control, { threads: 2, ...opts });
    t.after(() => {
      model.dispose();
      other.dispose();
    });
    const s = await model.createSession();
    const c = await other.createSession();
    let logits = await s.prefill(PROMPT);
    let want = await c.prefill(PROMPT);
    for (let i = 0; i < 3; i++) {
      logits = await s.decode(argmax(logits));
      want = await c.decode(argmax(want));
    }
    assert.deepEqual(logits, want);

    const shard = shardOf(dir, 'model.layers.2.mlp.switch_mlp.down_proj.weight');
    const bytes = readFileSync(shard);
    truncateSync(shard, Math.floor(bytes.length / 2));
    const next = argmax(logits);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        s.decode(next),
        (e: Error) =>
          e instanceof EngineError &&
          e.message.includes(shard) &&
          /shrank from \d+ to \d+ bytes since the model was loaded \(truncated or rewritten\?\); reload the model/.test(
            e.message,
          ),
      );
    }
    await assert.rejects(
      model.createSession().then((x) => x.prefill([1, 2])),
      /shrank from/,
    );
    assert.equal(s.info().nPast, PROMPT.length + 3, 'the failed requests did not advance the session');
    // Another model is unaffected.
    want = await c.decode(next);

    writeFileSync(shard, bytes);
    assert.deepEqual(await s.decode(next), want, `${name}: after the file is whole again the session continues`);
    assert.equal(s.info().stream.drops, 0);
  });
}
