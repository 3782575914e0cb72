import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { handleMessage } from '../../../../daemon/api/rpc/protocol.js';
import { RpcCode, RpcError, RpcRegistry } from '../../../../daemon/api/rpc/registry.js';
import { parsed, testRpcContext } from '../../../helpers/rpc.js';
import { int, obj, str } from '../../../../robot/common/validation/builders.js';

const ctx = testRpcContext();

function setup() {
  const rpc = new RpcRegistry();
  const calls: unknown[] = [];
  rpc.register(
    'test.echo',
    obj({ n: int({ min: 0, max: 10, default: 1 }), s: str({ default: '' }) }),
    (p) => (calls.push(p), p),
  );
  rpc.register('test.app_error', obj({}), () => {
    throw new RpcError(-32001, 'robot busy', { robot: 'left' });
  });
  rpc.register('test.crash', obj({}), () => {
    throw new TypeError('x is undefined');
  });
  rpc.register('test.void', obj({}), () => undefined);
  const outcomes: string[] = [];
  const hooks = {
    log: pino({ level: 'silent' }),
    onOutcome: (m: string, known: boolean, o: string) => void outcomes.push(`${m}:${known}:${o}`),
  };
  const send = (msg: unknown) =>
    handleMessage(typeof msg === 'string' ? msg : JSON.stringify(msg), rpc, ctx, hooks).then(parsed) as Promise<any>;
  return { rpc, calls, outcomes, send };
}

test('a valid call gets its result with the same id; params get defaults', async () => {
  const { send, calls } = setup();
  assert.deepEqual(await send({ jsonrpc: '2.0', id: 7, method: 'test.echo', params: { n: 3 } }), {
    jsonrpc: '2.0',
    id: 7,
    result: { n: 3, s: '' },
  });
  assert.deepEqual(await send({ jsonrpc: '2.0', id: 'a', method: 'test.echo' }), {
    jsonrpc: '2.0',
    id: 'a',
    result: { n: 1, s: '' },
  });
  assert.deepEqual(await send({ jsonrpc: '2.0', id: null, method: 'test.void' }), {
    jsonrpc: '2.0',
    id: null,
    result: null,
  });
  assert.equal(calls.length, 2);
});

test('malformed JSON is a parse error (-32700) with id null', async () => {
  const { send, outcomes } = setup();
  const r = await send('{"jsonrpc": "2.0", "method": ');
  assert.equal(r.error.code, RpcCode.PARSE_ERROR);
  assert.equal(r.id, null);
  assert.match(r.error.message, /^Parse error: /);
  assert.deepEqual(outcomes, ['(parse):false:-32700']);
});

test('a key given twice is -32600 naming it (JSON.parse would keep the last silently); nothing runs', async () => {
  const { send, calls } = setup();
  const r = await send('{"jsonrpc": "2.0", "id": 1, "method": "test.echo", "params": {"n": 2, "n": 9}}');
  assert.equal(r.error.code, RpcCode.INVALID_REQUEST);
  assert.match(r.error.message, /^Invalid Request: duplicate key "n" at position \d+: a key given twice is ambiguous$/);
  assert.deepEqual(r.error.data, { field: '(message)', rule: 'duplicate_key' });
  assert.equal(calls.length, 0);
  // Broken JSON stays a parse error even when a duplicate comes before the break.
  const broken = await send('{"jsonrpc": "2.0", "id": 1, "id": 2, "method": ');
  assert.equal(broken.error.code, RpcCode.PARSE_ERROR);
  // A duplicate 40 levels down (deeper than model output may nest, within max_json_depth) is found.
  const deep = `{"jsonrpc": "2.0", "id": 4, "method": "test.echo", "params": {"v": ${'['.repeat(40)}{"a": 1, "a": 2}${']'.repeat(40)}}}`;
  assert.equal((await send(deep)).error.data.rule, 'duplicate_key');
  // The same key in two objects (a batch's requests) is fine.
  const ok = await send([
    { jsonrpc: '2.0', id: 2, method: 'test.echo', params: { n: 1 } },
    { jsonrpc: '2.0', id: 3, method: 'test.echo', params: { n: 2 } },
  ]);
  assert.deepEqual(
    ok.map((x: any) => x.result.n),
    [1, 2],
  );
});

