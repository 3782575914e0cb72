// The arm64 kernel sets on an x86 machine: test/device/neon-check.sh cross-compiles the native
// tests for aarch64 and runs them under qemu-aarch64 -cpu max, requiring cpu-neon and
// cpu-neon-dotprod. Skipped (with the reason) without the cross tools, failed when CI=true
// (.ci/run installs them); on an arm64 host the native tests run the NEON sets directly.
// BRAINSTEM_TEST_ARM64=0 skips it for a quicker local run (a cold cross build is minutes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';

const script = join(repoRoot, 'test', 'device', 'neon-check.sh');
const onPath = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;

test('arm64 kernel sets pass under qemu-aarch64', (t) => {
  if (process.arch === 'arm64') return t.skip('arm64 host: the native op tests run the NEON sets directly');
  if (process.env.BRAINSTEM_TEST_ARM64 === '0') return t.skip('BRAINSTEM_TEST_ARM64=0');
  const missing = ['aarch64-linux-gnu-g++', 'qemu-aarch64'].filter((tool) => !onPath(tool));
  if (missing.length > 0) {
    if (process.env.CI === 'true') throw new Error(`CI=true but ${missing.join(', ')} missing (.ci/run installs them)`);
    return t.skip(`${missing.join(', ')} not installed (apt-get install g++-aarch64-linux-gnu qemu-user)`);
  }
  // Niced: a cold cross build takes minutes of CPU, and timing-sensitive tests run beside it.
  const r = spawnSync('nice', ['-n', '10', 'bash', script], { encoding: 'utf8', timeout: 1_800_000 });
  assert.equal(
    r.status,
    0,
    `neon-check failed (status ${r.status}, ${r.signal ?? 'no signal'}):\n${r.stdout}\n${r.stderr}`,
  );
  for (const line of r.stdout.split('\n'))
    if (/^(skip |# kernel set)/.test(line)) t.diagnostic(line.replace(/^# /, ''));
  const summary = /# cases (\d+), failed (\d+).*/.exec(r.stdout);
  assert.ok(summary, `no summary line in:\n${r.stdout}`);
  assert.match(r.stdout, /# kernel sets run: .*cpu-neon cpu-neon-dotprod/);
  assert.equal(Number(summary[2]), 0);
  t.diagnostic(`qemu-aarch64 -cpu max: ${summary[0].slice(2)}`);
});
