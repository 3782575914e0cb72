// bench compare's llama.cpp arms without building anything: the cache key from /proc/cpuinfo, the
// build steps and their cache (an injected runner plays git, cmake and llama-bench), llama-bench's
// JSON, the arm's command lines, the choice of arms (native, a path, refusals) and a whole
// comparison of our engine on a tiny model against a scripted native llama-bench.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { llamaBenchPath, runCompareBench } from '../../../daemon/bench/compare-bench.js';
import { llamaBenchArm, parseLlamaBenchJson } from '../../../daemon/bench/llama-bench-arm.js';
import {
  AVX2_CMAKE_ARGS,
  CMAKE_ARGS,
  cpuKey,
  ensureNativeLlama,
  hostCpuKey,
  type Runner,
} from '../../../daemon/bench/llama-build.js';
import { tempDir } from '../../helpers/temp.js';
import { synthTemp } from '../../native/helpers/model-files.js';

const COMMIT = 'de3ff815ea7d559ee917f063901b8986f038abc6';
const X86 = 'processor\t: 0\nflags\t\t: fpu sse4_2 avx f16c fma bmi2 avx2 avx512f avx512_vnni sha_ni\n';
const AVX2 = 'processor\t: 0\nflags\t\t: fpu sse4_2 avx f16c fma bmi2 avx2\nprocessor\t: 1\nflags\t\t: avx512f\n';

test('the cache key lists the instruction sets llama.cpp can use that this CPU has', () => {
  assert.equal(cpuKey(AVX2, 'x64'), 'x86_64-avx-avx2-bmi2-f16c-fma', 'the first processor only');
  assert.equal(cpuKey(X86, 'x64'), 'x86_64-avx-avx2-avx512_vnni-avx512f-bmi2-f16c-fma');
  assert.equal(cpuKey('Features\t: fp asimd asimddp i8mm atomics\n', 'arm64'), 'arm64-asimd-asimddp-i8mm');
  assert.equal(cpuKey('', 'arm64'), 'arm64');
});

/** A runner playing git and cmake: "builds" write the binary; `fail` makes that step fail. */
function fakeTools(fail?: string) {
  const calls: string[] = [];
  const run: Runner = async (cmd, args, opts = {}) => {
    const line = `${cmd} ${args.join(' ')}`;
    calls.push(line);
    if (fail && line.includes(fail)) return { code: 2, stdout: '', stderr: `${fail} broke` };
    if (line.startsWith('git bundle list-heads')) return { code: 0, stdout: `${COMMIT} HEAD\n`, stderr: '' };
    if (line.includes('--target llama-bench')) {
      mkdirSync(join(opts.cwd!, 'build', 'bin'), { recursive: true });
      writeFileSync(join(opts.cwd!, 'build', 'bin', 'llama-bench'), '');
    }
    return { code: 0, stdout: '', stderr: '' };
  };
  return { run, calls };
}

/** A data_dir for builds and an empty bundle file (fakeTools plays the tools that read it). */
function cacheFixture(t: { after(fn: () => void): void }) {
  const data = tempDir('bs-llama-cache-');
  t.after(() => data.remove());
  const bundle = join(data.path, 'gitRelease.bundle');
  writeFileSync(bundle, '');
  return { data, bundle };
}

test('native llama.cpp: cloned from the bundle, configured for this CPU, only llama-bench built, then cached', async (t) => {
  const { data, bundle } = cacheFixture(t);
  const first = fakeTools();
  const built = await ensureNativeLlama({ dataDir: data.path, bundle, run: first.run, cpuinfo: AVX2, arch: 'x64' });
  const dir = join(data.path, 'llama.cpp', 'de3ff815ea7d-x86_64-avx-avx2-bmi2-f16c-fma');
  assert.deepEqual(built, {
    binary: join(dir, 'build', 'bin', 'llama-bench'),
    dir,
    commit: COMMIT,
    cpu: 'x86_64-avx-avx2-bmi2-f16c-fma',
    cached: false,
  });
  assert.deepEqual(first.calls, [
    `git bundle list-heads ${bundle}`,
    `git clone --quiet ${bundle} src`,
    `cmake -S src -B build ${CMAKE_ARGS.join(' ')}`,
    'cmake --build build --target llama-bench -j 2',
  ]);
  assert.ok(CMAKE_ARGS.includes('-DGGML_NATIVE=ON') && CMAKE_ARGS.includes('-DCMAKE_BUILD_TYPE=Release'));
  assert.ok(existsSync(built.binary) && !existsSync(`${dir}.partial`));

  const again = fakeTools();
  const second = await ensureNativeLlama({ dataDir: data.path, bundle, run: again.run, cpuinfo: AVX2, arch: 'x64' });
  assert.equal(second.cached, true);
  assert.equal(second.binary, built.binary);
  assert.deepEqual(again.calls, [`git bundle list-heads ${bundle}`], 'a second run reuses the build');

  const other = fakeTools();
  const wider = await ensureNativeLlama({ dataDir: data.path, bundle, run: other.run, cpuinfo: X86, arch: 'x64' });
  assert.equal(wider.cached, false, 'another CPU builds its own');
  assert.notEqual(wider.dir, dir);
});