test('invalid request envelopes are -32600 naming the field', async () => {
  const { send } = setup();
  const cases: [unknown, string, unknown][] = [
    [42, '(request)', null],
    ['"text"', '(request)', null],
    [null, '(request)', null],
    [{ id: 1, method: 'test.echo' }, 'jsonrpc', 1],
    [{ jsonrpc: '1.0', id: 2, method: 'test.echo' }, 'jsonrpc', 2],
    [{ jsonrpc: '2.0', id: { a: 1 }, method: 'test.echo' }, 'id', null],
    [{ jsonrpc: '2.0', id: 3 }, 'method', 3],
    [{ jsonrpc: '2.0', id: 4, method: 5 }, 'method', 4],
    [{ jsonrpc: '2.0', id: 5, method: 'test.echo', params: 'n=1' }, 'params', 5],
  ];
  for (const [msg, field, id] of cases) {
    const r = await send(typeof msg === 'string' ? msg : JSON.stringify(msg));
    assert.equal(r.error?.code, RpcCode.INVALID_REQUEST, `case ${JSON.stringify(msg)}`);
    assert.equal(r.error.data.field, field, `case ${JSON.stringify(msg)}`);
    assert.equal(r.id, id, `case ${JSON.stringify(msg)}`);
  }
  const empty = await send([]);
  assert.equal(empty.error.code, RpcCode.INVALID_REQUEST);
});

test('an unknown method is -32601 naming it', async () => {
  const { send, outcomes } = setup();
  const r = await send({ jsonrpc: '2.0', id: 1, method: 'test.nope' });
  assert.deepEqual(r, {
    jsonrpc: '2.0',
    id: 1,
    error: { code: -32601, message: 'Method not found: test.nope', data: { method: 'test.nope' } },
  });
  assert.deepEqual(outcomes, ['test.nope:false:-32601']);
});

test('wrong param types are -32602 naming the field, the rule and the value', async () => {
  const { send, calls } = setup();
  const r = await send({ jsonrpc: '2.0', id: 1, method: 'test.echo', params: { n: 'three', s: 4 } });
  assert.equal(r.error.code, RpcCode.INVALID_PARAMS);
  assert.equal(
    r.error.message,
    'Invalid params: n: must be an integer in 0..10, got "three"; s: must be a string, got 4',
  );
  assert.deepEqual(r.error.data, {
    field: 'n',
    rule: 'must be an integer in 0..10',
    issues: [
      { field: 'n', rule: 'must be an integer in 0..10' },
      { field: 's', rule: 'must be a string' },
    ],
  });
  const unknown = await send({ jsonrpc: '2.0', id: 2, method: 'test.echo', params: { nn: 1 } });
  assert.match(unknown.error.message, /nn: is not a known key \(did you mean "n"\?\)/);
  const positional = await send({ jsonrpc: '2.0', id: 3, method: 'test.echo', params: [1] });
  assert.equal(positional.error.code, RpcCode.INVALID_PARAMS);
  assert.equal(calls.length, 0, 'the handler never ran');
});

test('handler errors: RpcError keeps its code and data, anything else is -32603', async () => {
  const { send } = setup();
  assert.deepEqual((await send({ jsonrpc: '2.0', id: 1, method: 'test.app_error' })).error, {
    code: -32001,
    message: 'robot busy',
    data: { robot: 'left' },
  });
  const crash = await send({ jsonrpc: '2.0', id: 2, method: 'test.crash' });
  assert.equal(crash.error.code, RpcCode.INTERNAL_ERROR);
  assert.match(crash.error.message, /test\.crash: x is undefined/);
});

test('notifications get no reply, even when they fail', async () => {
  const { send, calls } = setup();
  assert.equal(await send({ jsonrpc: '2.0', method: 'test.echo', params: { n: 2 } }), undefined);
  assert.equal(await send({ jsonrpc: '2.0', method: 'test.nope' }), undefined);
  assert.equal(calls.length, 1);
});

test('a batch answers each request in order and skips notifications', async () => {
  const { send } = setup();
  const r = await send([
    { jsonrpc: '2.0', id: 1, method: 'test.echo', params: { n: 5 } },
    { jsonrpc: '2.0', method: 'test.echo' },
    { jsonrpc: '2.0', id: 2, method: 'test.nope' },
    7,
  ]);
  assert.equal(r.length, 3);
  assert.deepEqual(r[0], { jsonrpc: '2.0', id: 1, result: { n: 5, s: '' } });
  assert.equal(r[1].error.code, -32601);
  assert.equal(r[2].error.code, -32600);
  assert.equal(await send([{ jsonrpc: '2.0', method: 'test.void' }]), undefined);
});

test('method names are area.verb or one word, unique, and rpc.* is reserved', () => {
  const { rpc } = setup();
  assert.throws(() => rpc.register('test.echo', obj({}), () => 1), /already registered/);
  for (const bad of ['rpc.discover', 'Single', '1x', 'Test.x', 'a..b', 'a.b-c', 'a.'])
    assert.throws(() => rpc.register(bad, obj({}), () => 1), /invalid JSON-RPC method name/, bad);
  assert.deepEqual(rpc.names(), ['test.app_error', 'test.crash', 'test.echo', 'test.void']);
});
