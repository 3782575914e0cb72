// Prediction as routing: with the prerouter on, a decode step routes each predicted layer by
// the head's logits from the previous token through the layer's own routing function, so the
// engine must give exactly what the float64 reference gives for a model whose routers (of the
// predicted layers, at decode) are replaced by the heads. Every prefetched expert is used and
// none is missing: no drops, no fallbacks, no prefetch misses, no unused prefetches.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import type { ExpertPath, IoMode, LoadModelOptions } from '../../../daemon/native/binding.js';
import { writePrerouterHeads, type HeadsMetadata, type HeadWeights } from '../../../daemon/models/prerouter-heads.js';
import { referenceForward, referenceGreedy } from '../../../daemon/tools/reference/forward.js';
import type { Arch } from '../../../daemon/tools/synth-shapes.js';
import { Prng } from '../../../robot/common/prng.js';
import { tempDir } from '../../helpers/temp.js';
import { editHeader, synthTemp } from '../../native/helpers/model-files.js';
import { logitsDiff } from './logits-compare.js';

const HIDDEN = 128;
const EXPERTS = 16;
const F = HIDDEN + 2 * EXPERTS;
const STEPS = 12;

/** Random heads: linear_init and fc1 N(0, 1/F)·gain, fc2 N(0, 1/units). */
function randomHeads(owners: number[], units: number, seed: number, f = F): HeadWeights[] {
  const rng = new Prng(seed);
  const fill = (n: number, sd: number) => Float32Array.from({ length: n }, () => rng.normal() * sd);
  return owners.map((owner) => ({
    owner,
    units,
    fc1: fill(units * f, 2 / Math.sqrt(f)),
    fc2: fill(EXPERTS * units, 1.5 / Math.sqrt(units)),
    linear: fill(EXPERTS * f, 1.5 / Math.sqrt(f)),
  }));
}

interface Case {
  arch: Arch;
  heads: 'zero-training' | 'file';
  decodePath: ExpertPath;
  ioMode: IoMode;
}
const CASES: Case[] = [
  { arch: 'qwen3_moe', heads: 'zero-training', decodePath: 'staged', ioMode: 'page-cache' },
  { arch: 'glm4_moe', heads: 'zero-training', decodePath: 'staged', ioMode: 'direct' },
  { arch: 'qwen3_moe', heads: 'file', decodePath: 'staged', ioMode: 'direct' },
  { arch: 'glm4_moe', heads: 'file', decodePath: 'staged', ioMode: 'page-cache' },
  { arch: 'qwen3_moe', heads: 'file', decodePath: 'hot', ioMode: 'page-cache' },
  { arch: 'glm4_moe', heads: 'zero-training', decodePath: 'exact', ioMode: 'page-cache' },
  { arch: 'qwen3_5_moe', heads: 'file', decodePath: 'staged', ioMode: 'page-cache' },
  { arch: 'qwen3_next', heads: 'zero-training', decodePath: 'hot', ioMode: 'direct' },
  { arch: 'bailing_moe_linear', heads: 'file', decodePath: 'staged', ioMode: 'direct' },
  { arch: 'bailing_moe_linear', heads: 'zero-training', decodePath: 'exact', ioMode: 'page-cache' },
];

/** glm4_moe and bailing_moe_linear route by grouped sigmoid and keep layer 0 dense. */
const sigmoidGroup = (arch: Arch) => arch === 'glm4_moe' || arch === 'bailing_moe_linear';

