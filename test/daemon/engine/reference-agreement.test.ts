// The native engine against the independent float64 TS reference forward on synthetic tiny
// models of every architecture (8 prompt tokens + 24 greedy steps), and the full round trip
// `models synth` → tokenizer → native engine → generate() → text.
//
// Tolerance: the engine keeps activations in float32 (ε = 6e-8) and dequantises in float32;
// the reference does everything in float64 from the same bf16/U32 bytes. Across the 4 layers of
// the tiny shape the float32 roundings add up to ~2e-6 on logits of magnitude ≤ 20 (measured);
// the bound 1e-5 × max(1, max|logit|) leaves ~5× headroom, while any real mistake (a RoPE pair,
// a routing weight, a bias, a scale sign) moves logits by 1e-2 or more. Greedy tokens must be
// identical (the tiny models' top-2 margins are far above 1e-5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generate, type GenerationResult } from '../../../daemon/engine/generate.js';
import { NativeModel, type GreedyResult } from '../../../daemon/engine/native-model.js';
import { loadNative } from '../../../daemon/native/binding.js';
import { PrefixSession } from '../../../daemon/engine/prefix-cache.js';
import { DEFAULT_SAMPLING, Sampler } from '../../../daemon/engine/sampler.js';
import { TextTokenizer } from '../../../daemon/engine/tokenizer.js';
import { referenceForward, referenceGreedy } from '../../../daemon/tools/reference/forward.js';
import type { Arch, SpecOverrides } from '../../../daemon/tools/synth-shapes.js';
import { Prng } from '../../../robot/common/prng.js';
import { runCli } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { logitsDiff } from './logits-compare.js';

const CASES: [Arch, SpecOverrides, string][] = [
  ['qwen3_moe', {}, 'qwen3_moe'],
  ['qwen3_moe', { bits: 8 }, 'qwen3_moe 8-bit weights'],
  ['qwen3_moe', { tieWordEmbeddings: true, mlpOnlyLayers: [1] }, 'qwen3_moe tied, dense layer 1'],
  ['glm4_moe', {}, 'glm4_moe n_group 4 / topk_group 2'],
  ['glm4_moe', { nGroup: 1, topkGroup: 1 }, 'glm4_moe n_group 1 (GLM-4.5-Air routing)'],
  ['qwen3_next', {}, 'qwen3_next (Gated DeltaNet + gated attention, fused projections)'],
  ['qwen3_5_moe', {}, 'qwen3_5_moe (language_model. prefix, text_config)'],
  ['bailing_moe_linear', {}, 'bailing_moe_linear (lightning attention, fused query_key_value, expert_bias routing)'],
  ['qwen3', {}, 'qwen3 (dense, q/k norm, tied embeddings)'],
  ['llama', { tieWordEmbeddings: false }, 'llama (dense, no q/k norm, untied)'],
];

// Every kernel set this machine can run (cpu-ref and the fast ones), each against the reference.
const KERNEL_SETS = loadNative()
  .info()
  .kernelSets.filter((k) => k.usable)
  .map((k) => k.name);

// Activation precision (decode's integer kernels): with activationBits 24 the logits stay
// within the float32 bound above (measured 5–9e-7 × max|logit| on these shapes). The default 16
// bits quantise each block of 32 activations to ~1.5e-5 of its largest value: logits move ~1e-4
// of their scale (measured 0.6–1.5e-4 on these shapes and seeds 1–4), so their bound is 5e-4 ×
// max(1, max|logit|), 20× below what a real mistake moves (1e-2); greedy tokens must still be
// identical, and the two precisions must differ on the integer kernel sets (the option works).
const INT_BOUND = 5e-4;

