// Runs the native op test (build/Release/brainstem-native-tests): every op of every compiled
// kernel set against the reference, the hand-computed cases, and the format parsers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';

const binary = join(repoRoot, 'build', 'Release', 'brainstem-native-tests');

test('native op and format tests pass', (t) => {
  assert.ok(existsSync(binary), `${binary} missing; run npm run build:native`);
  const r = spawnSync(binary, [], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `brainstem-native-tests failed:\n${r.stdout}\n${r.stderr}`);
  // The kernel sets that ran, and cases or sets that cannot run here (no GPU, no AVX-512), with the reason.
  for (const line of r.stdout.split('\n'))
    if (/^(skip |# kernel set)/.test(line)) t.diagnostic(line.replace(/^# /, ''));
  const summary = /# cases (\d+), failed (\d+)/.exec(r.stdout);
  assert.ok(summary, `no summary line in:\n${r.stdout}`);
  assert.ok(Number(summary[1]) >= 30, `expected ≥ 30 cases, ran ${summary[1]}`);
  assert.equal(Number(summary[2]), 0);
});

test('native op test reports a filter that matches nothing', () => {
  const r = spawnSync(binary, ['no-such-case'], { encoding: 'utf8' });
  assert.equal(r.status, 2, r.stdout);
});

test('op bench prints one JSON record per op and kernel set', () => {
  const r = spawnSync(binary, ['--bench'], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, r.stderr);
  const rows = JSON.parse(r.stdout) as { op: string; backend: string; median_us: number; gb_s: number }[];
  const ops = new Set(rows.filter((x) => x.backend === 'cpu-ref').map((x) => x.op));
  for (const op of [
    'qmatvec',
    'qmatmul',
    'dense_matmul',
    'gather_matmul',
    'embed',
    'rmsnorm',
    'rope',
    'attention',
    'route_softmax_topk',
    'route_sigmoid_group',
    'silu_mul',
    'add',
    'lora_delta',
  ]) {
    assert.ok(ops.has(op), `bench lacks ${op}: ${r.stdout}`);
  }
  for (const x of rows) assert.ok(x.median_us > 0 && Number.isFinite(x.gb_s), JSON.stringify(x));
});
