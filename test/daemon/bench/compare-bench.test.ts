// bench compare: the report's arithmetic on scripted arms (medians, ratios, roofline
// fractions, arms taking turns, one prompt for all, prefill per prompt length), a real run of our
// engine against llama.cpp (node-llama-cpp's prebuilt CPU binary) on tiny 4- and 8-bit models and
// their GGUF Q4_0 / Q8_0 exports, and the CLI's argument errors. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  median,
  runCompareBench,
  type ArmTiming,
  type BenchArm,
  type OurArm,
} from '../../../daemon/bench/compare-bench.js';
import { runCli } from '../../helpers/daemon.js';
import { synthTemp } from '../../native/helpers/model-files.js';

function scripted(
  name: string,
  timings: ArmTiming[],
  calls: string[],
  prompts: number[][],
  warmups: string[] = [],
): BenchArm {
  let i = 0;
  return {
    name,
    async run(prompt, gen) {
      if (gen === 1) {
        // The untimed warm-up: once per arm, before every timed run.
        assert.equal(calls.length, 0, `${name}'s warm-up comes before the timed rounds`);
        warmups.push(name);
        return { prefillS: 1e9, decodeS: 1e9 };
      }
      calls.push(name);
      prompts.push(prompt);
      assert.equal(gen, prompt.length === 16 ? 10 : 0, 'decode follows the first prompt length only');
      if (prompt.length !== 16) return { prefillS: prompt.length / 100, decodeS: 0 };
      return timings[i++]!;
    },
    async dispose() {},
  };
}

/** A scripted arm as our engine's, on a 1 MB model (so warm-ups default to once per arm). */
function asOurs(arm: BenchArm): OurArm {
  return {
    ...arm,
    backend: 'cpu-test',
    activationBits: 16,
    prefillChunk: 512,
    vocab: 50,
    fileBytes: 1e6,
    activeBytes: () => 1e9,
  };
}

test('compare reports medians per arm, ratios and roofline fractions, alternating which arm runs first', async () => {
  const calls: string[] = [];
  const prompts: number[][] = [];
  const warmups: string[] = [];
  const ours = asOurs(
    scripted(
      'brainstem',
      [
        { prefillS: 1, decodeS: 1 },
        { prefillS: 0.5, decodeS: 0.25 },
        { prefillS: 2, decodeS: 0.5 },
      ],
      calls,
      prompts,
      warmups,
    ),
  );
  const llama = scripted(
    'llama.cpp',
    [
      { prefillS: 4, decodeS: 2 },
      { prefillS: 4, decodeS: 1 },
      { prefillS: 1, decodeS: 4 },
    ],
    calls,
    prompts,
    warmups,
  );
  const bw = [20, 30, 10];
  const r = await runCompareBench(
    { model: 'm', threads: 2, prompts: [16, 64], gen: 10, rounds: 3, seed: 4, kvCache: 'f16' },
    async () => bw.shift()!,
    { ours, llama: [llama] },
  );
  assert.deepEqual(warmups, ['brainstem', 'llama.cpp'], 'each arm warms up once, untimed');
  const order = calls.filter((_, i) => i % 2 === 0);
  assert.deepEqual(order, ['brainstem', 'llama.cpp', 'llama.cpp', 'brainstem', 'brainstem', 'llama.cpp']);
  const at16 = prompts.filter((p) => p.length === 16);
  for (const p of at16) assert.deepEqual(p, at16[0], 'every arm gets the same prompt every round');
  for (const p of prompts.filter((x) => x.length === 64)) assert.deepEqual(p.slice(0, 16), at16[0]);
  assert.equal(prompts.length, 12);
  assert.deepEqual(r.prompt_tokens, [16, 64]);
  assert.deepEqual(r.brainstem.prefill_by_prompt, { '16': 16, '64': 100 });
  assert.deepEqual(r.llama_cpp.prefill_ratio_by_prompt, { '16': 4, '64': 1 });
  assert.equal(r.llama_arms.length, 1);
  assert.equal(r.llama_cpp.name, 'llama.cpp');
  assert.ok(prompts[0]!.every((t) => Number.isInteger(t) && t >= 0 && t < 50));
  assert.deepEqual(r.brainstem.decode_rounds, [10, 40, 20]);
  assert.equal(r.brainstem.decode_tok_s, 20);
  assert.equal(r.brainstem.prefill_tok_s, 16);
  assert.deepEqual(r.llama_cpp.decode_rounds, [5, 10, 2.5]);
  assert.equal(r.llama_cpp.decode_tok_s, 5);
  assert.equal(r.llama_cpp.prefill_tok_s, 4);
  assert.equal(r.decode_ratio, 4);
  assert.equal(r.prefill_ratio, 4);
  assert.equal(r.membw_gb_s, 20);
  assert.equal(r.active_bytes_per_token, 1e9);
  assert.equal(r.roofline_decode_tok_s, 20);
  assert.equal(r.brainstem.decode_roofline_fraction, 1);
  assert.equal(r.llama_cpp.decode_roofline_fraction, 0.25);
  assert.equal(r.backend, 'cpu-test');
  assert.equal(r.prefill_chunk, 512);
  assert.equal(r.warm_each, false, 'a 1 MB model and no GGUF fit in memory twice: one warm-up per arm');
  assert.equal(median([3, 1, 2, 10]), 2.5);
});

