// Expert streaming in the config: engine.* defaults, BRAINSTEM_ENGINE_* overrides, per-model
// keys over them (checked with the same rules), and the served model loaded with them (with
// the per-model activation_bits too).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../../daemon/config/load.js';
import { resolveProfile } from '../../../daemon/engine/config.js';
import { loadNativeModel } from '../../../daemon/engine/served-model.js';
import { streamLoadOptions } from '../../../daemon/engine/stream-config.js';
import { synthTemp } from '../../native/helpers/model-files.js';

test('engine streaming keys: defaults, environment, per-model overrides, load options', async (t) => {
  const base = loadConfig({ env: {} });
  assert.deepEqual(resolveProfile({ path: '/m' }, base.engine, '/m').stream, {
    prefillPath: 'exact',
    decodePath: 'staged',
    slots: 0,
    cacheBytes: 0,
    ioThreads: 4,
    ioMode: 'page-cache',
    prerouter: 'off',
  });
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 1 });
  const c = loadConfig({
    env: { BRAINSTEM_ENGINE_DECODE_PATH: 'hot', BRAINSTEM_ENGINE_IO_THREADS: '2' },
    overrides: { models: { glm: { path: dir, io_mode: 'direct', prerouter: 'on', slots: 6, activation_bits: 24 } } },
  });
  const profile = resolveProfile(c.models.glm!, c.engine, dir);
  assert.deepEqual(profile.stream, {
    prefillPath: 'exact',
    decodePath: 'hot',
    slots: 6,
    cacheBytes: 0,
    ioThreads: 2,
    ioMode: 'direct',
    prerouter: 'on',
  });
  assert.deepEqual(streamLoadOptions(profile.stream!), {
    prefillPath: 'exact',
    decodePath: 'hot',
    slots: 6,
    ioThreads: 2,
    ioMode: 'direct',
    prerouter: 'on',
  });
  assert.throws(
    () => loadConfig({ env: {}, overrides: { models: { glm: { path: dir, decode_path: 'fast' } } } }),
    /models\.glm\.decode_path: must be one of "exact", "staged", "hot", "whole-layer"/,
  );
  assert.throws(() => loadConfig({ env: { BRAINSTEM_ENGINE_IO_MODE: 'mmap' } }), /engine\.io_mode/);

  const served = await loadNativeModel({ ...profile, threads: 1 }, () => {});
  t.after(() => served.dispose());
  const s = served.summary!.stream;
  assert.deepEqual(
    [s.decodePath, s.ioMode, s.ioThreads, s.slots, s.prerouter],
    ['hot', 'direct', 2, 6, 'zero-training'],
  );
  assert.equal(served.summary!.activationBits, 24, 'models.<name>.activation_bits reaches the engine');
});