test('native-avx2: AVX2 and nothing wider, cached apart from the native build; refused where the CPU lacks it', async (t) => {
  const { data, bundle } = cacheFixture(t);
  const tools = fakeTools();
  const built = await ensureNativeLlama({
    dataDir: data.path,
    bundle,
    run: tools.run,
    cpuinfo: X86,
    arch: 'x64',
    isa: 'avx2',
  });
  assert.equal(built.cpu, 'x86_64-avx-avx2-bmi2-f16c-fma-only');
  assert.equal(built.dir, join(data.path, 'llama.cpp', 'de3ff815ea7d-x86_64-avx-avx2-bmi2-f16c-fma-only'));
  assert.equal(tools.calls[2], `cmake -S src -B build ${AVX2_CMAKE_ARGS.join(' ')}`);
  for (const a of ['-DGGML_NATIVE=OFF', '-DGGML_AVX2=ON', '-DGGML_FMA=ON', '-DGGML_AVX512=OFF'])
    assert.ok(AVX2_CMAKE_ARGS.includes(a), a);
  assert.ok(!AVX2_CMAKE_ARGS.includes('-DGGML_NATIVE=ON'));
  const native = await ensureNativeLlama({
    dataDir: data.path,
    bundle,
    run: fakeTools().run,
    cpuinfo: X86,
    arch: 'x64',
  });
  assert.notEqual(native.dir, built.dir);
  const noAvx2 = 'processor\t: 0\nflags\t\t: fpu sse4_2 avx f16c\n';
  await assert.rejects(
    ensureNativeLlama({ dataDir: data.path, bundle, run: fakeTools().run, cpuinfo: noAvx2, arch: 'x64', isa: 'avx2' }),
    /needs an x86-64 CPU with avx, avx2, bmi2, f16c, fma; this one \(x86_64-avx-f16c\) lacks avx2, bmi2, fma/,
  );
  await assert.rejects(
    ensureNativeLlama({
      dataDir: data.path,
      bundle,
      run: fakeTools().run,
      cpuinfo: 'Features\t: fp asimd\n',
      arch: 'arm64',
      isa: 'avx2',
    }),
    /lacks x86-64/,
  );
});

test('a failed build names its step and is not taken as cached', async (t) => {
  const { data, bundle } = cacheFixture(t);
  const broken = fakeTools('--target llama-bench');
  await assert.rejects(
    ensureNativeLlama({ dataDir: data.path, bundle, run: broken.run, cpuinfo: AVX2, arch: 'x64' }),
    /building llama.cpp failed at "build llama-bench" \(exit 2\): --target llama-bench broke/,
  );
  const retry = fakeTools();
  const r = await ensureNativeLlama({ dataDir: data.path, bundle, run: retry.run, cpuinfo: AVX2, arch: 'x64' });
  assert.equal(r.cached, false);
  assert.equal(retry.calls.length, 4, 'built from the start again');
  await assert.rejects(
    ensureNativeLlama({ dataDir: data.path, bundle: join(data.path, 'nope.bundle'), run: retry.run }),
    /the llama.cpp source bundle .*nope\.bundle does not exist/,
  );
});

const benchJson = (tests: { p: number; n: number; d: number; ns: number }[]) =>
  JSON.stringify(
    tests.map((t) => ({
      build_commit: 'de3ff81',
      model_type: 'qwen3moe ?B Q4_0',
      n_threads: 2,
      n_prompt: t.p,
      n_gen: t.n,
      n_depth: t.d,
      avg_ns: t.ns,
      avg_ts: ((t.p + t.n) * 1e9) / t.ns,
      samples_ns: [t.ns],
    })),
  );

test("llama-bench's JSON: each test's prompt, generation, depth and mean time; anything else is refused", () => {
  assert.deepEqual(parseLlamaBenchJson(benchJson([{ p: 128, n: 0, d: 0, ns: 5e8 }])), [
    { nPrompt: 128, nGen: 0, nDepth: 0, avgNs: 5e8 },
  ]);
  assert.throws(() => parseLlamaBenchJson('main: error'), /llama-bench printed no JSON/);
  assert.throws(() => parseLlamaBenchJson('[]'), /expected a non-empty array/);
  assert.throws(
    () => parseLlamaBenchJson('[{"n_prompt": 1, "n_gen": 0, "avg_ns": "fast"}]'),
    /test 0: avg_ns must be a non-negative number, got "fast"/,
  );
});

