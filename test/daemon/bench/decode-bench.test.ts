// bench decode on a tiny model: the report's counts follow from the model and the clock
// (a fake one, so no timing is asserted), and the CLI prints it as JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDecodeBench } from '../../../daemon/bench/decode-bench.js';
import { PROFILE_STAGES } from '../../../daemon/native/binding.js';
import { runCli } from '../../helpers/daemon.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { populateSupported } from '../../helpers/populate.js';
import { synthAdapterTemp } from '../engine/adapters/helpers.js';

/** Advances 10 ms per reading. */
function fakeClock(): () => bigint {
  let t = 0n;
  return () => (t += 10_000_000n);
}

test('decode bench derives throughput from its clock and bytes from the weights read', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe' });
  const r = await runDecodeBench({ model: dir, threads: 2, prompt: 12, gen: 5, seed: 3, topK: 3 }, fakeClock());
  assert.equal(r.arch, 'qwen3_moe');
  assert.equal(r.threads, 2);
  assert.equal(r.top_k, 3);
  assert.equal(r.ttft_ms, 10);
  assert.equal(r.prefill_tok_s, 12 / 0.01);
  assert.equal(r.decode_tok_s, 5 / 0.01);
  assert.ok(r.active_bytes_per_token > 0 && r.active_bytes_per_token < r.weight_file_bytes, JSON.stringify(r));
  assert.equal(r.decode_read_gb_s, (r.active_bytes_per_token * r.decode_tok_s) / 1e9);
  assert.ok(r.kv_cache_bytes > 0);
  assert.equal(r.mem_limit_bytes, null);
  assert.equal(r.prediction_recall, null, 'no prerouter, no recall');
  assert.equal(r.slot_hit_rate, null, 'the exact path uses no slots');
  assert.equal(r.blocked_ms_per_token, 0);
  // No flag: the auto-size chose every streaming key; a tiny model fits any budget, so exact.
  assert.deepEqual([r.decode_path, r.prefill_path, r.io_mode], ['exact', 'exact', 'page-cache']);
  assert.deepEqual(r.auto?.keys, [
    'prefillPath',
    'decodePath',
    'slots',
    'cacheBytes',
    'ioThreads',
    'ioMode',
    'prefault',
    'prefillChunk',
  ]);
  assert.equal(r.prefill_chunk, 512, 'resident: the long chunk');
  assert.equal(r.prefault, populateSupported() ? 'mapped' : 'advised', 'resident: mapped before the prefill');
  assert.equal(r.prefault_ms, 10, 'one clock step: load end to mapping end');
  assert.match(r.auto!.reasons.join('\n'), /fit the budget/);
  // A chunk or a prefill path given by hand keeps the engine's chunk.
  const given = await runDecodeBench(
    { model: dir, threads: 2, prompt: 4, gen: 1, seed: 3, prefillChunk: 64 },
    fakeClock(),
  );
  assert.equal(given.prefill_chunk, 64);
  assert.ok(!given.auto?.keys.includes('prefillChunk'));
  const unmapped = await runDecodeBench(
    { model: dir, threads: 2, prompt: 4, gen: 1, seed: 3, prefault: false },
    fakeClock(),
  );
  assert.deepEqual([unmapped.prefault, unmapped.prefault_ms], ['off', 0]);
  assert.ok(!unmapped.auto?.keys.includes('prefault'));
  const path = await runDecodeBench(
    { model: dir, threads: 2, prompt: 4, gen: 1, seed: 3, prefillPath: 'whole-layer' },
    fakeClock(),
  );
  assert.equal(path.prefill_chunk, 128);
  if (process.platform === 'linux') {
    for (const k of ['rss_anon_bytes', 'rss_file_bytes', 'peak_rss_bytes'] as const) assert.ok((r[k] ?? 0) > 0, k);
  }
});