for (const [arch, over, name] of CASES) {
  test(`${name}: logits and greedy tokens match the float64 reference with every kernel set (${KERNEL_SETS.join(', ')}) and both activation precisions`, async (t) => {
    for (const seed of [1, 2]) {
      const dir = synthTemp(t, { arch, seed, ...over });
      const rng = new Prng(100 + seed);
      const prompt = Array.from({ length: 8 }, () => rng.int(640));
      const ref = referenceForward(dir);
      const want = referenceGreedy(ref, prompt, 24);
      ref.close();
      for (const backend of KERNEL_SETS) {
        const runs: GreedyResult[] = [];
        for (const activationBits of [24, undefined] as const) {
          const model = await NativeModel.load(dir, {
            threads: 2,
            backend,
            ...(activationBits ? { activationBits } : {}),
          });
          assert.equal(model.summary.activationBits, activationBits ?? 16);
          runs.push(await (await model.createSession()).greedy(prompt, 24));
          model.dispose();
        }
        const [exact, fast] = runs as [GreedyResult, GreedyResult];
        checkAgainstReference(`${name} seed ${seed} ${backend} 24-bit`, exact, want);
        checkAgainstReference(`${name} seed ${seed} ${backend} 16-bit (default)`, fast, want, INT_BOUND);
        // 8-bit weights take cpu-avx2's integer kernels with one-byte activations only.
        const intPath = backend !== 'cpu-ref' && backend !== 'cpu-neon' && !(over.bits === 8 && backend === 'cpu-avx2');
        const same = exact.logits.every((l, i) => l.every((v, j) => v === fast.logits[i]![j]));
        assert.equal(
          same,
          !intPath,
          `${name} ${backend}: 16-bit decode logits ${same ? 'equal' : 'differ from'} the 24-bit ones`,
        );
      }
    }
  });
}

function checkAgainstReference(
  name: string,
  got: GreedyResult,
  want: { tokens: number[]; logits: ArrayLike<number>[] },
  rel = 1e-5,
): void {
  assert.deepEqual(got.tokens, want.tokens, `${name}: greedy tokens`);
  for (let step = 0; step < 24; step++) {
    const r = want.logits[step]!;
    const g = got.logits[step]!;
    const d = logitsDiff(g, r, rel);
    assert.ok(
      d.worst <= d.bound,
      `${name} step ${step}: token ${d.at} engine ${g[d.at]} vs reference ${r[d.at]} (|Δ| ${d.worst}, bound ${d.bound})`,
    );
  }
}

test('synth → load → generate: the CLI-written folder runs through tokenizer, engine and generate()', async (t) => {
  for (const arch of ['qwen3_moe', 'glm4_moe', 'qwen3_5_moe', 'llama'] as const) {
    const dir = tempDir('bs-roundtrip-');
    t.after(() => dir.remove());
    const synth = await runCli(
      ['models', 'synth', '--arch', arch, '--shape', 'tiny', '--out', dir.path, '--seed', '11', '--json'],
      {},
      { timeoutMs: 60_000 },
    );
    assert.equal(synth.code, 0, synth.stderr);

    const tok = await TextTokenizer.fromDir(dir.path);
    const model = await NativeModel.load(dir.path);
    t.after(() => model.dispose());
    assert.equal(model.summary.arch, arch);
    assert.equal(model.summary.vocabSize, 640);
    assert.equal(model.summary.layers, 4);
    const prompt = tok.encode('<|im_start|>user\nmove the left arm<|im_end|>\n<|im_start|>assistant\n');
    const session = new PrefixSession(await model.createSession());
    const gen = generate(session, {
      prompt,
      maxTokens: 12,
      sampler: new Sampler({ ...DEFAULT_SAMPLING, temperature: 0, seed: 1 }),
      detokenizer: tok.streamDecoder(),
      stopTokens: new Set(model.summary.eosTokenIds),
      vocabSize: model.summary.vocabSize,
    });
    let text = '';
    let result: GenerationResult;
    for (;;) {
      const step = await gen.next();
      if (step.done) {
        result = step.value;
        break;
      }
      text += step.value;
    }
    assert.ok(result.tokens.length > 0, `${arch}: generated nothing`);
    assert.equal(result.text, text);
    // Greedy generation through the serving loop = the reference's greedy tokens.
    const ref = referenceForward(dir.path);
    const want = referenceGreedy(ref, prompt, result.tokens.length);
    ref.close();
    assert.deepEqual(result.tokens, want.tokens, `${arch}: generate() vs reference greedy`);
  }
});
