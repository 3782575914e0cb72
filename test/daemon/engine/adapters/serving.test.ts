// Adapters through the running daemon: configured (models.<name>.adapters) and loaded at run time
// (adapters.load), chosen per request by the WS chat param `adapter` or the model name
// "model:adapter" over HTTP, shown in models.status (bytes) and /v1/models, unloaded, and kept
// across a model unload/reload. Greedy decoding, so equal requests give equal text.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { selectAdapter } from '../../../../daemon/engine/adapters/select.js';
import { synthAdapter } from '../../../../daemon/tools/synth-adapter.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../../helpers/daemon.js';
import { RpcTestClient } from '../../../helpers/rpc.js';
import { synthTiny, type TinyModel } from '../../../helpers/serving.js';
import { tempDir, type TempDir } from '../../../helpers/temp.js';

let model: TinyModel;
let adapters: TempDir;
let d: TestDaemon;
let ws: RpcTestClient;

before(async () => {
  model = await synthTiny(4);
  adapters = tempDir('bs-serving-adapters-');
  synthAdapter({
    model: model.path,
    out: `${adapters.path}/cfg`,
    format: 'peft',
    rank: 8,
    alpha: 16,
    rms: 0.03,
    seed: 1,
    targets: ['all'],
  });
  synthAdapter({
    model: model.path,
    out: `${adapters.path}/rt`,
    format: 'edge0',
    rank: 16,
    alpha: 32,
    rms: 0.03,
    seed: 2,
  });
  d = await startTestDaemon({
    models: {
      tiny: {
        path: model.path,
        threads: 1,
        context_length: 1024,
        keep_alive: -1,
        adapters: { cfg: { path: `${adapters.path}/cfg` } },
      },
    },
    files: { adapter_roots: [adapters.path] },
  });
  ws = await RpcTestClient.connect(d.ws, TEST_TOKEN);
});

after(async () => {
  await ws?.close();
  await d?.stop();
  model?.remove();
  adapters?.remove();
});

const ASK = [{ role: 'user', content: 'Which arm holds the cup?' }];
const chat = async (params: Record<string, unknown>) =>
  await ws.call('chat', { messages: ASK, max_tokens: 6, temperature: 0, stream: false, ...params }, 60_000);
async function http(body: Record<string, unknown>) {
  const r = await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: ASK, max_tokens: 6, temperature: 0, ...body }),
  });
  return { status: r.status, body: (await r.json()) as any };
}