test('decode bench --breakdown: every stage of a decode step, its pool loops, and none without the flag', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe' });
  const plain = await runDecodeBench({ model: dir, threads: 2, prompt: 6, gen: 3, seed: 3 }, fakeClock());
  assert.equal(plain.breakdown, null);
  const r = await runDecodeBench({ model: dir, threads: 2, prompt: 6, gen: 3, seed: 3, breakdown: true }, fakeClock());
  const b = r.breakdown;
  assert.ok(b, 'breakdown present');
  assert.deepEqual(Object.keys(b.stages), [...PROFILE_STAGES]);
  assert.ok(b.step_ms > 0 && b.loops_per_token > 0, JSON.stringify(b));
  let sum = 0;
  for (const [name, s] of Object.entries(b.stages)) {
    assert.ok(s.ms >= 0 && s.loops >= 0 && s.wait_ms >= 0 && s.wait_ms <= s.ms, `${name}: ${JSON.stringify(s)}`);
    sum += s.ms;
  }
  assert.ok(sum <= b.step_ms + 1e-9, 'stages do not overlap');
  assert.ok(b.other_ms >= -1e-9);
  // Every MoE layer ran its router and the experts' matmuls; the tiny model has no dense MLP.
  for (const name of ['attn_proj', 'attention', 'router', 'gate_up', 'down', 'lm_head'] as const) {
    assert.ok(b.stages[name].ms > 0, name);
  }
  assert.equal(b.stages.dense_mlp.loops, 0);
  for (const name of ['linear_proj', 'linear_recurrence'] as const) assert.equal(b.stages[name].loops, 0, name);
  const loops = Object.values(b.stages).reduce((a, s) => a + s.loops, 0);
  assert.ok(loops <= b.loops_per_token, 'the stages started at most every loop of the step');
  // The prefill's own: one forward step for the 6 tokens, the same stages, the last logits.
  assert.equal(plain.prefill_breakdown, null);
  const p = r.prefill_breakdown;
  assert.ok(p, 'prefill breakdown present');
  assert.deepEqual(Object.keys(p.stages), [...PROFILE_STAGES]);
  let psum = 0;
  for (const s of Object.values(p.stages)) psum += s.ms;
  assert.ok(p.step_ms > 0 && psum <= p.step_ms + 1e-9, JSON.stringify(p));
  for (const name of ['attn_proj', 'attention', 'router', 'gate_up', 'down', 'lm_head'] as const) {
    assert.ok(p.stages[name].ms > 0, `prefill ${name}`);
  }
});

test('decode bench --breakdown: linear-attention layers time their projections and recurrence apart', async (t) => {
  for (const arch of ['qwen3_5_moe', 'bailing_moe_linear'] as const) {
    const dir = synthTemp(t, { arch, seed: 2 });
    const r = await runDecodeBench(
      { model: dir, threads: 2, prompt: 5, gen: 3, seed: 3, breakdown: true },
      fakeClock(),
    );
    for (const b of [r.breakdown, r.prefill_breakdown]) {
      assert.ok(b, `${arch}: breakdown present`);
      let sum = 0;
      for (const s of Object.values(b.stages)) sum += s.ms;
      assert.ok(sum <= b.step_ms + 1e-9, `${arch}: stages do not overlap`);
      for (const name of ['linear_proj', 'linear_recurrence', 'attn_proj', 'attention'] as const) {
        assert.ok(b.stages[name].ms > 0, `${arch} ${name}: ${JSON.stringify(b.stages[name])}`);
      }
      assert.ok(b.stages.linear_proj.loops > 0, `${arch}: the projections ran pool loops`);
    }
  }
});

test('decode bench runs with one-byte activations (activationBits 8) and reports them', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe' });
  const r = await runDecodeBench(
    { model: dir, threads: 2, prompt: 6, gen: 3, seed: 3, activationBits: 8, backend: 'auto' },
    fakeClock(),
  );
  assert.equal(r.activation_bits, 8);
  assert.equal(r.gen_tokens, 3);
});

