// bench decode on a tiny model: the report's counts follow from the model and the clock
// (a fake one, so no timing is asserted), and the CLI prints it as JSON.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runDecodeBench } from '../../../daemon/engine/decode-bench.js';
import { runCli } from '../../helpers/daemon.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { synthAdapterTemp } from './adapters/helpers.js';

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
  if (process.platform === 'linux') {
    for (const k of ['rss_anon_bytes', 'rss_file_bytes', 'peak_rss_bytes'] as const) assert.ok((r[k] ?? 0) > 0, k);
  }
});

test('bench decode and bench membw print JSON; a bad folder is a readable error', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe' });
  const r = await runCli(['bench', 'decode', '--model', dir, '--prompt', '8', '--gen', '3', '--backend', 'cpu-ref', '--kv-cache', 'f16', '--json'], {}, { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, unknown>;
  for (const key of ['decode_tok_s', 'prefill_tok_s', 'ttft_ms', 'rss_anon_bytes', 'rss_file_bytes', 'peak_rss_bytes',
    'disk_read_bytes', 'active_bytes_per_token', 'threads']) {
    assert.ok(key in out, `missing ${key} in ${r.stdout}`);
  }
  assert.equal(out['backend'], 'cpu-ref');
  assert.equal(out['kv_cache'], 'f16');
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
