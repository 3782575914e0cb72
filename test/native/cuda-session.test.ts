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
  return p;
}

test('a session on the CUDA decoder decodes like a CPU session through truncation, a prefix hit, top-k, a LoRA and a device failure', (t) => {
  for (const arch of ['qwen3_moe', 'llama'] as const) run(t, arch, 11, 'f32');
});

test('a session on the CUDA decoder with an f16 KV cache decodes like a CPU session with one, in less device memory', (t) => {
  const half = run(t, 'glm4_moe', 13, 'f16');
  const full = run(t, 'glm4_moe', 13, 'f32');
  assert.ok(half.device_state_bytes < full.device_state_bytes, 'the f16 cache is smaller on the device');
});

test('a session on the CUDA decoder routes decode steps by the prerouter like a CPU session', (t) => {
  for (const [arch, mode] of [
    ['qwen3_moe', 'heads'],
    ['glm4_moe', 'zero'],
  ] as const) {
    const p = run(t, arch, 17, mode);
    assert.ok(p.cpu_predicted_layers > 0, `${arch}/${mode}: decode steps were routed by predictions`);
  }
});
