// A request's routing width (experts_per_token) over both APIs and the real engine: the model's
// own K answers as if it were absent, K = 2 answers what the same folder loaded with top_k 2
// answers (no reload: one loaded model serves both widths), bad values are refused naming the
// field, the rule and the value.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { synthTiny, type TinyModel } from '../../helpers/serving.js';

let model: TinyModel;
let d: TestDaemon;
const auth = { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' };
const ASK = { messages: [{ role: 'user', content: 'Move the left arm up.' }], max_tokens: 12, temperature: 0 };

before(async () => {
  model = await synthTiny(9);
  const profile = { path: model.path, threads: 1, context_length: 1024 };
  d = await startTestDaemon({
    engine: { keep_alive: -1 },
    models: { tiny: profile, narrow: { ...profile, top_k: 2 }, wide: { ...profile, top_k: 99 } },
  });
});

after(async () => {
  await d?.stop();
  model?.remove();
});

async function chat(body: Record<string, unknown>): Promise<{ status: number; json: any }> {
  const res = await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

test('HTTP: K = the model K is the default answer, K = 2 is the top_k 2 model answer, on one loaded model', async () => {
  const plain = await chat({ model: 'tiny', ...ASK });
  assert.equal(plain.status, 200, JSON.stringify(plain.json));
  const text = (r: { json: any }) => r.json.choices[0].message.content;
  assert.equal(text(await chat({ model: 'tiny', ...ASK, experts_per_token: 4 })), text(plain));
  const two = await chat({ model: 'tiny', ...ASK, experts_per_token: 2 });
  const narrow = await chat({ model: 'narrow', ...ASK });
  assert.equal(two.status, 200);
  assert.equal(text(two), text(narrow));
  assert.notEqual(text(two), text(plain), 'K = 2 changes the output of this model');
  // After a K = 2 request the next full-K one still answers as before (no cache reused across K).
  assert.equal(text(await chat({ model: 'tiny', ...ASK })), text(plain));
});

test('bad experts_per_token values are refused with the field, the rule and the value', async (t) => {
  for (const [value, re] of [
    [5, /experts_per_token: must be in \[1, 4\], got 5/],
    [0, /experts_per_token: must be in \[1, 4\], got 0/],
    [2.5, /experts_per_token: must be an integer, got 2\.5/],
    ['2', /experts_per_token: must be a number, got "2"/],
  ] as const) {
    const r = await chat({ model: 'tiny', ...ASK, experts_per_token: value });
    assert.equal(r.status, 400, JSON.stringify(r.json));
    assert.match(r.json.error.message, re);
    assert.equal(r.json.error.param, 'experts_per_token');
  }
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => c.close());
  const bad = await c.call('chat', { model: 'tiny', ...ASK, experts_per_token: 9 });
  assert.equal(bad.error?.code, -32602, JSON.stringify(bad));
  assert.deepEqual([bad.error!.data.field, bad.error!.data.rule], ['experts_per_token', 'range']);
  const ok = await c.call('chat', { model: 'tiny', ...ASK, experts_per_token: 2, stream: false }, 60_000);
  assert.equal(ok.result.message.content, (await chat({ model: 'narrow', ...ASK })).json.choices[0].message.content);
});

test('a model whose top_k it cannot take fails to load naming the setting, the rule and the value', async () => {
  const r = await chat({ model: 'wide', ...ASK });
  assert.equal(r.status, 500, JSON.stringify(r.json));
  assert.equal(r.json.error.code, 'model_load_failed');
  assert.match(
    r.json.error.message,
    /^model "wide" \(.*\) failed to load: top_k: must be between 1 and 16 for this model \(the experts a token can reach\), got 99$/,
  );
});
