// The engine profile in the config: defaults, environment overrides, per-model overrides
// validated with the engine.profile rules (errors name models.<name>.profile.<key>), and the
// native loadModel options it becomes, which a model then reports in its summary.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../daemon/config/load.js';
import { modelProfile, profileLoadOptions } from '../../../daemon/config/engine-profile.js';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { synthTemp } from '../../native/helpers/model-files.js';

test('engine.profile defaults, environment override and per-model overrides', async (t) => {
  const c = loadConfig({ env: { BRAINSTEM_ENGINE_PROFILE_DECODE_PATH: 'hot', BRAINSTEM_ENGINE_PROFILE_IO_THREADS: '2' } });
  assert.deepEqual(c.engine.profile, {
    routing_k: 0, prefill_path: 'exact', decode_path: 'hot', slots: 0, cache_bytes: 0, io_threads: 2, io_mode: 'page-cache', prerouter: 'on',
  });
  const m = modelProfile(c.engine.profile, { routing_k: 4, io_mode: 'direct', prerouter: 'off' }, 'qwen');
  assert.equal(m.routing_k, 4);
  assert.equal(m.decode_path, 'hot', 'keys not overridden come from engine.profile');
  assert.throws(() => modelProfile(c.engine.profile, { decode_path: 'fast' }, 'qwen'), /models\.qwen\.profile\.decode_path: must be one of "exact", "staged", "hot", "whole-layer"/);
  assert.throws(() => modelProfile(c.engine.profile, { slot: 4 }, 'qwen'), /models\.qwen\.profile\.slot: .*slots/);
  assert.throws(() => loadConfig({ env: { BRAINSTEM_ENGINE_PROFILE_IO_MODE: 'mmap' } }), /engine\.profile\.io_mode/);

  const opts = profileLoadOptions(m);
  assert.deepEqual(opts, { topK: 4, prefillPath: 'exact', decodePath: 'hot', ioThreads: 2, ioMode: 'direct', prerouter: 'off' });
  const model = await NativeModel.load(synthTemp(t, { arch: 'qwen3_moe', seed: 1 }), opts);
  t.after(() => model.dispose());
  assert.equal(model.summary.topK, 4);
  assert.deepEqual(
    [model.summary.stream.decodePath, model.summary.stream.ioMode, model.summary.stream.ioThreads, model.summary.stream.prerouter],
    ['hot', 'direct', 2, null],
  );
});
