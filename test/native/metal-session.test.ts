// Sessions on the whole-token Metal decoder (native/common/session-device.cpp): the msl-shim device
// here (the system GPU with BRAINSTEM_TEST_METAL=gpu on a Mac) beside a CPU session, through what
// the prefix cache does with a session — truncation, a prefix hit, a top-k change, a LoRA — and a device
// failure that hands the KV cache back to the CPU. Greedy tokens identical in every phase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { synthTemp } from './helpers/model-files.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');

interface Phase {
  cpu: number[];
  metal: number[];
  n_past: [number, number];
  on_device: boolean;
}

interface Probe {
  device: string;
  phases: Record<string, Phase>;
  prefix_hit_repeats_prompt: boolean;
  greedy_steps: number;
  /** The session's device memory after the prompt (KV cache and activations). */
  device_state_bytes: number;
  /** Decode layer-steps the CPU session routed by a prerouter prediction. */
  cpu_predicted_layers: number;
  /** A second session's decoder wrapped no weights again (the shim counts wraps). */
  weights_shared: boolean;
  max_rel_logit_diff: number;
  /** [limit, CPU token, Metal token] of a greedy step over the ids below limit. */
  greedy_limit: [number, number, number];
}

function probe(dir: string, tokens: number, mode: 'f32' | 'f16' | 'zero' | 'heads'): Probe {
  const args = ['--metal-session', dir, String(tokens), ...(mode === 'f32' ? [] : [mode])];
  const r = spawnSync(binary, args, { encoding: 'utf8', timeout: 600_000 });
  assert.equal(r.status, 0, `metal session probe failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as Probe;
}

function check(arch: string, kv: string, p: Probe, moe: boolean): void {
  const names = ['prompt', 'truncated', 'prefix_hit', ...(moe ? ['top_k'] : []), 'adapter', 'handover'];
  assert.deepEqual(Object.keys(p.phases), names, `${arch}/${kv}: phases`);
  for (const name of names) {
    const ph = p.phases[name];
    assert.equal(ph.metal.length, 4, `${arch}/${kv} ${name}: every step ran`);
    assert.deepEqual(ph.metal, ph.cpu, `${arch}/${kv} ${name}: greedy tokens (${p.device})`);
    assert.equal(ph.n_past[1], ph.n_past[0], `${arch}/${kv} ${name}: cached tokens`);
    assert.equal(ph.on_device, name !== 'handover', `${arch}/${kv} ${name}: runs on the device until it fails`);
  }
  assert.ok(p.prefix_hit_repeats_prompt, `${arch}/${kv}: a prefix hit continues as the same prompt did before`);
  assert.ok(p.greedy_steps > 0, `${arch}/${kv}: some steps brought back only the token`);
  const [limit, cpuToken, metalToken] = p.greedy_limit;
  assert.ok(metalToken === cpuToken && metalToken >= 0 && metalToken < limit, `${arch}/${kv}: greedy below ${limit}`);
  if (!process.env.BRAINSTEM_TEST_METAL) assert.ok(p.weights_shared, `${arch}/${kv}: sessions share the weights`);
  // With an f16 cache a key that differs in its last float32 bits may round to the neighbouring
  // half (2^-11 of it): a few such ulps of the scale, against float32 rounding alone.
  const tol = kv === 'f16' ? 2e-3 : 1e-4;
  assert.ok(p.max_rel_logit_diff < tol, `${arch}/${kv}: logits differ by ${p.max_rel_logit_diff} of the largest`);
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
