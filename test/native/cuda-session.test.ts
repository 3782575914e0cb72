// Sessions on the whole-token CUDA decoder (native/cuda/cuda-decoder.cu through
// native/common/session-device.cpp): over the CPU emulation of native/cuda/cuda-emu.h (the real
// device with BRAINSTEM_TEST_CUDA=gpu) beside a CPU session, through what the prefix cache does
// with a session — truncation, a prefix hit, a top-k change, a LoRA, prerouter predictions — and
// a device failure that hands the KV cache back to the CPU. Greedy tokens identical in every phase.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRandomSession, checkSessionPhases, type SessionMode, sessionProbe } from './helpers/device-session.js';
import type { SynthArch } from '../../daemon/tools/synth.js';
import { synthTemp } from './helpers/model-files.js';

type Ctx = Parameters<typeof synthTemp>[0];
const onGpu = process.env.BRAINSTEM_TEST_CUDA === 'gpu';
const tokens = 3;

function run(t: Ctx, arch: SynthArch, seed: number, mode: SessionMode) {
  const dir = synthTemp(t, { arch, seed });
  const p = sessionProbe('cuda', dir, tokens, mode);
  // The emulation counts the weights' copies; on a GPU the wrapper's decoder is the only one.
  const hybrid = arch === 'qwen3_5_moe' || arch === 'qwen3_next' || arch === 'bailing_moe_linear';
  checkSessionPhases('cuda', `${arch}/${mode}`, p, arch !== 'llama', tokens, !onGpu, hybrid && mode.includes('heads'));
  // With expert slots the routed ids come back in the same synchronisation (for the slot policy).
  // On a GPU the library's own counts; here the emulation's, which the library's must equal.
  if (mode.includes('slots')) assert.equal(p.greedy_step?.syncs, 1, `${arch}/${mode}: a greedy step syncs once`);
  else
    assert.deepEqual(
      p.greedy_step,
      { syncs: 1, d2h_bytes: 4 },
      `${arch}/${mode}: a greedy step syncs once for 4 bytes`,
    );
  if (onGpu) return p;
  assert.deepEqual(p.greedy_step_counted, p.greedy_step, `${arch}/${mode}: the library counts what the emulation saw`);
  assert.equal(p.set_disabled, true, `${arch}/${mode}: the device error turned the CUDA set off`);
  assert.equal(p.sticky_failure_drops_cache, true, `${arch}/${mode}: a sticky error drops the cache, named`);
  return p;
}

test('a session on the CUDA decoder decodes like a CPU session through truncation, a prefix hit, top-k, a LoRA and a device failure, with a float32 or an f16 KV cache', (t) => {
  const full = run(t, 'qwen3_moe', 11, 'f32');
  const half = run(t, 'qwen3_moe', 11, 'f16');
  assert.ok(half.device_state_bytes < full.device_state_bytes, 'the f16 cache is smaller on the device');
  run(t, 'llama', 11, 'f32');
});

// Hybrid models keep every linear layer's recurrent state on the device: truncation loads a
// snapshot there and runs the tokens after it again; the failure brings the snapshots back.
test('a session of a hybrid model (Gated DeltaNet or lightning layers) on the CUDA decoder decodes like a CPU session through truncation into decode snapshots, a LoRA on the linear layers, expert slots, the prerouter and a device failure', (t) => {
  const p = run(t, 'qwen3_5_moe', 11, 'f32');
  assert.equal(p.phases.into_decode?.n_past[1], 50, 'truncated into the decode steps and continued');
  run(t, 'qwen3_5_moe', 11, 'f16,heads,slots');
  run(t, 'qwen3_next', 13, 'f16');
  run(t, 'bailing_moe_linear', 13, 'f16,heads');
});

// An image's rows (embeddings, deepstack features, 3-D positions) run on the decoder, and the text
// after it continues past the image's positions, as on the CPU.
test('a session of a vision model (multimodal RoPE) runs an image and the text after it on the CUDA decoder like a CPU session', (t) => {
  const p = run(t, 'qwen3_vl_moe', 11, 'f32');
  assert.equal(p.phases.image?.on_device, true, 'the image on the device');
  run(t, 'qwen3_vl_moe', 11, 'f16');
});

test('a session on the CUDA decoder routes decode steps by the prerouter like a CPU session', (t) => {
  const p = run(t, 'glm4_moe', 17, 'f16,heads');
  assert.ok(p.cpu_predicted_layers > 0, 'decode steps were routed by predictions');
  assert.equal(p.expert_slots?.predicted_layers, p.cpu_predicted_layers, 'the session reports the predicted layers');
  assert.deepEqual(
    [p.expert_slots?.k, p.expert_slots?.loads, p.expert_slots?.hits],
    [0, 0, 0],
    'experts within the budget stay resident: no slots',
  );
});

test('a session whose routed experts exceed the device budget keeps 3 slots per MoE layer, fills them on the copy stream, and decodes like a CPU session, with and without the prerouter', (t) => {
  for (const [arch, seed, mode] of [
    ['qwen3_moe', 11, 'slots'],
    ['glm4_moe', 17, 'f16,heads,slots'],
  ] as const) {
    const p = run(t, arch, seed, mode);
    const s = p.expert_slots;
    assert.ok(s, `${arch}/${mode}: slot counters`);
    assert.equal(s.k, 3, `${arch}/${mode}: the budget of 3 experts per layer gives 3 slots`);
    assert.ok(s.experts > s.k, `${arch}/${mode}: fewer slots than experts`);
    // Misses are read in place and copied in; later steps find some of them in their slots.
    assert.ok(
      s.misses > 0 && s.loads > 0 && s.hits > 0,
      `${arch}/${mode}: hits, misses and loads: ${JSON.stringify(s)}`,
    );
    assert.ok(s.loads <= s.misses + s.prefetch_loads, `${arch}/${mode}: only missed or predicted experts are loaded`);
    // The I/O threads read the fills into pinned staging (the emulation waits for each batch, so
    // every batch but a last one still queued was read).
    if (!onGpu) assert.ok(s.io_bytes > 0, `${arch}/${mode}: fills read by the I/O threads`);
    if (mode.includes('heads')) {
      assert.ok(s.prefetch_loads > 0, `${arch}/${mode}: predicted experts were fetched ahead`);
      assert.equal(s.predicted_layers, p.cpu_predicted_layers, `${arch}/${mode}: decode steps routed by predictions`);
    } else {
      assert.equal(s.prefetch_loads, 0, `${arch}/${mode}: no prerouter, no prefetch`);
    }
  }
});

// Seeded random calls (text and image prefills, decode runs crossing decode snapshots, truncations
// to any row) on the device session beside a CPU session, compared call by call.
test('random calls on CUDA sessions of a hybrid with images, a vision model with DeepStack and Qwen3-Next with expert slots agree with CPU sessions call by call', (t) => {
  const r = checkRandomSession('cuda', synthTemp(t, { arch: 'qwen3_5_moe', seed: 11 }), 24, 1);
  assert.match(r.calls, /i\d/, 'images were appended');
  assert.match(r.calls, /d33/, 'a decode run crossed a snapshot');
  // Float32 caches: with f16 ones the two sides' keys may round to neighbouring halves, and over
  // decode runs of 33 that can flip an expert at a near tie (seen at seed 7: one step off by 0.07).
  checkRandomSession('cuda', synthTemp(t, { arch: 'qwen3_vl_moe', seed: 11 }), 24, 2);
  checkRandomSession('cuda', synthTemp(t, { arch: 'qwen3_next', seed: 13 }), 24, 3, 'slots');
});
