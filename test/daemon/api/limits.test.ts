// The configured limits over the real transports: a long batch, deep JSON and prototype keys get
// validation errors (-32600 / -32602, HTTP 400), never internal errors, and the daemon keeps serving.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';

let d: TestDaemon;
let c: RpcTestClient;
before(async () => {
  d = await startTestDaemon({ server: { max_batch_calls: 5, max_json_depth: 10 } });
  c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
});
after(async () => {
  await c.close();
  await d.stop();
});

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
const info = (id: number) => ({ jsonrpc: '2.0', id, method: 'system.info' });

async function stillServes() {
  assert.equal((await c.call('system.info')).result?.name, 'brainstem');
}

test('WebSocket: a batch over server.max_batch_calls is -32600 naming the limit and the length', async () => {
  const r = await c.sendRaw(JSON.stringify([1, 2, 3, 4, 5, 6].map(info)));
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /a batch of 6 calls exceeds the limit of 5 calls \(server\.max_batch_calls\)/);
  const ok = await c.sendRaw(JSON.stringify([1, 2, 3, 4, 5].map(info)));
  assert.equal(ok.length, 5);
});

test('WebSocket: deep JSON is -32600 naming server.max_json_depth, not -32603', async () => {
  for (const text of [
    `{"jsonrpc":"2.0","id":1,"method":"system.info","params":{"x":${deep(50_000)}}}`,
    `{"jsonrpc":"2.0","id":1,"method":"system.subscribe","params":${deep(11)}}`,
    deep(50_000),
  ]) {
    const r = await c.sendRaw(text);
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /more than 10 levels deep \(server\.max_json_depth\)/);
  }
  await stillServes();
});

test('WebSocket: prototype keys in params are -32602 naming the key', async () => {
  const r = await c.sendRaw('{"jsonrpc":"2.0","id":"p","method":"system.info","params":{"__proto__":{"x":1}}}');
  assert.equal(r.error.code, -32602);
  assert.equal(r.error.data.field, '__proto__');
  const r2 = await c.call('system.subscribe', JSON.parse('{"constructor": 1}'));
  assert.equal(r2.error?.code, -32602);
  assert.match(r2.error!.message, /^Invalid params: constructor: is a reserved key/);
  await stillServes();
});

async function post(body: string) {
  const r = await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body,
  });
  return { status: r.status, error: ((await r.json()) as any).error };
}

test('HTTP: a deep JSON body is 400 with a JSON error naming the limit, not 500', async () => {
  const r = await post(`{"model":"x","messages":${deep(50_000)}}`);
  assert.equal(r.status, 400);
  assert.equal(r.error.code, 'max_json_depth');
  assert.match(r.error.message, /request body nests arrays and objects more than 10 levels deep/);
  await stillServes();
});

test('HTTP: a prototype key in a JSON body is 400 naming the key', async () => {
  const r = await post('{"model":"x","messages":[{"role":"user","content":"hi","__proto__":{"admin":true}}]}');
  assert.equal(r.status, 400);
  assert.equal(r.error.code, 'reserved_key');
  assert.equal(r.error.param, 'messages[0].__proto__');
  assert.match(r.error.message, /messages\[0\]\.__proto__: is a reserved key/);
});
