// The three expert layouts converters write load and give the stacked layout's logits bit for bit
// on every expert path (exact from the mapping, staged/hot slots, whole-layer reads, both I/O
// modes): stacked (mlx-lm's switch_mlp), per-expert (experts.N.*, spread over two shards) and
// fused (experts.gate_up_proj), quantised and plain. Mixtures and gaps are refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { EngineError, NativeModel } from '../../../daemon/engine/native-model.js';
import type { ExpertPath, IoMode } from '../../../daemon/native/binding.js';
import { Prng } from '../../../robot/common/prng.js';
import { rewriteExperts } from '../../native/helpers/expert-layouts.js';
import { editHeader, editJson, shardOf, synthTemp } from '../../native/helpers/model-files.js';

const CASES: [ExpertPath, ExpertPath, IoMode][] = [
  ['exact', 'exact', 'page-cache'],
  ['whole-layer', 'staged', 'direct'],
  ['hot', 'whole-layer', 'page-cache'],
  ['staged', 'hot', 'direct'],
  ['whole-layer', 'exact', 'page-cache'],
];

async function run(dir: string, prompt: number[], [prefillPath, decodePath, ioMode]: (typeof CASES)[number]) {
  // wholeLayerShare 0: whole-layer reads every step, also a decode step's few experts.
  const model = await NativeModel.load(dir, {
    threads: 2,
    prefillPath,
    decodePath,
    ioMode,
    slots: 2,
    wholeLayerShare: 0,
  });
  try {
    const s = await model.createSession();
    const got = await s.greedy(prompt, 4);
    s.dispose();
    return got.logits;
  } finally {
    model.dispose();
  }
}

for (const arch of ['qwen3_moe', 'qwen3_5_moe'] as const) {
  for (const plain of [false, true]) {
    test(`${arch} ${plain ? 'plain F32' : 'quantised'} experts: per-expert and fused layouts give the stacked logits on every path`, async (t) => {
      const rng = new Prng(5);
      const prompt = Array.from({ length: 40 }, () => rng.int(600));
      const folder = (layout: 'stacked' | 'per-expert' | 'fused') => {
        const dir = synthTemp(t, { arch, seed: 8 });
        if (layout !== 'stacked' || plain) rewriteExperts(dir, layout, plain);
        return dir;
      };
      const stacked = folder('stacked');
      const want = await run(stacked, prompt, CASES[0]!);
      for (const layout of ['per-expert', 'fused'] as const) {
        const dir = folder(layout);
        for (const c of CASES) assert.deepEqual(await run(dir, prompt, c), want, `${layout} ${c.join(' / ')}`);
      }
    });
  }
}

const rejects = async (dir: string, pattern: RegExp) => {
  await assert.rejects(NativeModel.load(dir), (e: Error) => {
    assert.ok(e instanceof EngineError, String(e));
    assert.match(e.message, pattern);
    return true;
  });
};

test('expert layouts: mixtures, a missing expert and experts of different formats are refused by name', async (t) => {
  const mlp = 'model.layers.1.mlp';
  const move = (dir: string, from: string, to: string) => {
    editHeader(shardOf(dir, from), (h) => {
      h[to] = h[from]!;
      delete h[from];
    });
    editJson(join(dir, 'model.safetensors.index.json'), (j) => {
      const map = j.weight_map as Record<string, string>;
      map[to] = map[from]!;
      delete map[from];
    });
  };
  let dir = synthTemp(t, { arch: 'qwen3_moe', seed: 2 });
  rewriteExperts(dir, 'fused');
  move(dir, `${mlp}.experts.down_proj.biases`, `${mlp}.experts.0.gate_proj.weight`);
  await rejects(
    dir,
    /tensors model\.layers\.1\.mlp\.experts\.0\.gate_proj\.weight and .*experts\.gate_up_proj\.weight mix the per-expert and fused gate_up expert layouts/,
  );

  dir = synthTemp(t, { arch: 'qwen3_moe', seed: 2 });
  rewriteExperts(dir, 'per-expert');
  move(dir, `${mlp}.experts.5.up_proj.scales`, `${mlp}.experts.5.up_proj.extra`);
  await rejects(
    dir,
    /missing tensor model\.layers\.1\.mlp\.experts\.5\.up_proj\.biases|experts\.5\.up_proj\.weight has dtype U32 and no/,
  );

  dir = synthTemp(t, { arch: 'qwen3_moe', seed: 2 });
  rewriteExperts(dir, 'per-expert', true);
  editHeader(shardOf(dir, `${mlp}.experts.3.down_proj.weight`), (h) => {
    const e = h[`${mlp}.experts.3.down_proj.weight`]!;
    e.dtype = 'BF16';
    e.data_offsets = [e.data_offsets[0]!, e.data_offsets[0]! + (e.data_offsets[1]! - e.data_offsets[0]!) / 2];
  });
  await rejects(
    dir,
    /tensor model\.layers\.1\.mlp\.experts\.3\.down_proj\.weight is stored as plain BF16 unlike expert 0's/,
  );
});
