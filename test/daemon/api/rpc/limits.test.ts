// Bounded JSON-RPC: batch length, nesting depth and prototype keys are refused before any handler
// runs, and a long batch yields to the event loop so timers (heartbeats) keep firing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { BATCH_SLICE, type DispatchHooks, handleMessage } from '../../../../daemon/api/rpc/protocol.js';
import { RpcRegistry } from '../../../../daemon/api/rpc/registry.js';
import { parsed, testRpcContext } from '../../../helpers/rpc.js';
import { anything, int, obj } from '../../../../robot/common/validation/builders.js';

const ctx = testRpcContext();

function setup(hooks: Partial<DispatchHooks> = {}) {
  const rpc = new RpcRegistry();
  const seen: unknown[] = [];
  rpc.register('test.echo', obj({ n: int({ default: 0 }) }), (p) => p);
  rpc.register('test.open', obj({ data: anything() }), (p) => (seen.push(p), 'ok'));
  const all: DispatchHooks = { log: pino({ level: 'silent' }), ...hooks };
  const send = (msg: unknown) =>
    handleMessage(typeof msg === 'string' ? msg : JSON.stringify(msg), rpc, ctx, all).then(parsed) as Promise<any>;
  return { rpc, seen, send };
}

const call = (id: number) => ({ jsonrpc: '2.0', id, method: 'test.echo', params: { n: id } });

test('a batch longer than the limit is refused whole with -32600 naming the limit and the length', async () => {
  const { send } = setup({ limits: { maxBatch: 10, maxDepth: 64 } });
  const r = await send(Array.from({ length: 11 }, (_, i) => call(i)));
  assert.deepEqual(r, {
    jsonrpc: '2.0',
    id: null,
    error: {
      code: -32600,
      message: 'Invalid Request: a batch of 11 calls exceeds the limit of 10 calls (server.max_batch_calls)',
      data: { field: '(batch)', rule: 'max_batch_calls', limit: 10, value: 11 },
    },
  });
  assert.equal((await send(Array.from({ length: 10 }, (_, i) => call(i)))).length, 10);
});

test('the default batch limit refuses the 40,000-call batch', async () => {
  const { send } = setup();
  const r = await send(Array.from({ length: 40_000 }, (_, i) => call(i)));
  assert.equal(r.error.code, -32600);
  assert.equal(r.error.data.value, 40_000);
});

test('a message nested past the depth limit is -32600 before any handler runs, in params or anywhere', async () => {
  const { send, seen } = setup({ limits: { maxBatch: 10, maxDepth: 8 } });
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  for (const msg of [
    `{"jsonrpc":"2.0","id":1,"method":"test.open","params":{"data":${deep}}}`,
    `[{"jsonrpc":"2.0","id":1,"method":"test.open","params":{"data":${deep}}}]`,
    deep,
  ]) {
    const r = await send(msg);
    assert.equal(r.error.code, -32600);
    assert.equal(
      r.error.message,
      'Invalid Request: the message nests arrays and objects more than 8 levels deep (server.max_json_depth)',
    );
    assert.deepEqual(r.error.data, { field: '(message)', rule: 'max_json_depth', limit: 8, value: 9 });
  }
  assert.equal(seen.length, 0);
  const ok = await send({ jsonrpc: '2.0', id: 2, method: 'test.open', params: { data: [[[[1]]]] } });
  assert.equal(ok.result, 'ok');
});

test('prototype keys in params are -32602 naming the key, even for open params', async () => {
  const { send, seen } = setup();
  for (const [text, field] of [
    ['{"jsonrpc":"2.0","id":1,"method":"test.open","params":{"data":{"__proto__":{"x":1}}}}', 'data.__proto__'],
    ['{"jsonrpc":"2.0","id":1,"method":"test.open","params":{"data":[{"constructor":1}]}}', 'data[0].constructor'],
    ['{"jsonrpc":"2.0","id":1,"method":"test.echo","params":{"prototype":1}}', 'prototype'],
    ['{"jsonrpc":"2.0","id":1,"method":"test.echo","params":{"__proto__":{"n":5}}}', '__proto__'],
  ] as const) {
    const r = await send(text);
    assert.equal(r.error.code, -32602, text);
    assert.equal(r.error.data.field, field);
    assert.match(r.error.message, /is a reserved key \(__proto__, constructor and prototype are refused\)/);
  }
  assert.equal(seen.length, 0);
});

test('a long batch yields to the event loop between slices, so a timer keeps firing', async () => {
  // The observable scheduler: each yield is counted, and a repeating setImmediate ticker stands in
  // for the heartbeat timer; each handler records how many ticks it has seen.
  let yields = 0;
  let ticks = 0;
  let ticking = true;
  const tick = () => {
    ticks++;
    if (ticking) setImmediate(tick);
  };
  const seenTicks: number[] = [];
  const { rpc, send } = setup({
    limits: { maxBatch: 10_000, maxDepth: 64 },
    yieldToLoop: (_calls, first) => (yields++, first ? Promise.resolve() : new Promise((r) => setImmediate(r))),
  });
  rpc.register('test.tick', obj({}), () => (seenTicks.push(ticks), ticks));
  const n = BATCH_SLICE * 50;
  setImmediate(tick);
  const replies = await send(Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'test.tick' })));
  ticking = false;
  assert.equal(replies.length, n);
  assert.equal(yields, 50, 'one yield before each slice');
  // The ticker ran between slices: calls of a later slice see more ticks than the first slice did.
  const firstSlice = seenTicks[0]!;
  const lastSlice = seenTicks[n - 1]!;
  assert.ok(lastSlice - firstSlice >= 49, `the timer ran ${lastSlice - firstSlice} times during the batch`);
  for (let s = 1; s < 50; s++)
    assert.ok(seenTicks[s * BATCH_SLICE]! > seenTicks[(s - 1) * BATCH_SLICE]!, `a tick before slice ${s}`);
});