test('compare with warmEach warms every arm right before its timed runs in every round', async () => {
  const events: string[] = [];
  const recorder = (name: string): BenchArm => ({
    name,
    async run(prompt, gen) {
      events.push(`${gen === 1 ? 'warm' : 'time'} ${name} ${prompt.length}`);
      return { prefillS: 1, decodeS: 1 };
    },
    async dispose() {},
  });
  const ours = asOurs(recorder('brainstem'));
  const r = await runCompareBench(
    { model: 'm', threads: 2, prompts: [16, 64], gen: 10, rounds: 2, seed: 4, kvCache: 'f16', warmEach: true },
    async () => 10,
    { ours, llama: [recorder('llama.cpp')] },
  );
  assert.equal(r.warm_each, true);
  assert.deepEqual(events, [
    'warm brainstem 16',
    'time brainstem 16',
    'time brainstem 64',
    'warm llama.cpp 16',
    'time llama.cpp 16',
    'time llama.cpp 64',
    'warm llama.cpp 16',
    'time llama.cpp 16',
    'time llama.cpp 64',
    'warm brainstem 16',
    'time brainstem 16',
    'time brainstem 64',
  ]);
});

for (const [bits, type] of [
  [4, 'q4_0'],
  [8, 'q8_0'],
] as const) {
  test(`compare runs our engine and llama.cpp on a tiny ${bits}-bit model, exporting the GGUF ${type} when missing`, async (t) => {
    const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 12, bits });
    const lines: string[] = [];
    const r = await runCompareBench(
      { model: dir, threads: 2, prompts: [8], gen: 4, rounds: 2, seed: 1, kvCache: 'f16', log: (l) => lines.push(l) },
      async () => 10,
    );
    assert.equal(r.gguf, join(dir, `model-${type}.gguf`));
    assert.ok(existsSync(r.gguf));
    assert.ok(!existsSync(`${r.gguf}.partial`), 'the export is written beside and renamed');
    assert.ok(
      lines.some((l) => l.includes(`GGUF ${type.toUpperCase()} export`)),
      lines.join('\n'),
    );
    for (const arm of [r.brainstem, r.llama_cpp]) {
      assert.equal(arm.decode_rounds.length, 2);
      assert.ok(
        arm.decode_tok_s > 0 && arm.prefill_tok_s > 0 && Number.isFinite(arm.decode_roofline_fraction),
        JSON.stringify(arm),
      );
    }
    assert.ok(r.active_bytes_per_token > 0 && r.decode_ratio > 0 && r.prefill_ratio > 0, JSON.stringify(r));
  });
}

test('bench compare CLI: bad options exit 2, a missing GGUF or a folder exits 1 naming it', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 13 });
  const bad = await runCli(['bench', 'compare', '--model', dir, '--kv-cache', 'q8']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--kv-cache must be f16 or f32, got "q8"/);
  const rounds = await runCli(['bench', 'compare', '--model', dir, '--rounds', '0']);
  assert.equal(rounds.code, 2);
  assert.match(rounds.stderr, /--rounds must be an integer in \[1, 1000\], got "0"/);
  const missing = await runCli(['bench', 'compare', '--model', dir, '--gguf', join(dir, 'nope.gguf'), '--json']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /--gguf .*nope\.gguf does not exist/);
  const folder = await runCli(['bench', 'compare', '--model', dir, '--gguf', dir, '--json']);
  assert.equal(folder.code, 1);
  assert.match(folder.stderr, /--gguf .* is not a file \(a \.gguf file is expected\)/);
  assert.doesNotMatch(folder.stderr, /unexpected error|at async/);
});
