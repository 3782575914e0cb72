// The native code under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer:
// test/device/sanitize-check.sh builds brainstem-native-tests with -fsanitize=address,undefined
// (build-asan/; clang and libc++ where installed, as .ci/run does) and runs every case; then that binary's probes drive the engine's decode paths
// (exact, staged with I/O threads, hot), the emulated CUDA decoder with expert slots and a
// prerouter (and its refusals at set-up), and CUDA and Metal sessions (an injected device
// failure; seeded random calls with images on a hybrid) on synthetic models. Any sanitizer
// report fails it.
// BRAINSTEM_TEST_SANITIZE=0 skips it for a quicker local run (the build takes minutes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '../../daemon/util/repo-root.js';
import { rewriteExperts } from './helpers/expert-layouts.js';
import { synthTemp } from './helpers/model-files.js';

const script = join(repoRoot, 'test', 'device', 'sanitize-check.sh');
const binary = join(repoRoot, 'build-asan', 'brainstem-native-tests');
const env = {
  ...process.env,
  ASAN_OPTIONS: 'detect_leaks=1:fast_unwind_on_malloc=0',
  UBSAN_OPTIONS: 'print_stacktrace=1',
  BRAINSTEM_TEST_CUDA: '',
  BRAINSTEM_TEST_METAL: '',
};
const skip = process.env.BRAINSTEM_TEST_SANITIZE === '0' ? 'BRAINSTEM_TEST_SANITIZE=0' : undefined;
const report = /ERROR: (Address|Leak)Sanitizer|runtime error:/;

/** Runs the sanitized binary (niced: timing-sensitive tests run beside it); asserts no report
 *  and the exit status (1: a refusal, whose set-up must free what it took). */
function run(args: string[], status = 0): string {
  const r = spawnSync('nice', ['-n', '10', binary, ...args], { encoding: 'utf8', timeout: 600_000, env });
  const what = `brainstem-native-tests ${args.join(' ')}`;
  assert.doesNotMatch(r.stderr, report, `${what}: sanitizer report\n${r.stderr.slice(0, 6000)}`);
  assert.equal(r.status, status, `${what}: status ${r.status} (${r.signal ?? 'no signal'})\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

test('the native unit tests pass clean under AddressSanitizer, LeakSanitizer and UBSan', { skip }, (t) => {
  const r = spawnSync('nice', ['-n', '10', 'bash', script], { encoding: 'utf8', timeout: 1_800_000, env });
  assert.doesNotMatch(r.stderr, report, `sanitizer report:\n${r.stderr.slice(0, 6000)}`);
  assert.equal(r.status, 0, `sanitize-check failed (status ${r.status}):\n${r.stdout.slice(-4000)}\n${r.stderr}`);
  const summary = /# cases (\d+), failed (\d+).*/.exec(r.stdout);
  assert.ok(summary, `no summary line in:\n${r.stdout}`);
  assert.equal(Number(summary[2]), 0);
  t.diagnostic(summary[0].slice(2));
});

test('decode paths, the emulated CUDA decoder and device sessions run clean under the sanitizers', { skip }, (t) => {
  const moe = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  const hybrid = synthTemp(t, { arch: 'qwen3_5_moe', seed: 11 });
  for (const path of ['exact', 'staged', 'hot']) {
    const p = JSON.parse(run(['--decode-probe', moe, 'auto', '2', '16', path])) as { path: string };
    assert.equal(p.path, path);
  }
  run(['--decode-probe', hybrid, 'auto', '2', '16', 'exact']);
  run(['--cuda-decoder', moe, '4', 'slots6,zero']);
  // Decoders refusing at set-up: a cache larger than the device; experts not in one stack.
  run(['--cuda-decoder', moe, '1000000000'], 1);
  const perExpert = synthTemp(t, { arch: 'qwen3_moe', seed: 7 });
  rewriteExperts(perExpert, 'per-expert');
  run(['--cuda-decoder', perExpert, '2'], 1);
  run(['--metal-decoder', perExpert, '2'], 1);
  run(['--cuda-session', moe, '6', 'f32']);
  run(['--cuda-session', hybrid, '8', 'random=3']);
  run(['--metal-session', hybrid, '8', 'random=3']);
});
