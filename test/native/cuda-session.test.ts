// Sessions on the whole-token CUDA decoder (native/cuda/cuda-decoder.cu through
// native/common/session-device.cpp): over the CPU emulation of native/cuda/cuda-emu.h (the real
// device with BRAINSTEM_TEST_CUDA=gpu) beside a CPU session, through what the prefix cache does
// with a session — truncation, a prefix hit, a top-k change, a LoRA, prerouter predictions — and
// a device failure that hands the KV cache back to the CPU. Greedy tokens identical in every phase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSessionPhases, type SessionMode, sessionProbe } from './helpers/device-session.js';
import type { SynthArch } from '../../daemon/tools/synth.js';
import { synthTemp } from './helpers/model-files.js';

type Ctx = Parameters<typeof synthTemp>[0];
const onGpu = process.env.BRAINSTEM_TEST_CUDA === 'gpu';
const tokens = 3;

function run(t: Ctx, arch: SynthArch, seed: number, mode: SessionMode) {
  const dir = synthTemp(t, { arch, seed });
  const p = sessionProbe('cuda', dir, tokens, mode);
  // The emulation counts the weights' copies; on a GPU the wrapper's decoder is the only one.
  checkSessionPhases('cuda', `${arch}/${mode}`, p, arch !== 'llama', tokens, !onGpu);
  if (onGpu) return p;
  assert.equal(p.set_disabled, true, `${arch}/${mode}: the device error turned the CUDA set off`);
  assert.equal(p.sticky_failure_drops_cache, true, `${arch}/${mode}: a sticky error drops the cache, named`);
  assert.deepEqual(p.greedy_step, { syncs: 1, d2h_bytes: 4 }, `${arch}/${mode}: a greedy step syncs once for 4 bytes`);
  return p;
}

test('a session on the CUDA decoder decodes like a CPU session through truncation, a prefix hit, top-k, a LoRA and a device failure, with a float32 or an f16 KV cache', (t) => {
  const full = run(t, 'qwen3_moe', 11, 'f32');
  const half = run(t, 'qwen3_moe', 11, 'f16');
  assert.ok(half.device_state_bytes < full.device_state_bytes, 'the f16 cache is smaller on the device');
  run(t, 'llama', 11, 'f32');
});

test('a session on the CUDA decoder routes decode steps by the prerouter like a CPU session', (t) => {
  const p = run(t, 'glm4_moe', 17, 'f16,heads');
  assert.ok(p.cpu_predicted_layers > 0, 'decode steps were routed by predictions');
});
