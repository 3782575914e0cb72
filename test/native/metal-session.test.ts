// Sessions on the whole-token Metal decoder (native/common/session-device.cpp): the msl-shim device
// here (the system GPU with BRAINSTEM_TEST_METAL=gpu on a Mac) beside a CPU session, through what
// the prefix cache does with a session — truncation, a prefix hit, a top-k change, a LoRA — and a device
// failure that hands the KV cache back to the CPU. Greedy tokens identical in every phase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import {
  checkRandomSession,
  checkSessionPhases,
  type SessionMode,
  type SessionProbe,
  sessionProbe,
} from './helpers/device-session.js';
import { synthTemp } from './helpers/model-files.js';

function probe(dir: string, tokens: number, mode: SessionMode): SessionProbe {
  return sessionProbe('metal', dir, tokens, mode);
}

function check(arch: string, kv: string, p: SessionProbe, moe: boolean): void {
  checkSessionPhases('metal', `${arch}/${kv}`, p, moe, 4, process.env.BRAINSTEM_TEST_METAL !== 'gpu');
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

test('a session on the Metal decoder computes streamed experts from staged slots the I/O threads fill, like a CPU session on that profile', (t) => {
  const moeLayers = 4; // the tiny synthetic models: every layer is MoE, 16 experts, top-k 4
  for (const [arch, mode] of [
    ['qwen3_moe', 'staged'],
    ['qwen3_moe', 'staged,direct'],
    ['qwen3_moe', 'staged,zero'],
    ['qwen3_moe', 'staged,slots3,heads'],
    ['glm4_moe', 'staged,direct,heads'],
  ] as const) {
    const dir = synthTemp(t, { arch, seed: 17 });
    const p = probe(dir, 4, mode);
    const label = `${arch}/${mode}`;
    check(arch, label, p, true);
    const s = p.device_stream;
    const waits = p.host_waits;
    assert.ok(s && waits, `${label}: streaming counters`);
    assert.ok(s.slot_hits > 0 && s.slot_misses > 0, `${label}: slots hit and missed (${JSON.stringify(s)})`);
    assert.ok(s.loads >= s.slot_misses && s.io_bytes > 0, `${label}: every miss loaded into a slot`);
    assert.equal(s.fallbacks, 0, `${label}: the device never computes from the file`);
    assert.equal(s.drops, 0, `${label}: no routed row reads the zero slot`);
    const prerouter = mode.includes('zero') || mode.includes('heads');
    // A prefill chunk waits at every MoE layer (its routing), once more per extra wave.
    assert.ok(waits[0] >= moeLayers, `${label}: prefill waits ${waits[0]}`);
    for (const w of waits.slice(1)) {
      if (prerouter) {
        // Only the first MoE layer is routed on the GPU; predicted layers wait at most for loads in flight.
        assert.ok(w >= 1 && w <= (mode.includes('slots3') ? 2 * moeLayers : moeLayers), `${label}: decode waits ${w}`);
      } else {
        assert.equal(w, moeLayers, `${label}: a decode step waits once per MoE layer`);
      }
    }
    assert.deepEqual(
      p.io_error,
      { failed_with_reason: true, kept: true, continues: true },
      `${label}: a shrunk weight file fails that append only`,
    );
    if (prerouter) assert.ok(s.prefetch_loads > 0, `${label}: predicted experts were loaded a step ahead`);
    else assert.equal(s.prefetch_loads, 0, `${label}: no prerouter, no prefetch`);
  }
});

// Hybrid models keep every linear layer's recurrent state in a device buffer: truncation copies a
// snapshot back and runs the tokens after it again; the failure brings the snapshots back.
test('a session of a hybrid model (Gated DeltaNet or lightning layers) on the Metal decoder decodes like a CPU session through truncation into decode snapshots, a LoRA on the linear layers, the prerouter, streamed experts and a device failure', (t) => {
  for (const [arch, mode] of [
    ['qwen3_5_moe', 'f32'],
    ['qwen3_next', 'f16'],
    ['bailing_moe_linear', 'f16,heads'],
    ['qwen3_5_moe', 'staged,slots3,heads'],
  ] as const) {
    const dir = synthTemp(t, { arch, seed: 11 });
    const p = probe(dir, 4, mode);
    checkSessionPhases(
      'metal',
      `${arch}/${mode}`,
      p,
      true,
      4,
      process.env.BRAINSTEM_TEST_METAL !== 'gpu',
      mode.includes('heads'),
    );
    assert.ok(p.phases.into_decode?.on_device, `${arch}/${mode}: truncated into the decode steps on the device`);
    // A truncation whose replay meets the shrunk file (or a load failing after the first MoE
    // layer ran) fails with the reason at the replay's snapshot, and goes on from there like a CPU
    // session once the file is whole.
    if (mode.startsWith('staged'))
      assert.deepEqual(
        p.io_error,
        {
          failed_with_reason: true,
          kept: true,
          continues: true,
          replay: {
            failed_with_reason: true,
            at_snapshot: true,
            continues: true,
            midway: { failed_with_reason: true, at_snapshot: true, continues: true },
          },
        },
        `${arch}/${mode}: a shrunk weight file fails that append or replay only, the state rebuilt`,
      );
  }
});

// An image's rows (embeddings, deepstack features, 3-D positions) run on the decoder, and the text
// after it continues past the image's positions, as on the CPU.
test('a session of a vision model (multimodal RoPE) runs an image and the text after it on the Metal decoder like a CPU session', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 11 });
  for (const kv of ['f32', 'f16'] as const) {
    const p = probe(dir, 4, kv);
    check('qwen3_vl_moe', kv, p, true);
    assert.equal(p.phases.image?.on_device, true, `${kv}: the image on the device`);
  }
});

test('the Metal session decoder refuses the hot path by name with a log line, not silently', (t) => {
  const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  const r = spawnSync(binary, ['--metal-session', dir, '2', 'hot'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 1, 'refused');
  const why = 'the hot decode path has no Metal kernels \\(use exact or staged\\)';
  const line = `metal: the whole-token decoder does not cover this qwen3_moe model: ${why}; its sessions run the table's`;
  assert.match(r.stderr, new RegExp(`${line} kernels one call at a time`));
});

// Seeded random calls (text and image prefills, decode runs crossing decode snapshots, truncations
// to any row) on the device session beside a CPU session, compared call by call.
test('random calls on Metal sessions of a hybrid with images and a vision model with DeepStack agree with CPU sessions call by call', (t) => {
  const r = checkRandomSession('metal', synthTemp(t, { arch: 'qwen3_5_moe', seed: 11 }), 24, 1);
  assert.match(r.calls, /i\d/, 'images were appended');
  assert.match(r.calls, /d33/, 'a decode run crossed a snapshot');
  // Float32 caches: with f16 ones the two sides' keys may round to neighbouring halves, and over
  // decode runs of 33 that can flip an expert at a near tie (seen at seed 7: one step off by 0.07).
  checkRandomSession('metal', synthTemp(t, { arch: 'qwen3_vl_moe', seed: 11 }), 24, 2);
});
