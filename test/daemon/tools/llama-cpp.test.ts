// llama.cpp (node-llama-cpp's prebuilt CPU binary, offline) as an implementation nobody here
// wrote: the same token ids through llama.cpp on the GGUF export and through the float64
// reference on the MLX folder must give the same next-token logits and probabilities.
//
// Tolerances. F32 GGUF: weights equal the float64 dequantised ones to float32 rounding
// (~6e-8 relative) and llama.cpp runs in float32 with an F32 KV cache, so logits differ by
// float32 accumulation only (~3e-6 seen); 1e-4 leaves 30x margin, while any real mismatch
// (RoPE pairing, a bias, a routing flip) moves logits by 1e-2 or more. F16 GGUF: every weight
// is rounded to half (2^-11 relative), which shifts logits by ~5e-3 (seen); we allow 0.05 and
// require the same top token wherever the reference's top-2 gap exceeds 0.05.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type Llama, type Token } from 'node-llama-cpp';
import { Tokenizer } from '@huggingface/tokenizers';
import { synthModel } from '../../../daemon/tools/synth.js';
import { exportGguf, type GgufFileType } from '../../../daemon/tools/gguf-export.js';
import { referenceForward } from '../../../daemon/tools/reference/forward.js';

let root = '';
let llama: Llama;
before(async () => {
  root = mkdtempSync(join(tmpdir(), 'brainstem-llama-'));
  // Prebuilt CPU binary only: never build, never download, no GPU probing.
  llama = await getLlama({
    gpu: false,
    build: 'never',
    skipDownload: true,
    usePrebuiltBinaries: true,
    progressLogs: false,
    logLevel: LlamaLogLevel.error,
  });
});
after(async () => {
  await llama?.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** llama.cpp's next-token logits after each of `tokens` (teacher forcing). */
async function llamaLogits(gguf: string, tokens: number[]): Promise<Map<number, number>[]> {
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  try {
    const ctx = await model.createContext({
      contextSize: 64,
      threads: 2,
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
    });
    const out = await ctx
      .getSequence()
      .controlledEvaluate(tokens.map((t) => [t as Token, { generateNext: { logits: true } }]));
    await ctx.dispose();
    return out.map((o, i) => {
      assert.ok(o?.next.logits, `llama.cpp returned logits at position ${i}`);
      return o.next.logits;
    });
  } finally {
    await model.dispose();
  }
}

const softmax = (l: ArrayLike<number>): number[] => {
  const m = Math.max(...Array.from(l));
  const e = Array.from(l, (v) => Math.exp(v - m));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / z);
};

/** Reference logits after each of 8 prompt tokens, then 24 greedy steps (each step's token fed
 *  back); llama.cpp then evaluates exactly `sequence`. */
function referenceRun(dir: string): { sequence: number[]; refLogits: number[][] } {
  const ref = referenceForward(dir);
  const prompt = [11, 48, 85, 122, 159, 196, 233, 270];
  const refLogits = prompt.map((t) => Array.from(ref.decode(t)));
  const greedy: number[] = [];
  while (greedy.length < 24) {
    const last = refLogits[refLogits.length - 1];
    greedy.push(last.indexOf(Math.max(...last)));
    if (greedy.length < 24) refLogits.push(Array.from(ref.decode(greedy[greedy.length - 1])));
  }
  ref.close();
  return { sequence: [...prompt, ...greedy.slice(0, -1)], refLogits };
}

const cases = [
  { arch: 'qwen3_moe' as const, nGroup: undefined, seed: 21 },
  { arch: 'glm4_moe' as const, nGroup: 1, seed: 22 },
  { arch: 'glm4_moe' as const, nGroup: 4, seed: 23 },
  { arch: 'qwen3' as const, nGroup: undefined, seed: 24 },
  { arch: 'llama' as const, nGroup: undefined, seed: 25 },
  { arch: 'qwen3_5_moe' as const, nGroup: undefined, seed: 26 },
  { arch: 'qwen3_next' as const, nGroup: undefined, seed: 27 },
];

for (const c of cases) {
  const label = `${c.arch}${c.nGroup ? ` n_group ${c.nGroup}` : ''}`;
  test(`${label}: llama.cpp on GGUF f32 and f16 agrees with the float64 reference over 8 prompt + 24 greedy tokens`, async () => {
    const dir = synthModel({
      arch: c.arch,
      shape: 'tiny',
      seed: c.seed,
      nGroup: c.nGroup,
      out: join(root, `${c.arch}-${c.seed}`),
    }).dir;
    const { sequence, refLogits } = referenceRun(dir);
    for (const [type, logitTol, probTol] of [
      ['f32', 1e-4, 1e-5],
      ['f16', 0.05, 0.01],
    ] as [GgufFileType, number, number][]) {
      const gguf = join(root, `${c.arch}-${c.seed}-${type}.gguf`);
      exportGguf(dir, gguf, type);
      const got = await llamaLogits(gguf, sequence);
      for (let i = 0; i < sequence.length; i++) {
        const r = refLogits[i];
        const p = softmax(r);
        const l = Float64Array.from({ length: r.length }, (_, v) => got[i].get(v) ?? NaN);
        const q = softmax(l);
        for (let v = 0; v < r.length; v++) {
          assert.ok(
            Math.abs(l[v] - r[v]) <= logitTol,
            `${label} ${type} pos ${i} token ${v}: llama.cpp ${l[v]} vs reference ${r[v]}`,
          );
          assert.ok(Math.abs(q[v] - p[v]) <= probTol, `${label} ${type} pos ${i} token ${v}: p ${q[v]} vs ${p[v]}`);
        }
        const order = Array.from(r.keys()).sort((a, b) => r[b] - r[a]);
        const llamaTop = Array.from(l.keys()).reduce((a, b) => (l[b] > l[a] ? b : a), 0);
        if (type === 'f32' || r[order[0]] - r[order[1]] > 0.05) {
          assert.equal(llamaTop, order[0], `${label} ${type} pos ${i}: top token`);
        }
      }
    }
  });
}

test('llama.cpp reads the GGUF tokenizer exactly as @huggingface/tokenizers reads tokenizer.json', async () => {
  const dir = synthModel({ arch: 'qwen3_moe', shape: 'tiny', seed: 1, out: join(root, 'tok') }).dir;
  const gguf = join(root, 'tok.gguf');
  exportGguf(dir, gguf, 'f16');
  const hf = new Tokenizer(
    JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')),
    JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')),
  );
  const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
  try {
    for (const text of [
      'Hello robot! {"name": "move_to", "arguments": {"x": 0.25}}',
      '<|im_start|>user\nWhat is 3.14?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
      'ünïcödé 日本語 🤖\n\n   tabs\tand spaces  ',
    ]) {
      const ours = hf.encode(text).ids;
      const theirs = Array.from(model.tokenize(text, true));
      assert.deepEqual(theirs, ours, text);
      assert.equal(model.detokenize(theirs, true), text);
    }
  } finally {
    await model.dispose();
  }
});

// Q8_0 (bench compare's format for 8-bit weights): the export requantises each dequantised MLX
// 8-bit row to blocks of 32 (within half a step of max/127: gguf.test.ts), and llama.cpp also
// rounds activations to Q8 blocks, which on this tiny random model moves logits by up to ~0.9
// (our own engine with one-byte activations: ~0.6-0.8 on exact weights). A wrong layout or scale
// would move them by their whole scale (~12); the mean difference is ~0.04.
test('qwen3_moe 8-bit: llama.cpp on the GGUF q8_0 export stays near the float64 reference', async () => {
  const dir = synthModel({ arch: 'qwen3_moe', shape: 'tiny', seed: 28, bits: 8, out: join(root, 'q8') }).dir;
  const { sequence, refLogits } = referenceRun(dir);
  const gguf = join(root, 'q8.gguf');
  exportGguf(dir, gguf, 'q8_0');
  const got = await llamaLogits(gguf, sequence);
  let worst = 0;
  let sum = 0;
  let n = 0;
  for (let i = 0; i < sequence.length; i++) {
    const r = refLogits[i];
    for (let v = 0; v < r.length; v++) {
      const d = Math.abs((got[i].get(v) ?? NaN) - r[v]);
      worst = Math.max(worst, Number.isNaN(d) ? Infinity : d);
      sum += d;
      n++;
    }
  }
  assert.ok(worst <= 1.5, `worst logit difference ${worst} (measured ~0.9)`);
  assert.ok(sum / n <= 0.1, `mean logit difference ${sum / n} (measured ~0.04)`);
});