test('decode bench reports the executor per decoded token: stalls, slot hits, prediction recall', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe' });
  const r = await runDecodeBench(
    {
      model: dir,
      threads: 2,
      prompt: 12,
      gen: 6,
      seed: 3,
      decodePath: 'staged',
      prefillPath: 'whole-layer',
      prerouter: 'on',
      ioMode: 'direct',
    },
    fakeClock(),
  );
  assert.equal(r.decode_path, 'staged');
  assert.equal(r.prefill_path, 'whole-layer');
  assert.deepEqual(r.auto?.keys, ['slots', 'cacheBytes', 'ioThreads', 'prefault'], 'flags override the auto-size');
  assert.equal(r.io_mode, 'direct');
  assert.equal(r.prerouter, 'zero-training');
  assert.ok(r.slot_hit_rate !== null && r.slot_hit_rate > 0 && r.slot_hit_rate <= 1, JSON.stringify(r));
  assert.ok(r.prediction_recall !== null && r.prediction_recall > 0 && r.prediction_recall < 1, JSON.stringify(r));
  assert.ok(r.blocked_ms_per_token >= 0 && r.expert_read_bytes_per_token > 0, JSON.stringify(r));
  assert.equal(r.prefetch_unused_bytes, 0, 'prediction as routing uses every prefetched expert');
  assert.ok(r.expert_buffer_bytes > 0);
});

test('bench decode arms: alternated isolated runs, medians, comparison, memory limit when the OS allows', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 2 });
  const r = await runCli(
    [
      'bench',
      'decode',
      '--model',
      dir,
      '--prompt',
      '8',
      '--gen',
      '4',
      '--threads',
      '2',
      '--path',
      'staged',
      '--prefill-path',
      'whole-layer',
      '--prerouter',
      'off,on',
      '--rounds',
      '2',
      '--mem-limit',
      '2GiB',
      '--cold',
      '--json',
    ],
    {},
    { timeoutMs: 120_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as {
    arms: {
      arm: string;
      runs: number;
      killed: number;
      samples: { decode_tok_s: number[] };
      prediction_recall: number | null;
    }[];
    comparison: { arm: string; vs: string; decode_speedup: number }[];
    mem_limit_bytes: number | null;
    cgroup: string | null;
    mem_limit_note: string | null;
    rounds: number;
  } & Record<string, unknown>;
  assert.deepEqual(
    out.arms.map((a) => a.arm),
    ['decode staged, prefill whole-layer, prerouter off', 'decode staged, prefill whole-layer, prerouter on'],
  );
  for (const a of out.arms) {
    assert.equal(a.runs, 2);
    assert.equal(a.killed, 0);
    assert.equal(a.samples.decode_tok_s.length, 2);
  }
  assert.equal(out.arms[0]!.prediction_recall, null);
  assert.ok(out.arms[1]!.prediction_recall !== null);
  assert.equal(out.comparison.length, 1);
  assert.ok(out.comparison[0]!.decode_speedup > 0);
  for (const key of [
    'decode_tok_s',
    'blocked_ms_per_token',
    'disk_read_bytes_per_token',
    'slot_hit_rate',
    'prefetch_unused_bytes',
    'prediction_recall',
    'mem_limit_bytes',
  ]) {
    assert.ok(key in out, `missing ${key}`);
  }
  // Round 1 runs off then on, round 2 on then off.
  assert.match(
    r.stderr,
    /round 1\/2: decode staged, prefill whole-layer, prerouter off\nround 1\/2: .*prerouter on\nround 2\/2: .*prerouter on\nround 2\/2: .*prerouter off/,
  );
  if (out.cgroup !== null) {
    assert.equal(out.mem_limit_bytes, 2 * 2 ** 30);
    assert.equal(out.mem_limit_note, null);
  } else {
    assert.equal(out.mem_limit_bytes, null);
    assert.match(out.mem_limit_note ?? '', /^no memory limit applied: /);
    assert.match(r.stderr, /no memory limit applied/);
  }
  const bad = await runCli(['bench', 'decode', '--model', dir, '--mem-limit', 'lots']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--mem-limit must be a size like 4GiB, 512MiB or a byte count, got "lots"/);
  const badPath = await runCli(['bench', 'decode', '--model', dir, '--path', 'staged,fast']);
  assert.equal(badPath.code, 2);
  assert.match(badPath.stderr, /--path must be one of exact, staged, hot, whole-layer, got "fast"/);
  // A routing width past the model's: a usage error naming the flag (the engine finds it at load).
  const badK = await runCli(['bench', 'decode', '--model', dir, '--k', '99', '--prompt', '2', '--gen', '2']);
  assert.equal(badK.code, 2, badK.stderr);
  assert.match(badK.stderr, /--k: must be between 1 and \d+ for this model \(the experts a token can reach\), got 99/);
  // The same from isolated runs (each in a child process): the child's refusal reaches the flag.
  const badKRuns = await runCli([
    'bench',
    'decode',
    '--model',
    dir,
    '--k',
    '99',
    '--prompt',
    '2',
    '--gen',
    '2',
    '--rounds',
    '2',
  ]);
  assert.equal(badKRuns.code, 2, badKRuns.stderr);
  assert.match(
    badKRuns.stderr,
    /--k: must be between 1 and \d+ for this model \(the experts a token can reach\), got 99/,
  );
});

