// Kernel-set selection and the properties every set must keep on a whole model: `auto`
// picks the fastest usable CPU set (or cuda where a device passes its smoke test), each set gives bit-identical logits for 1, 2 and 3 threads
// (every output element is computed by exactly one kernel call, whichever thread runs it),
// and the F16 KV cache halves the cache and stays within half-precision rounding of F32.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import { loadNative } from '../../../daemon/native/binding.js';
import { synthTemp } from '../../native/helpers/model-files.js';

const PROMPT = [1, 5, 9, 20, 33, 40, 2, 7, 64, 11, 300, 599];
const SETS = loadNative().info().kernelSets;
const USABLE = SETS.filter((k) => k.usable).map((k) => k.name);

test('auto picks the last usable CPU kernel set (fastest first from the end) unless CUDA passed its smoke test; cpu-ref is always usable', async (t) => {
  assert.equal(SETS[0]?.name, 'cpu-ref');
  assert.ok(USABLE.includes('cpu-ref'));
  // CPU sets come first in the list; accelerator sets follow (cuda may be auto, metal by name only).
  const cpu = SETS.filter((k) => k.name.startsWith('cpu-')).map((k) => k.name);
  assert.deepEqual(
    SETS.slice(0, cpu.length).map((k) => k.name),
    cpu,
    `CPU sets first: ${JSON.stringify(SETS)}`,
  );
  const cpuUsable = USABLE.filter((n) => n.startsWith('cpu-'));
  const cudaAuto = SETS.some((k) => k.name === 'cuda' && k.auto);
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
  for (const opts of [{}, { backend: 'auto' }]) {
    const m = await NativeModel.load(dir, opts);
    assert.equal(
      m.summary.backend,
      cudaAuto ? 'cuda' : cpuUsable[cpuUsable.length - 1],
      `${JSON.stringify(opts)} among ${USABLE.join(', ')}`,
    );
    m.dispose();
  }
  if (process.arch === 'x64')
    assert.ok(
      SETS.some((k) => k.name === 'cpu-avx2'),
      'x86-64 builds compile cpu-avx2',
    );
  if (process.arch === 'arm64')
    assert.ok(
      SETS.some((k) => k.name === 'cpu-neon'),
      'arm64 builds compile cpu-neon',
    );
});

for (const arch of ['qwen3_moe', 'glm4_moe'] as const) {
  test(`${arch}: every kernel set gives identical logits with 1, 2 and 3 threads (${USABLE.join(', ')})`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 6 });
    for (const backend of USABLE) {
      let first: Float32Array[] | undefined;
      for (const threads of [1, 2, 3]) {
        const m = await NativeModel.load(dir, { backend, threads });
        const s = await m.createSession();
        const got = await s.greedy(PROMPT, 6);
        // Metal sessions of these models run on the whole-token decoder (a Mac's metal-check.sh).
        assert.equal(s.info().onDevice, backend === 'metal', `${arch} ${backend}: sessionInfo.onDevice`);
        m.dispose();
        first ??= got.logits;
        for (let i = 0; i < got.logits.length; i++) {
          assert.deepEqual(
            got.logits[i],
            first[i],
            `${arch} ${backend}: ${threads} threads differ from 1 at step ${i}`,
          );
        }
      }
    }
  });
}

test('an F16 KV cache halves the cache bytes and moves logits by half-precision rounding only', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 8 });
  const f32 = await NativeModel.load(dir);
  const f16 = await NativeModel.load(dir, { kvCache: 'f16' });
  t.after(() => {
    f32.dispose();
    f16.dispose();
  });
  assert.equal(f32.summary.kvCache, 'f32');
  assert.equal(f16.summary.kvCache, 'f16');
  const a = await f32.createSession();
  const b = await f16.createSession();
  const ga = await a.greedy(PROMPT, 8);
  const gb = await b.greedy(PROMPT, 8);
  assert.equal(b.info().stateBytes * 2, a.info().stateBytes);
  // Keys and values rounded to 11 significant bits (2^-11 ≈ 5e-4 relative) move logits of
  // magnitude ~10 by ~1e-3 (measured); a wrong cache layout would move them by O(1).
  for (let i = 0; i < ga.logits.length; i++) {
    let worst = 0;
    let scale = 1;
    for (let v = 0; v < ga.logits[i]!.length; v++) {
      worst = Math.max(worst, Math.abs(ga.logits[i]![v]! - gb.logits[i]![v]!));
      scale = Math.max(scale, Math.abs(ga.logits[i]![v]!));
    }
    assert.ok(worst > 0 && worst <= 2e-3 * scale, `step ${i}: |Δ| ${worst} (scale ${scale})`);
  }
});
