// Non-finite weights are a model error: non-expert tensors are scanned at load, each routed expert
// on its first use; the error names the file, the tensor and the expert, and through the chat
// API it is a server error naming the model (once it was "Invalid params", blaming the client).
import { type TestContext, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { toRpcError } from '../../daemon/api/serving-errors.js';
import { EngineError, NativeModel } from '../../daemon/engine/native-model.js';
import type { LoadModelOptions } from '../../daemon/native/binding.js';
import { type Header, poisonTensor, shardOf, synthTemp } from './helpers/model-files.js';

const SCALES = 'model.layers.0.mlp.switch_mlp.down_proj.scales';

/** Poisons the first scale of every expert of layer 0, so any routing reaches one. */
function poisonExperts(dir: string): void {
  const experts = (JSON.parse(readFileSync(`${dir}/config.json`, 'utf8')) as { num_experts: number }).num_experts;
  const path = shardOf(dir, SCALES);
  const buf = readFileSync(path);
  const header = JSON.parse(buf.subarray(8, 8 + Number(buf.readBigUInt64LE(0))).toString('utf8')) as Header;
  const perExpert = header[SCALES]!.shape.slice(1).reduce((a, b) => a * b, 1);
  for (let e = 0; e < experts; e++) poisonTensor(dir, SCALES, e * perExpert);
}

/** Loads a copy with every layer-0 expert poisoned; its first prefill must fail naming the tensor. */
async function poisonedFailure(t: TestContext, opts: LoadModelOptions = {}) {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
  poisonExperts(dir);
  const model = await NativeModel.load(dir, opts);
  t.after(() => model.dispose());
  const session = await model.createSession();
  const err = await failure(session.prefill([1, 2, 3]));
  assert.ok(err instanceof EngineError, String(err));
  assert.match(
    err.message,
    /\.safetensors: tensor model\.layers\.0\.mlp\.switch_mlp\.down_proj\.scales holds a non-finite value \(NaN or ±Inf\) in expert \d+ at element 0 of its slice/,
  );
  return { err, session };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

test('a NaN in an expert loads, then fails its first use naming the tensor and the expert', async (t) => {
  const { err } = await poisonedFailure(t);
  const rpc = toRpcError(new EngineError(`model "m": ${err.message}`));
  assert.deepEqual([rpc.code, (rpc.data as { code: string }).code], [-32005, 'engine_error'], 'a server error');
  assert.doesNotMatch(rpc.message, /Invalid params/);
});

test('prefault checks the experts after mapping them; a poisoned one is left to its first use', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 4 });
  poisonExperts(dir);
  const model = await NativeModel.load(dir, { prefault: true });
  t.after(() => model.dispose());
  const st = await model.prefaultDone();
  const { layers, experts } = model.summary;
  // Layer 0's experts are all poisoned: the background pass checks every other layer's.
  assert.ok(st && st.state !== 'running' && st.state !== 'stopped', JSON.stringify(st));
  assert.equal(st.expertsChecked, (layers - 1) * experts, JSON.stringify(st));
  const err = await failure((await model.createSession()).prefill([1, 2, 3]));
  assert.ok(err instanceof EngineError, String(err));
  assert.match(err.message, /tensor model\.layers\.0\.mlp\.switch_mlp\.down_proj\.scales holds a non-finite value/);
});

// An expert executor checks each expert where its bytes land (a slot, a layer buffer, or the
// mapping after its reads were issued), never by faulting the mapping page by page first.
const STREAMED: [string, LoadModelOptions][] = [
  [
    'staged, direct reads, prerouter',
    { decodePath: 'staged', prefillPath: 'staged', ioMode: 'direct', prerouter: 'on', slots: 2 },
  ],
  ['staged, page-cache reads', { decodePath: 'staged', prefillPath: 'staged', ioMode: 'page-cache', slots: 3 }],
  ['whole-layer prefill, direct reads', { prefillPath: 'whole-layer', decodePath: 'exact', ioMode: 'direct' }],
  ['whole-layer prefill, page-cache reads', { prefillPath: 'whole-layer', decodePath: 'exact', ioMode: 'page-cache' }],
  ['hot', { prefillPath: 'hot', decodePath: 'hot', cacheBytes: 1 << 20 }],
  ['exact, prerouter', { prefillPath: 'exact', decodePath: 'exact', prerouter: 'on' }],
];

for (const [name, opts] of STREAMED) {
  test(`${name}: a NaN in an expert fails its first use naming the tensor and the expert`, async (t) => {
    const { session } = await poisonedFailure(t, { threads: 2, ...opts });
    // The same session fails again, the process carries on.
    assert.ok((await failure(session.prefill([4]))) instanceof EngineError);
  });
}