test('configured and run-time adapters: list, load, choose per request, status, unload', async () => {
  const before = await ws.call('adapters.list', {});
  assert.deepEqual(
    before.result.adapters.map((a: any) => [a.name, a.loaded]),
    [['cfg', false]],
    'configured, waiting for the model',
  );

  const loaded = await ws.call('adapters.load', { name: 'rt', path: `${adapters.path}/rt` }, 60_000);
  assert.equal(loaded.result.model, 'tiny', 'the only model is the default; loading the adapter loaded it');
  assert.deepEqual(
    [loaded.result.adapter.name, loaded.result.adapter.format, loaded.result.adapter.ranks],
    ['rt', 'edge0', [16]],
  );
  const list = (await ws.call('adapters.list', { model: 'tiny' })).result;
  assert.deepEqual(
    list.adapters.map((a: any) => [a.name, a.loaded, a.format]),
    [
      ['cfg', true, 'peft'],
      ['rt', true, 'edge0'],
    ],
  );
  const status = (await ws.call('models.status', { model: 'tiny' })).result.models[0];
  assert.equal(status.memory.adapter_bytes, list.bytes);
  assert.ok(list.bytes > 0);
  assert.deepEqual(
    status.adapters.map((a: any) => a.name),
    ['cfg', 'rt'],
  );

  const base = await chat({});
  const rt = await chat({ adapter: 'rt' });
  const cfg = await chat({ model: 'tiny:cfg' });
  assert.ok(base.result && rt.result && cfg.result, JSON.stringify([base.error, rt.error, cfg.error]));
  assert.notEqual(rt.result.message.content, base.result.message.content, 'adapter rt changes the greedy text');
  assert.notEqual(cfg.result.message.content, base.result.message.content, 'adapter cfg does too');
  assert.equal(cfg.result.model, 'tiny:cfg');
  const over = await http({ model: 'tiny:rt' });
  assert.equal(over.status, 200, JSON.stringify(over.body));
  assert.equal(
    over.body.choices[0].message.content,
    rt.result.message.content,
    'HTTP model:adapter = WS adapter param',
  );
  assert.equal(
    (await chat({})).result.message.content,
    base.result.message.content,
    'back to the base model: the same text again',
  );
  const models = (await (
    await fetch(`${d.http}/v1/models`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } })
  ).json()) as any;
  assert.deepEqual(
    models.data.map((m: any) => m.id),
    ['tiny', 'tiny:cfg', 'tiny:rt'],
  );

  const unknown = await chat({ adapter: 'nope' });
  assert.equal(unknown.error!.code, -32602);
  assert.match(unknown.error!.message, /adapter: adapter "nope" is not loaded for model "tiny" \(loaded: cfg, rt\)/);
  const badHttp = await http({ model: 'tiny:nope' });
  assert.deepEqual([badHttp.status, badHttp.body.error.param], [400, 'model']);
  const badLoad = await ws.call('adapters.load', { name: 'bad', path: `${adapters.path}/missing` });
  assert.deepEqual([badLoad.error!.code, badLoad.error!.data.field], [-32602, 'path']);
  assert.match(badLoad.error!.message, /adapter path .*missing does not exist/);
  const dup = await ws.call('adapters.load', { name: 'rt', path: `${adapters.path}/rt` });
  assert.deepEqual([dup.error!.data.field, /already loaded/.test(dup.error!.message)], ['name', true]);

  const gone = await ws.call('adapters.unload', { name: 'rt' });
  assert.equal(gone.result.adapter.name, 'rt');
  assert.match(
    (await chat({ adapter: 'rt' })).error!.message,
    /adapter "rt" is not loaded for model "tiny" \(loaded: cfg\)/,
  );
  const again = await ws.call('adapters.unload', { name: 'rt' });
  assert.deepEqual([again.error!.data.field, again.error!.data.code], ['name', 'adapter_not_found']);
  assert.match(again.error!.message, /adapter "rt" is not loaded \(loaded: cfg\)/);
});

test('a model unloaded and loaded again gets its adapters back', async () => {
  const first = await chat({ model: 'tiny:cfg' });
  await ws.call('models.unload', { model: 'tiny' }, 60_000);
  const waiting = (await ws.call('adapters.list', {})).result.adapters;
  assert.deepEqual(
    waiting.map((a: any) => [a.name, a.loaded, a.bytes]),
    [['cfg', false, 0]],
  );
  const reloaded = await chat({ model: 'tiny:cfg' });
  assert.equal(reloaded.result.message.content, first.result.message.content);
  // An unload sent right behind an adapter load lets the load finish; the adapter comes back.
  const [load, unload] = await Promise.all([
    ws.call('adapters.load', { name: 'rt2', path: `${adapters.path}/rt` }, 60_000),
    ws.call('models.unload', { model: 'tiny' }, 60_000),
  ]);
  assert.equal(load.error, undefined, JSON.stringify(load.error));
  assert.equal(unload.result.state, 'unloaded');
  const remembered = (await ws.call('adapters.list', {})).result.adapters;
  assert.deepEqual(
    remembered.map((a: any) => [a.name, a.loaded]),
    [
      ['cfg', false],
      ['rt2', false],
    ],
  );
  await ws.call('adapters.unload', { model: 'tiny', name: 'rt2' });
});

test('the adapter param and the model name must agree, and the param is a name', () => {
  assert.equal(selectAdapter(undefined, { name: 'tiny' }), null);
  assert.equal(selectAdapter(undefined, { name: 'tiny' }, null), null);
  assert.throws(
    () => selectAdapter(undefined, { name: 'tiny' }, 7),
    /adapter: must be a string \(an adapter name\) or null, got 7/,
  );
  assert.throws(
    () => selectAdapter(undefined, { name: 'tiny', adapter: 'a' }, 'b'),
    /adapter: names "b" but model names "tiny:a"/,
  );
  assert.throws(
    () => selectAdapter(undefined, { name: 'tiny', adapter: 'a' }),
    /^RequestError: model: adapter "a" is not loaded for model "tiny" \(loaded: none\)/,
  );
});
