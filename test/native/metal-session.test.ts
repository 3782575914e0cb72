// Sessions on the whole-token Metal decoder (native/common/session-device.cpp): the msl-shim device
// here (the system GPU with BRAINSTEM_TEST_METAL=gpu on a Mac) beside a CPU session, through what
// the prefix cache does with a session — truncation, a prefix hit, a top-k change, a LoRA — and a device
// failure that hands the KV cache back to the CPU. Greedy tokens identical in every phase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkSessionPhases, type SessionMode, type SessionProbe, sessionProbe } from './helpers/device-session.js';
import { synthTemp } from './helpers/model-files.js';

function probe(dir: string, tokens: number, mode: SessionMode): SessionProbe {
  return sessionProbe('metal', dir, tokens, mode);
}

function check(arch: string, kv: string, p: SessionProbe, moe: boolean): void {
  checkSessionPhases('metal', `${arch}/${kv}`, p, moe, 4, !process.env.BRAINSTEM_TEST_METAL);
}

test('a session on the Metal decoder decodes like a CPU session through truncation, a prefix hit, top-k, a LoRA and a device failure', (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe', 'llama'] as const) {
    const dir = synthTemp(t, { arch, seed: 11 });
    check(arch, 'f32', probe(dir, 4, 'f32'), arch !== 'llama');
  }
});

test('a session on the Metal decoder with an f16 KV cache decodes like a CPU session with one, in less device memory', (t) => {
  for (const arch of ['qwen3_moe', 'qwen3'] as const) {
    const dir = synthTemp(t, { arch, seed: 13 });
    const half = probe(dir, 4, 'f16');
    check(arch, 'f16', half, arch === 'qwen3_moe');
    const full = probe(dir, 4, 'f32');
    check(arch, 'f32', full, arch === 'qwen3_moe');
    assert.ok(half.device_state_bytes < full.device_state_bytes, `${arch}: the f16 cache is smaller on the device`);
  }
});

test('a session on the Metal decoder routes decode steps by the prerouter like a CPU session', (t) => {
  for (const [arch, heads] of [
    ['qwen3_moe', 'zero'],
    ['qwen3_moe', 'heads'],
    ['glm4_moe', 'heads'],
  ] as const) {
    const dir = synthTemp(t, { arch, seed: 17 });
    const p = probe(dir, 4, heads);
    check(arch, `prerouter ${heads}`, p, true);
    assert.ok(p.cpu_predicted_layers > 0, `${arch}/${heads}: decode steps were routed by predictions`);
  }
});