test('bench decode and bench membw print JSON; a bad folder is a readable error', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe' });
  const r = await runCli(
    [
      'bench',
      'decode',
      '--model',
      dir,
      '--prompt',
      '8',
      '--gen',
      '3',
      '--backend',
      'cpu-ref',
      '--kv-cache',
      'f16',
      '--json',
    ],
    {},
    { timeoutMs: 60_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  for (const key of [
    'decode_tok_s',
    'prefill_tok_s',
    'ttft_ms',
    'rss_anon_bytes',
    'rss_file_bytes',
    'peak_rss_bytes',
    'disk_read_bytes',
    'active_bytes_per_token',
    'threads',
    'blocked_ms_per_token',
    'disk_read_bytes_per_token',
    'slot_hit_rate',
    'prefetch_unused_bytes',
    'prediction_recall',
    'mem_limit_bytes',
  ]) {
    assert.ok(key in out, `missing ${key} in ${r.stdout}`);
  }
  assert.equal(out.backend, 'cpu-ref');
  assert.equal(out.kv_cache, 'f16');
  assert.equal(out.activation_bits, 16);
  const badBits = await runCli(['bench', 'decode', '--model', dir, '--activation-bits', '12']);
  assert.equal(badBits.code, 2);
  assert.match(badBits.stderr, /--activation-bits must be 8, 16 or 24, got "12"/);
  const badKv = await runCli(['bench', 'decode', '--model', dir, '--kv-cache', 'bf16']);
  assert.equal(badKv.code, 2);
  assert.match(badKv.stderr, /--kv-cache must be f32 or f16, got "bf16"/);
  const bad = await runCli(['bench', 'decode', '--model', `${dir}/missing`, '--json']);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /^brainstem: model folder .*missing does not exist or is not a directory/);
  const badOpt = await runCli(['bench', 'decode', '--model', dir, '--gen', '-1']);
  assert.equal(badOpt.code, 2);
  assert.match(badOpt.stderr, /--gen must be an integer ≥ 0, got "-1"/);

  const bw = await runCli(['bench', 'membw', '--threads', '2', '--mib', '8', '--passes', '1', '--json']);
  assert.equal(bw.code, 0, bw.stderr);
  const m = JSON.parse(bw.stdout) as { read_gb_s: Record<string, number>; best_threads: number; buffer_bytes: number };
  assert.deepEqual(Object.keys(m.read_gb_s), ['1', '2']);
  assert.ok(Object.values(m.read_gb_s).every((v) => v > 0 && Number.isFinite(v)));
  assert.equal(m.buffer_bytes, 8 * 2 ** 20);
});

test('decode with an adapter reads its A and B once per token on top of the base weights', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe' });
  const adapter = synthAdapterTemp(t, { model: dir, format: 'edge0', rank: 16, alpha: 32, rms: 1e-3 });
  const base = await runDecodeBench({ model: dir, threads: 1, prompt: 6, gen: 3, seed: 3 }, fakeClock());
  const tuned = await runDecodeBench({ model: dir, threads: 1, prompt: 6, gen: 3, seed: 3, adapter }, fakeClock());
  assert.equal(base.adapter, null);
  assert.deepEqual(tuned.adapter, { format: 'edge0', modules: 16, ranks: [16], bytes: tuned.adapter!.bytes });
  // Rank 16 F16 on q/k/v/o of 4 layers: A 16×128 each, B 128/64/64/128 × 16.
  assert.equal(tuned.adapter!.bytes, 4 * 2 * (4 * 16 * 128 + 16 * (128 + 64 + 64 + 128)));
  assert.equal(tuned.active_bytes_per_token - base.active_bytes_per_token, tuned.adapter!.bytes);
});
