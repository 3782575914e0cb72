// The adapter API pieces the serving layer calls: adapters.* JSON-RPC methods over a real model,
// choosing an adapter per request (chat param or "model:adapter"), and generate() running with it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { handleMessage } from '../../../../daemon/api/rpc/protocol.js';
import { RpcCode, RpcRegistry, type RpcContext } from '../../../../daemon/api/rpc/registry.js';
import { AdapterManager } from '../../../../daemon/engine/adapters/adapter-manager.js';
import { registerAdapterMethods } from '../../../../daemon/engine/adapters/rpc.js';
import { selectAdapter, splitModelName } from '../../../../daemon/engine/adapters/select.js';
import { generate } from '../../../../daemon/engine/generate.js';
import { NativeModel } from '../../../../daemon/engine/native-model.js';
import { PrefixSession } from '../../../../daemon/engine/prefix-cache.js';
import { DEFAULT_SAMPLING, Sampler } from '../../../../daemon/engine/sampler.js';
import { TextTokenizer } from '../../../../daemon/engine/tokenizer.js';
import { synthTemp } from '../../../native/helpers/model-files.js';
import { synthAdapterTemp } from './helpers.js';

const ctx: RpcContext = { connectionId: 't', notify: () => true, bufferedAmount: 0, signal: new AbortController().signal, onClose: () => undefined };

test('adapters.list / load / unload over JSON-RPC', async (t) => {
  const dir = synthTemp(t, { arch: 'qwen3_moe', seed: 3 });
  const model = await NativeModel.load(dir);
  t.after(() => model.dispose());
  const managers = new Map([['tiny', new AdapterManager(model)]]);
  const rpc = new RpcRegistry();
  registerAdapterMethods(rpc, { ids: () => [...managers.keys()], adapters: (id) => managers.get(id) });
  const hooks = { log: pino({ level: 'silent' }) };
  let id = 0;
  const call = async (method: string, params: unknown) => (await handleMessage(JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }), rpc, ctx, hooks)) as { result?: any; error?: any };

  const path = synthAdapterTemp(t, { model: dir, format: 'edge0', rank: 16, alpha: 32, rms: 1e-3 });
  const loaded = await call('adapters.load', { name: 'tuned', path });
  assert.equal(loaded.result.model, 'tiny', 'the only loaded model is the default');
  assert.deepEqual([loaded.result.adapter.name, loaded.result.adapter.format, loaded.result.adapter.modules, loaded.result.adapter.ranks], ['tuned', 'edge0', 16, [16]]);
  const list = await call('adapters.list', {});
  assert.deepEqual(list.result.adapters.map((a: { name: string }) => a.name), ['tuned']);
  assert.equal(list.result.bytes, loaded.result.adapter.bytes);

  const bad = await call('adapters.load', { name: 'broken', path: `${path}/nope` });
  assert.equal(bad.error.code, RpcCode.INVALID_PARAMS);
  assert.match(bad.error.message, /^Invalid params: path: adapter path .*nope does not exist/);
  assert.equal(bad.error.data.field, 'path');
  const unknownModel = await call('adapters.list', { model: 'big' });
  assert.match(unknownModel.error.message, /model: is not a loaded model \(loaded: tiny\), got "big"/);
  const badFormat = await call('adapters.load', { name: 'x', path, format: 'lycoris' });
  assert.equal(badFormat.error.code, RpcCode.INVALID_PARAMS);
  assert.match(badFormat.error.message, /format/);

  const gone = await call('adapters.unload', { name: 'tuned' });
  assert.equal(gone.result.adapter.name, 'tuned');
  const again = await call('adapters.unload', { name: 'tuned' });
  assert.match(again.error.message, /^Invalid params: name: adapter "tuned" is not loaded \(loaded: none\)/);
  managers.set('other', new AdapterManager(model));
  const ambiguous = await call('adapters.list', {});
  assert.match(ambiguous.error.message, /model: is required when 2 models are loaded \(tiny, other\)/);
});

test('a request picks its adapter by chat param or "model:adapter"; generate() runs with it', async (t) => {
  const dir = synthTemp(t, { arch: 'glm4_moe', seed: 5 });
  const model = await NativeModel.load(dir);
  t.after(() => model.dispose());
  const adapters = new AdapterManager(model);
  await adapters.load('tuned', synthAdapterTemp(t, { model: dir, format: 'peft', rank: 8, alpha: 16, rms: 0.03, targets: ['all'] }));
  const isModel = (id: string) => id === 'glm' || id === 'qwen:30b';
  assert.deepEqual(splitModelName('glm:tuned', isModel), { model: 'glm', adapter: 'tuned' });
  assert.deepEqual(splitModelName('qwen:30b', isModel), { model: 'qwen:30b', adapter: null }, 'a model id with a colon is not split');
  assert.deepEqual(splitModelName('qwen:30b:x', isModel), { model: 'qwen:30b', adapter: 'x' });
  assert.equal(selectAdapter(adapters, { model: 'glm', adapter: 'tuned' })?.name, 'tuned');
  assert.equal(selectAdapter(adapters, { model: 'glm', adapter: null }, 'tuned')?.name, 'tuned');
  assert.equal(selectAdapter(adapters, { model: 'glm', adapter: null }, null), null);
  assert.throws(() => selectAdapter(adapters, { model: 'glm', adapter: 'nope' }), /^RequestError: model: adapter "nope" is not loaded for model "glm" \(loaded: tuned\)/);
  assert.throws(() => selectAdapter(adapters, { model: 'glm', adapter: null }, 7), /adapter: must be a string \(an adapter name\) or null, got 7/);
  assert.throws(() => selectAdapter(adapters, { model: 'glm', adapter: 'tuned' }, 'other'), /adapter: names "other" but model names "glm:tuned"/);

  const tok = await TextTokenizer.fromDir(dir);
  const prompt = tok.encode('<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n');
  const session = new PrefixSession(await model.createSession());
  const run = async (adapter: ReturnType<typeof selectAdapter>) => {
    const gen = generate(session, {
      prompt, maxTokens: 8, adapter,
      sampler: new Sampler({ ...DEFAULT_SAMPLING, temperature: 0, seed: 1 }),
      detokenizer: tok.streamDecoder(), stopTokens: new Set<number>(), vocabSize: model.summary.vocabSize,
    });
    for (;;) {
      const step = await gen.next();
      if (step.done) return step.value;
    }
  };
  const tuned = await run(adapters.get('tuned'));
  const base = await run(null);
  const tunedAgain = await run(adapters.get('tuned'));
  assert.notDeepEqual(tuned.tokens, base.tokens, 'the adapter changes greedy output');
  assert.deepEqual(tunedAgain.tokens, tuned.tokens, 'switching back reproduces it');
  assert.equal(tunedAgain.usage.cachedTokens, 0, 'nothing reused across the adapter switch');
  const repeat = await run(adapters.get('tuned'));
  assert.ok(repeat.usage.cachedTokens > 0, 'the same adapter reuses the cached prefix');
});
