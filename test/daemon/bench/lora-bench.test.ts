// bench lora on a tiny model: both sides decode the same number of tokens, the numbers follow
// from the (fake) clocks, the adapter facts are reported, and the CLI prints the JSON keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runLoraBench } from '../../../daemon/bench/lora-bench.js';
import { runCli } from '../../helpers/daemon.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { synthAdapterTemp } from '../engine/adapters/helpers.js';

test('bench lora: interleaved decode timings from injected clocks, adapter facts', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe' });
  const adapter = synthAdapterTemp(t, { model: dir, format: 'mlx', rank: 8, alpha: 16, rms: 1e-3 });
  // Wall: +10 ms per reading; CPU: +4 ms per reading (microseconds).
  let wall = 0n;
  let cpu = 0;
  const r = await runLoraBench(
    { model: dir, adapter, threads: 1, prompt: 5, gen: 4, seed: 1 },
    {
      wall: () => (wall += 10_000_000n),
      cpu: () => (cpu += 4_000),
    },
  );
  assert.deepEqual([r.format, r.adapter_modules, r.adapter_ranks, r.gen_tokens], ['mlx', 16, [8], 4]);
  assert.equal(r.base_decode_tok_s, 100);
  assert.equal(r.adapter_decode_tok_s, 100);
  assert.equal(r.overhead, 0);
  assert.ok(r.adapter_bytes > 0);
  assert.deepEqual([r.base_cpu_ms_per_token, r.adapter_cpu_ms_per_token, r.cpu_overhead], [4, 4, 0]);

  const cli = await runCli(
    ['bench', 'lora', '--model', dir, '--adapter', adapter, '--prompt', '4', '--gen', '2', '--json'],
    {},
    { timeoutMs: 60_000 },
  );
  assert.equal(cli.code, 0, cli.stderr);
  const out = JSON.parse(cli.stdout) as Record<string, unknown>;
  for (const k of ['base_decode_tok_s', 'adapter_decode_tok_s', 'overhead', 'cpu_overhead', 'adapter_bytes'])
    assert.ok(k in out, `${k} in ${cli.stdout}`);
  const bad = await runCli(['bench', 'lora', '--model', dir, '--adapter', `${adapter}/nope`]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /adapter path .*nope does not exist/);
});
