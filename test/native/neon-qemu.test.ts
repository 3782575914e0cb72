// The arm64 kernel sets on an x86 machine: test/device/neon-check.sh cross-compiles the native
// tests for aarch64 (with GCC, then with clang) and runs them under qemu-aarch64 -cpu max,
// requiring cpu-neon, cpu-neon-dotprod and cpu-neon-i8mm; then the GCC binary's decode probe
// runs synthetic models on each NEON set.
// Skipped (with the reason) without the cross tools, failed when CI=true (.ci/run installs
// them); on an arm64 host the native tests run the NEON sets directly.
// BRAINSTEM_TEST_ARM64=0 skips it for a quicker local run (a cold cross build is minutes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { synthTemp } from './helpers/model-files.js';

const script = join(repoRoot, 'test', 'device', 'neon-check.sh');
const binary = join(repoRoot, 'build-arm64', 'brainstem-native-tests');
const onPath = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const NEON = ['cpu-neon', 'cpu-neon-dotprod', 'cpu-neon-i8mm'];

/** Why the check cannot run here (undefined: it can); throws under CI=true when the tools are missing. */
function skipReason(): string | undefined {
  if (process.arch === 'arm64') return 'arm64 host: the native tests run the NEON sets directly';
  if (process.env.BRAINSTEM_TEST_ARM64 === '0') return 'BRAINSTEM_TEST_ARM64=0';
  const missing = ['aarch64-linux-gnu-g++', 'qemu-aarch64'].filter((tool) => !onPath(tool));
  if (missing.length === 0) return undefined;
  if (process.env.CI === 'true') throw new Error(`CI=true but ${missing.join(', ')} missing (.ci/run installs them)`);
  return `${missing.join(', ')} not installed (apt-get install g++-aarch64-linux-gnu qemu-user)`;
}

/** neon-check.sh with `env` added, niced (a cold cross build takes minutes of CPU, and
 *  timing-sensitive tests run beside it); asserts every case passes on the three NEON sets. */
function neonCheck(t: { diagnostic(m: string): void }, env: Record<string, string>): void {
  const r = spawnSync('nice', ['-n', '10', 'bash', script], {
    encoding: 'utf8',
    timeout: 1_800_000,
    env: { ...process.env, ...env },
  });
  assert.equal(
    r.status,
    0,
    `neon-check failed (status ${r.status}, ${r.signal ?? 'no signal'}):\n${r.stdout}\n${r.stderr}`,
  );
  for (const line of r.stdout.split('\n'))
    if (/^(skip |# kernel set)/.test(line)) t.diagnostic(line.replace(/^# /, ''));
  const summary = /# cases (\d+), failed (\d+).*/.exec(r.stdout);
  assert.ok(summary, `no summary line in:\n${r.stdout}`);
  assert.match(r.stdout, /# kernel sets run: .*cpu-neon cpu-neon-dotprod cpu-neon-i8mm/);
  assert.equal(Number(summary[2]), 0);
  t.diagnostic(`qemu-aarch64 -cpu max: ${summary[0].slice(2)}`);
}

test('arm64 kernel sets pass the native tests under qemu-aarch64', (t) => {
  const why = skipReason();
  if (why) return t.skip(why);
  neonCheck(t, {});
});

// Apple's compiler is a clang: the same cases built with clang catch what GCC accepts and it
// does not (lambdas capturing structured bindings before clang 16) or compiles differently
// (floating-point contraction).
test('arm64 kernel sets built with clang pass the native tests under qemu-aarch64', (t) => {
  const why = skipReason();
  if (why) return t.skip(why);
  const clang = ['clang', 'clang-16', 'clang-15', 'clang-14'].find(onPath);
  if (!clang) {
    if (process.env.CI === 'true') throw new Error('CI=true but clang missing (.ci/run installs it)');
    return t.skip('clang not installed (apt-get install clang)');
  }
  neonCheck(t, { NEON_CC: 'clang', CLANG: clang });
});

interface Probe {
  backend: string;
  allocations: number;
  last_token: number;
}

function probe(dir: string, backend: string, threads: number, path: string): Probe {
  const args = ['-cpu', 'max', binary, '--decode-probe', dir, backend, String(threads), '16', path];
  const r = spawnSync('nice', ['-n', '10', 'qemu-aarch64', ...args], { encoding: 'utf8', timeout: 300_000 });
  assert.equal(r.status, 0, `decode probe ${backend} ${path} × ${threads} failed:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(r.stdout) as Probe;
}

// As accel-model.test.ts does for the GPU sets, and decode-memory.test.ts for the x86 sets.
test('greedy decode on each NEON set under qemu-aarch64 ends on cpu-ref’s token, allocating nothing (qwen3_moe, glm4_moe; exact, staged, hot)', (t) => {
  const why = skipReason();
  if (why) return t.skip(why);
  assert.ok(existsSync(binary), `${binary} missing: the cross build above failed`);
  for (const arch of ['qwen3_moe', 'glm4_moe'] as const) {
    const dir = synthTemp(t, { arch, seed: 7 });
    for (const path of ['exact', 'staged', 'hot']) {
      const want = probe(dir, 'cpu-ref', 1, path).last_token;
      for (const backend of NEON) {
        for (const threads of path === 'exact' ? [1, 2] : [2]) {
          const p = probe(dir, backend, threads, path);
          const what = `${arch} ${path} ${backend} × ${threads} threads`;
          assert.equal(p.backend, backend, what);
          assert.equal(p.last_token, want, `${what}: diverges from cpu-ref`);
          assert.equal(p.allocations, 0, `${what}: ${p.allocations} heap allocations in 16 decode steps`);
        }
      }
    }
  }
});