for (const c of CASES) {
  const name = `${c.arch}, ${c.heads} heads, decode ${c.decodePath} (${c.ioMode})`;
  test(`${name}: logits equal a model whose routers are replaced by the heads`, async (t) => {
    const dir = synthTemp(t, { arch: c.arch, seed: 31 });
    // qwen3_moe and the hybrids tiny: layers 0-3 MoE → owners 0,1,2; glm4_moe, bailing: layer 0 dense → 1,2.
    const owners = sigmoidGroup(c.arch) ? [1, 2] : [0, 1, 2];
    let prerouter = 'on';
    let refHeads = 'zero-training';
    if (c.heads === 'file') {
      prerouter = refHeads = join(dir, 'heads.safetensors');
      writePrerouterHeads(prerouter, randomHeads(owners, 24, 5), {
        topK: 4,
        routing: sigmoidGroup(c.arch) ? 'sigmoid_group' : 'softmax_topk',
        hiddenSize: HIDDEN,
        numExperts: EXPERTS,
        source: 'test',
      });
    }
    const rng = new Prng(9);
    const prompt = Array.from({ length: 8 }, () => rng.int(600));
    const ref = referenceForward(dir, { prerouter: refHeads });
    const want = referenceGreedy(ref, prompt, STEPS);
    ref.close();
    const plain = referenceForward(dir);
    const unpredicted = referenceGreedy(plain, prompt, STEPS);
    plain.close();

    // 24-bit decode activations hold the reference's tight bound (16 bits: reference-agreement).
    const opts: LoadModelOptions = {
      threads: 2,
      activationBits: 24,
      prefillPath: 'whole-layer',
      decodePath: c.decodePath,
      ioMode: c.ioMode,
      prerouter,
      measureRecall: true,
    };
    const model = await NativeModel.load(dir, opts);
    t.after(() => model.dispose());
    assert.deepEqual(model.summary.stream.prerouterOwners, owners);
    const session = await model.createSession();
    const got = await session.greedy(prompt, STEPS);
    assert.deepEqual(got.tokens, want.tokens, `${name}: greedy tokens`);
    let changed = false;
    for (let s = 0; s < STEPS; s++) {
      const d = logitsDiff(got.logits[s]!, want.logits[s]!);
      assert.ok(d.worst <= d.bound, `${name} step ${s}: token ${d.at} |Δ| ${d.worst} > ${d.bound}`);
      changed ||= logitsDiff(got.logits[s]!, unpredicted.logits[s]!).worst > 1e-3;
    }
    assert.ok(changed, `${name}: the predictions never changed the routing (the test would not see them)`);

    const st = session.info().stream;
    const decodeSteps = STEPS - 1;
    assert.equal(
      st.predictedLayers,
      decodeSteps * owners.length,
      `${name}: every owned layer routed by prediction ${JSON.stringify(st)}`,
    );
    assert.equal(st.recallTotal, st.predictedLayers * 4);
    assert.ok(
      st.recallHits > 0 && st.recallHits < st.recallTotal,
      `${name}: recall ${st.recallHits}/${st.recallTotal}`,
    );
    assert.equal(st.drops, 0, `${name}: drops`);
    if (c.decodePath === 'staged') {
      assert.equal(st.fallbacks, 0, `${name}: fallbacks ${JSON.stringify(st)}`);
      assert.equal(st.prefetchMisses, 0, `${name}: every predicted expert was prefetched ${JSON.stringify(st)}`);
      assert.equal(st.prefetchUnusedBytes, 0, `${name}: every prefetched expert was used ${JSON.stringify(st)}`);
      assert.ok(st.prefetchLoads > 0, `${name}: prefetches happened ${JSON.stringify(st)}`);
    }
  });
}

test('a heads file that does not fit the model is refused with the reason', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 2 });
  const tmp = tempDir('bs-heads-');
  t.after(() => tmp.remove());
  const meta: HeadsMetadata = {
    topK: 4,
    routing: 'softmax_topk',
    hiddenSize: HIDDEN,
    numExperts: EXPERTS,
    source: 'test',
  };
  const write = (name: string, heads: HeadWeights[], m = meta) => {
    const p = join(tmp.path, name);
    writePrerouterHeads(p, heads, m);
    return p;
  };
  const cases: [string, RegExp][] = [
    [
      write('k8.safetensors', randomHeads([0], 8, 1), { ...meta, topK: 8 }),
      /metadata top_k is "8" but this model needs "4"; .*load the model with topK 8/,
    ],
    [
      write('glm.safetensors', randomHeads([0], 8, 1), { ...meta, routing: 'sigmoid_group' }),
      /metadata routing is "sigmoid_group" but this model needs "softmax_topk"/,
    ],
    [
      write('last.safetensors', randomHeads([3], 8, 1)),
      /head layers\.3 predicts layer 4, but layers 3 and 4 of this model are not both MoE layers/,
    ],
    // Heads of a model with hidden size 64: features 64 + 2·16 = 96 instead of 160.
    [
      write('narrow.safetensors', randomHeads([1], 8, 1, 96), { ...meta, hiddenSize: 64 }),
      /metadata hidden_size is "64" but this model needs "128"/,
    ],
  ];
  const noMeta = write('nometa.safetensors', randomHeads([1], 8, 1, 96), { ...meta, hiddenSize: 64 });
  editHeader(noMeta, (h) => delete (h as Record<string, unknown>).__metadata__);
  cases.push([
    noMeta,
    /tensor layers\.1\.fc1\.weight has shape \[8, 96\] but this model needs \[8, 160\] \(features = hidden_size \+ 2 × experts\)/,
  ]);
  const junk = join(tmp.path, 'junk.safetensors');
  writeFileSync(junk, 'not a safetensors file at all');
  cases.push([junk, /junk\.safetensors: .*header/]);
  for (const [path, re] of cases) {
    await assert.rejects(
      NativeModel.load(dir, { prerouter: path }),
      (e: Error) => re.test(e.message),
      `${path}: ${re}`,
    );
  }
  const good = write('good.safetensors', randomHeads([1, 2], 8, 1));
  const loaded = await NativeModel.load(dir, { prerouter: good });
  assert.deepEqual(loaded.summary.stream.prerouterOwners, [1, 2]);
  assert.equal(loaded.summary.stream.prerouter, good);
  loaded.dispose();
});
