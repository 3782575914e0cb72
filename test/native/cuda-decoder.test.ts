// The whole-token CUDA decoder (native/cuda/cuda-decoder.cu) on synthetic models, run over the CPU
// emulation of native/cuda/cuda-emu.h (the real device with BRAINSTEM_TEST_CUDA=gpu): greedy
// tokens (argmax on the device) identical to the CPU reference kernels, logits within float
// tolerance, one host synchronisation per append and every decode step through the graph path
// (which the emulation runs as a plain stream).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { assertLikeCpu, type DecoderProbe, ropeScaled } from './helpers/decoder-cases.js';
import { assertDecoderRefusals } from './helpers/decoder-refusals.js';
import { synthTemp } from './helpers/model-files.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');

interface Probe extends DecoderProbe {
  appends: number;
  /** Host synchronisations over the appends: the emulation's count (a device: the library's). */
  syncs: number;
  /** The library's own count of its host waits over the same appends (device-context.cuh). */
  host_waits: number;
  graph_launches: number;
  graph_builds: number;
  graph_replays: number;
  tokens_cuda: number[];
  slots?: { hits: number; misses: number; copies: number; prefetches: number; slot_bytes: number };
}

function probe(dir: string, tokens: number, flags: string[] = []): Probe {
  const r = spawnSync(binary, ['--cuda-decoder', dir, String(tokens), ...flags], {
    encoding: 'utf8',
    timeout: 600_000,
  });
  assert.equal(r.status, 0, `cuda decoder probe failed:\n${r.stdout}\n${r.stderr}`);
  const p = JSON.parse(r.stdout) as Probe;
  // Every host wait goes through the library's counter, which a device run reports as syncs.
  assert.equal(p.host_waits, p.syncs, 'the library counts every host wait the emulation saw');
  return p;
}

test('the CUDA decoder prefills and decodes qwen3_moe, glm4_moe and the dense archs greedily like the CPU, one sync per append', (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe', 'qwen3', 'llama'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    const p = probe(dir, 3);
    assertLikeCpu(p, p.tokens_cuda, 3, arch);
    assert.equal(p.syncs, p.appends, `${arch}: one host synchronisation per append`);
    assert.equal(p.graph_launches, p.appends - 1, `${arch}: every decode step replays the graph`);
    assert.equal(p.graph_builds, 1, `${arch}: later steps update the graph in place`);
  }
});

// With an f16 cache (k and v rows go to the cache at a position read on the device) a decode
// step replays the graph captured for its parity as is: two captures, then replays only.
test('the CUDA decoder keeps an f16 KV cache like the CPU with kv_f16, replaying decode graphs without capture', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  const p = probe(dir, 9, ['f16']);
  assertLikeCpu(p, p.tokens_cuda, 9, '', 1e-3);
  assert.equal(p.graph_launches, p.appends - 1, 'every decode step ran a graph');
  assert.equal(p.graph_builds, 2, 'one graph per append parity');
  assert.equal(p.graph_replays, p.graph_launches - 2, 'after the two captures, replays only');
});

// From 32 cached positions a decode step's attention splits its keys and adds a merge kernel: the
// captured graph's topology changes, which a device's in-place update refuses (the emulation's
// too), so the decoder instantiates it again and decodes on.
test('the CUDA decoder instantiates its decode graph again when the attention starts splitting keys (a topology change)', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  const p = probe(dir, 30);
  assertLikeCpu(p, p.tokens_cuda, 30);
  assert.equal(p.graph_launches, p.appends - 1, 'every decode step ran a graph');
  assert.equal(p.graph_builds, 2, 'one instantiation, then one more at the 32nd position');
});

// The prerouter's host flags (which layers hold a prediction) are part of what a graph depends
// on; a replay sets what its capture's walk set. Same tokens as the CPU routing by prediction.
test('the CUDA decoder with a prerouter and an f16 cache replays decode graphs and routes like the CPU', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  const p = probe(dir, 9, ['f16,zero']);
  assertLikeCpu(p, p.tokens_cuda, 9, '', 1e-3);
  assert.ok(p.graph_replays > 0 && p.graph_replays < p.graph_launches, `replays and captures: ${JSON.stringify(p)}`);
});

test('the CUDA decoder with 6 expert slots per layer decodes like the CPU, reading missing experts in place and copying them in', (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    const p = probe(dir, 7, ['slots6']);
    assertLikeCpu(p, p.tokens_cuda, 7, arch);
    assert.equal(p.syncs, p.appends, `${arch}: still one host synchronisation per append`);
    const s = p.slots!;
    assert.ok(s.misses > 0 && s.copies > 0, `${arch}: experts outside the slots were read in place and copied in`);
    assert.ok(s.hits > 0, `${arch}: later steps found experts in their slots`);
  }
});

