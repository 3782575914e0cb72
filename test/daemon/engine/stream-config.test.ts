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
  const defaults = resolveProfile({ path: '/m' }, base.engine, '/m').stream!;
  assert.deepEqual(defaults, {
    prefillPath: 'auto',
    decodePath: 'auto',
    slots: 0,
    cacheBytes: 0,
    ioThreads: 0,
    ioMode: 'auto',
    deviceExpertBytes: 0,
    prerouter: 'off',
  });
  // Every key auto: the auto-size's values; without one (geometry unreadable) the engine's defaults.
  const sized = {
    prefillPath: 'whole-layer',
    decodePath: 'exact',
    slots: 10,
    cacheBytes: 0,
    ioThreads: 4,
    ioMode: 'page-cache',
    prefillChunk: 512,
  };
  assert.deepEqual(
    streamLoadOptions(defaults, () => ({ ...sized, resident: false, plannedBytes: 0, reasons: [] }) as never),
    {
      prefillPath: 'whole-layer',
      decodePath: 'exact',
      slots: 10,
      ioThreads: 4,
      ioMode: 'page-cache',
      prefillChunk: 512,
      prerouter: 'off',
    },
  );
  // The auto-size's chunk goes with its prefill path: a prefill path set by hand keeps the engine's.
  assert.equal(
    streamLoadOptions({ ...defaults, prefillPath: 'exact' }, () => ({ ...sized, resident: false }) as never)
      .prefillChunk,
    undefined,
  );
  assert.deepEqual(
    streamLoadOptions(defaults, () => undefined),
    { prerouter: 'off' },
  );
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 1 });
  const c = loadConfig({
    env: { BRAINSTEM_ENGINE_DECODE_PATH: 'hot', BRAINSTEM_ENGINE_IO_THREADS: '2' },
    overrides: {
      models: {
        glm: {
          path: dir,
          io_mode: 'direct',
          prerouter: 'on',
          slots: 6,
          activation_bits: 24,
          device_expert_bytes: 3 << 20,
        },
      },
    },
  });
  const profile = resolveProfile(c.models.glm!, c.engine, dir);
  assert.deepEqual(profile.stream, {
    prefillPath: 'auto',
    decodePath: 'hot',
    slots: 6,
    cacheBytes: 0,
    ioThreads: 2,
    ioMode: 'direct',
    deviceExpertBytes: 3 << 20,
    prerouter: 'on',
  });
  assert.deepEqual(streamLoadOptions(profile.stream!), {
    decodePath: 'hot',
    slots: 6,
    ioThreads: 2,
    ioMode: 'direct',
    deviceExpertBytes: 3 << 20,
    prerouter: 'on',
  });
  assert.throws(
    () => loadConfig({ env: {}, overrides: { models: { glm: { path: dir, decode_path: 'fast' } } } }),
    /models\.glm\.decode_path: must be one of "auto", "exact", "staged", "hot", "whole-layer"/,
  );
  assert.throws(() => loadConfig({ env: { BRAINSTEM_ENGINE_IO_MODE: 'mmap' } }), /engine\.io_mode/);

  const served = await loadNativeModel({ ...profile, threads: 1 }, () => {});
  t.after(() => served.dispose());
  const s = served.summary!.stream;
  assert.deepEqual(
    [s.decodePath, s.ioMode, s.ioThreads, s.slots, s.prerouter, s.prefillPath, s.deviceExpertBytes],
    ['hot', 'direct', 2, 6, 'zero-training', 'exact', 3 << 20],
    'prefill_path auto: a tiny model fits any budget, so exact',
  );
  assert.equal(served.summary!.activationBits, 24, 'models.<name>.activation_bits reaches the engine');
});
