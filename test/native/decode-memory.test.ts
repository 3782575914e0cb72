// A warm decode step allocates nothing and grows no anonymous memory, with every fast CPU kernel
// set (the GPU sets stage operands per call) and 1 or 2 threads, on the exact expert path and on
// the staged and hot paths: brainstem-native-tests --decode-probe counts operator new calls (all
// threads) and reads RssAnon around a pass of greedy decode steps of a synthetic model, replayed
// after two warm-up passes over the same tokens. The KV cache stays within its first
// reservation, so any allocation per token shows exactly; RssAnon may move by a couple of pages
// (a thread's stack reaching a new page once), far below one buffer per token (48 × ≥ 4 KiB).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { loadNative } from '../../daemon/native/binding.js';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { synthTemp } from './helpers/model-files.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');
const FAST = loadNative()
  .info()
  .kernelSets.filter((k) => k.usable && k.name.startsWith('cpu-') && k.name !== 'cpu-ref')
  .map((k) => k.name);

interface Probe {
  backend: string;
  allocations: number;
  rss_anon_before: number;
  rss_anon_after: number;
  last_token: number;
}

function probe(dir: string, backend: string, threads: number, tokens: number, path = 'exact'): Probe {
  const r = spawnSync(binary, ['--decode-probe', dir, backend, String(threads), String(tokens), path], {
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `decode probe ${backend} × ${threads} failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as Probe;
}

test('warm decode steps allocate nothing and keep RssAnon flat (fast kernel sets, 1 and 2 threads)', {
  skip: FAST.length === 0 ? 'no fast kernel set is usable on this CPU' : false,
}, (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe', 'qwen3_5_moe', 'bailing_moe_linear'] as const) {
    const dir = synthTemp(t, { arch, seed: 5 });
    for (const backend of FAST) {
      for (const threads of [1, 2]) {
        const p = probe(dir, backend, threads, 48);
        const what = `${arch} ${backend} × ${threads} threads`;
        assert.equal(p.backend, backend);
        assert.equal(p.allocations, 0, `${what}: ${p.allocations} heap allocations in 48 decode steps`);
        const grew = p.rss_anon_after - p.rss_anon_before;
        assert.ok(p.rss_anon_before > 0 && grew <= 8192, `${what}: RssAnon grew by ${grew} bytes over 48 decode steps`);
      }
    }
  }
});

test('the staged and hot expert paths allocate nothing either once every routed expert is in a slot', {
  skip: FAST.length === 0 ? 'no fast kernel set is usable on this CPU' : false,
}, (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 5 });
  for (const path of ['staged', 'hot']) {
    const p = probe(dir, FAST[FAST.length - 1]!, 2, 24, path);
    assert.equal(p.allocations, 0, `${path}: ${p.allocations} heap allocations in 24 decode steps`);
    const grew = p.rss_anon_after - p.rss_anon_before;
    assert.ok(grew <= 8192, `${path}: RssAnon grew by ${grew} bytes over 24 decode steps`);
  }
});

test('the probe sees allocations where they happen: the reference kernels allocate per call', (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 5 });
  const p = probe(dir, 'cpu-ref', 1, 4);
  assert.ok(p.allocations > 0, `cpu-ref decode allocated ${p.allocations} times; the counter is not counting`);
});