test('the CUDA decoder with expert slots and a prerouter routes decode steps by its predictions like the CPU and fetches the predicted experts first', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  const p = probe(dir, 5, ['slots6,zero']);
  assertLikeCpu(p, p.tokens_cuda, 5);
  assert.equal(p.syncs, p.appends, 'still one host synchronisation per append');
  assert.ok(p.slots!.prefetches > 0, 'predicted experts were queued before they were used');
});

// Qwen3.5 (separate q/k/v, z, b, a projections) and Qwen3-Next (fused qkvz and ba): Gated DeltaNet
// layers with their recurrent state on the device, output-gated attention with partial RoPE and
// the sigmoid-gated shared expert; bailing_moe_linear: lightning layers and a fused
// query_key_value; in one graph per decode step.
test('the CUDA decoder runs the hybrid models (Gated DeltaNet and lightning layers) greedily like the CPU, with an f16 cache, slots and a prerouter', (t) => {
  for (const arch of ['qwen3_5_moe', 'qwen3_next', 'bailing_moe_linear'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    for (const flags of [[], ['f16,zero'], ['slots6']]) {
      const p = probe(dir, 5, flags);
      const label = `${arch} ${flags.join(' ')}`;
      assertLikeCpu(p, p.tokens_cuda, 5, label, flags.length && flags[0].includes('f16') ? 1e-3 : 1e-4);
      assert.equal(p.syncs, p.appends, `${label}: one host synchronisation per append`);
      assert.equal(p.graph_launches, p.appends - 1, `${label}: every decode step replays the graph`);
    }
  }
});

// A vision model's text (multimodal RoPE with time = height = width: the 1-D rotation).
test("the CUDA decoder decodes a vision model's text like the CPU", (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_vl_moe', seed: 7 });
  const p = probe(dir, 5);
  assertLikeCpu(p, p.tokens_cuda, 5);
});

// Llama 3.1's and Qwen3's YaRN frequency tables in place of θ^(−2i/rot) (YaRN's attention factor too).
test('the CUDA decoder runs llama3 and yarn rope_scaling like the CPU', (t) => {
  for (const [kind, dir] of ropeScaled(t)) {
    const p = probe(dir, 7);
    assertLikeCpu(p, p.tokens_cuda, 7, kind);
  }
});

test('the CUDA decoder names what it does not cover (experts not in one stack)', (t) => {
  assertDecoderRefusals(t, binary, 'cuda');
});

test('the CUDA decoder refuses a cache that does not fit the free device memory, with the sizes', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3', seed: 7 });
  const r = spawnSync(binary, ['--cuda-decoder', dir, '1000000000'], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 1);
  assert.match(
    r.stderr,
    /cuda decoder: the weights \(\d+ MiB\) and cache \(\d+ MiB\) do not fit the \d+ MiB free on the device/,
  );
});

test('the CUDA decoder bench times decode steps with and without the graph, one copy up and the token alone coming back', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  // With a zero-training prerouter too: its predicted routing stays on the device.
  for (const flags of ['bench', 'bench,zero']) {
    const r = spawnSync(binary, ['--cuda-decoder', dir, '3', flags], { encoding: 'utf8', timeout: 600_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    type Timed = {
      tok_s: number;
      graph_builds: number;
      syncs_per_token: number;
      d2h_bytes_per_token: number;
      h2d_copies_per_token: number;
    };
    const b = JSON.parse(r.stdout) as { graph: Timed; stream: Timed };
    assert.ok(b.graph.tok_s > 0 && b.stream.tok_s > 0);
    assert.equal(b.graph.graph_builds, 1);
    for (const timed of [b.graph, b.stream]) {
      assert.equal(timed.syncs_per_token, 1, `${flags}: one host synchronisation per decode step`);
      assert.equal(timed.d2h_bytes_per_token, 4, `${flags}: four bytes back per decode step`);
      assert.equal(timed.h2d_copies_per_token, 1, `${flags}: the step's token, row and position in one copy`);
    }
  }
});

// Set-up failing at every runtime call in turn (cudaMalloc, cudaHostAlloc, a stream, a copy…):
// each failure throws, and nothing it had allocated stays behind (device buffers, pinned
// buffers, expert slot tables and staging), with and without expert slots, on a hybrid too.
test('a CUDA decoder whose set-up fails at any runtime call leaves nothing allocated', (t) => {
  for (const arch of ['qwen3_moe', 'qwen3_5_moe'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    for (const flags of ['sweep', 'sweep,slots4']) {
      const r = spawnSync(binary, ['--cuda-decoder', dir, '1', flags], { encoding: 'utf8', timeout: 300_000 });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const s = JSON.parse(r.stdout) as { failure_points: number; leaks: unknown[] };
      assert.ok(s.failure_points > 100, `${arch} ${flags}: ${s.failure_points} runtime calls in set-up`);
      assert.deepEqual(s.leaks, [], `${arch} ${flags}: allocations left after a failed set-up`);
    }
  }
});