/** A runner playing llama-bench: answers each -p/-n/-d test with a time of 1 ms per token. */
function fakeBench(calls: string[][]): Runner {
  return async (_cmd, args) => {
    calls.push([...args]);
    const at = (flag: string) => Number(args[args.indexOf(flag) + 1]);
    const [p, n, d] = [at('-p'), at('-n'), at('-d')];
    return { code: 0, stdout: benchJson([{ p, n, d, ns: (p + n) * 1e6 }]), stderr: '' };
  };
}

test('the llama-bench arm times prefill from an empty cache and decode after the prompt', async () => {
  const calls: string[][] = [];
  const arm = llamaBenchArm({
    name: 'native',
    binary: '/x/llama-bench',
    gguf: 'm.gguf',
    threads: 2,
    kvCache: 'f16',
    run: fakeBench(calls),
  });
  assert.deepEqual(await arm.run(new Array(128).fill(1), 64), { prefillS: 0.128, decodeS: 0.064 });
  assert.deepEqual(await arm.run(new Array(512).fill(1), 0), { prefillS: 0.512, decodeS: 0 });
  const common = ['-r', '1', '-ngl', '0', '-fa', 'off', '-ctk', 'f16', '-ctv', 'f16', '-o', 'json'];
  assert.deepEqual(calls, [
    ['-m', 'm.gguf', '-t', '2', '-p', '128', '-n', '0', '-d', '0', ...common],
    ['-m', 'm.gguf', '-t', '2', '-p', '0', '-n', '64', '-d', '128', ...common],
    ['-m', 'm.gguf', '-t', '2', '-p', '512', '-n', '0', '-d', '0', ...common],
  ]);
  const failing = llamaBenchArm({
    name: 'native',
    binary: '/x/llama-bench',
    gguf: 'm.gguf',
    threads: 2,
    kvCache: 'f16',
    run: async () => ({ code: 1, stdout: '', stderr: 'error: failed to load model' }),
  });
  await assert.rejects(failing.run([1, 2], 1), /exited 1: error: failed to load model/);
});

test('--llama paths: a binary, a build folder; libraries and folders without llama-bench are refused', (t) => {
  const d = tempDir('bs-llama-path-');
  t.after(() => d.remove());
  const bin = join(d.path, 'build', 'bin', 'llama-bench');
  mkdirSync(join(d.path, 'build', 'bin'), { recursive: true });
  writeFileSync(bin, '');
  chmodSync(bin, 0o755);
  assert.equal(llamaBenchPath(bin), bin);
  assert.equal(llamaBenchPath(d.path), bin);
  writeFileSync(join(d.path, 'libllama.so'), '');
  assert.throws(() => llamaBenchPath(join(d.path, 'libllama.so')), /is a library; give a llama-bench binary/);
  assert.throws(() => llamaBenchPath(join(d.path, 'build', 'bin', 'nope')), /does not exist/);
  mkdirSync(join(d.path, 'empty'));
  assert.throws(() => llamaBenchPath(join(d.path, 'empty')), /folder without bin\/llama-bench/);
});

test('compare --llama native: our engine against the cached native build at two prompt lengths', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 12 });
  const data = tempDir('bs-llama-data-');
  t.after(() => data.remove());
  const bin = join(data.path, 'llama.cpp', `${COMMIT.slice(0, 12)}-${hostCpuKey()}`, 'build', 'bin');
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'llama-bench'), '');
  const calls: string[][] = [];
  const tools = fakeTools();
  const run: Runner = (cmd, args, o) => (cmd === 'git' ? tools.run(cmd, args, o) : fakeBench(calls)(cmd, args, o));
  const r = await runCompareBench(
    {
      model: dir,
      threads: 2,
      prompts: [8, 16],
      gen: 4,
      rounds: 2,
      seed: 1,
      kvCache: 'f16',
      llama: ['native'],
      dataDir: data.path,
      run,
    },
    async () => 10,
  );
  assert.equal(r.llama_cpp.name, 'native');
  assert.deepEqual(r.llama_cpp.prefill_by_prompt, { '8': 1000, '16': 1000 });
  assert.equal(r.llama_cpp.decode_tok_s, 1000);
  assert.deepEqual(Object.keys(r.brainstem.prefill_by_prompt), ['8', '16']);
  // The untimed warm-up (prefill 8, one decode step), then per round: prefill 8, decode after 8, prefill 16.
  assert.equal(calls.length, 8, 'warm-up: prefill 8, decode after 8; per round: prefill 8, decode after 8, prefill 16');
  assert.deepEqual(
    calls.slice(0, 2).map((a) => a.slice(4, 10)),
    [
      ['-p', '8', '-n', '0', '-d', '0'],
      ['-p', '0', '-n', '1', '-d', '8'],
    ],
  );
  assert.ok(r.decode_ratio > 0 && r.llama_cpp.prefill_ratio_by_prompt['16']! > 0, JSON.stringify(r));
  assert.deepEqual(
    tools.calls.map((c) => c.split(' ').slice(0, 3).join(' ')),
    ['git bundle list-heads'],
    'cached: no build',
  );
});
