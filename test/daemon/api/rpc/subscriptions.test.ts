// Subscriptions and watches hand back their close hook when they end: a subscribe/unsubscribe
// loop leaves a connection as it was (each hook held a telemetry sampler), and a repeat
// policy.watch adds no second listener, and an ended episode's policy.start hook is gone. Driven
// through the real method handlers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { handleMessage } from '../../../../daemon/api/rpc/protocol.js';
import { registerPolicyMethods } from '../../../../daemon/api/rpc/policy.js';
import { RpcRegistry } from '../../../../daemon/api/rpc/registry.js';
import { ConnectionHooks, SubscriptionBudget } from '../../../../daemon/api/rpc/subscriptions.js';
import { registerSystemMethods } from '../../../../daemon/api/rpc/system.js';
import type { DaemonHealth } from '../../../../daemon/daemon.js';
import { stubPolicy } from '../../../helpers/policy-stub.js';
import { parsed, testRpcContext } from '../../../helpers/rpc.js';

function setup() {
  const rpc = new RpcRegistry();
  const health = () => ({ status: 'ready', ready: true, services: {} }) as DaemonHealth;
  registerSystemMethods({ rpc, health, info: () => ({}) });
  const stub = stubPolicy();
  registerPolicyMethods(rpc, stub.policy);
  const budget = new SubscriptionBudget(4, 8);
  const hooks = new ConnectionHooks(budget);
  const notified: unknown[] = [];
  const ctx = testRpcContext(hooks, (method, params) => (notified.push({ method, params }), true));
  let id = 1;
  const call = async (method: string, params: unknown) =>
    parsed(
      await handleMessage(JSON.stringify({ jsonrpc: '2.0', id: id++, method, params }), rpc, ctx, {
        log: pino({ level: 'silent' }),
      }),
    ) as { result?: any; error?: any };
  return { ...stub, budget, hooks, notified, call };
}

test('1000 system.subscribe/unsubscribe cycles leave no close hook and no slot behind', async () => {
  const { hooks, budget, call } = setup();
  for (let i = 0; i < 1000; i++) {
    const { result } = await call('system.subscribe', { interval_ms: 3_600_000 });
    assert.equal(hooks.size, 1);
    assert.deepEqual((await call('system.unsubscribe', { subscription: result.subscription })).result, {
      unsubscribed: result.subscription,
    });
  }
  assert.equal(hooks.size, 0);
  assert.equal(budget.live, 0);
});

test('closing a connection ends its subscriptions and frees their slots', async () => {
  const { hooks, budget, call } = setup();
  for (let i = 0; i < 3; i++) assert.ok((await call('system.subscribe', { interval_ms: 3_600_000 })).result);
  assert.equal(budget.live, 3);
  hooks.close((err) => assert.fail(String(err)));
  assert.deepEqual([hooks.size, budget.live], [0, 0]);
});

test('a repeat policy.watch adds no listener; policy.unwatch removes it and its hook', async () => {
  const { hooks, listeners, emit, notified, call } = setup();
  for (let i = 0; i < 3; i++)
    assert.deepEqual((await call('policy.watch', { id: 'ep-1' })).result, {
      id: 'ep-1',
      state: 'deciding',
      notification: 'policy.event',
    });
  assert.deepEqual([listeners.size, hooks.size], [1, 1]);
  emit({ episode: 'ep-1', seq: 7 });
  assert.deepEqual(notified, [{ method: 'policy.event', params: { episode: 'ep-1', seq: 7 } }]);
  assert.deepEqual((await call('policy.unwatch', { id: 'ep-1' })).result, { id: 'ep-1', watching: false });
  assert.deepEqual([listeners.size, hooks.size], [0, 0]);
  emit({ episode: 'ep-1', seq: 8 });
  assert.equal(notified.length, 1);
  const again = await call('policy.unwatch', { id: 'ep-1' });
  assert.equal(again.error.code, -32602);
  assert.equal(
    again.error.message,
    'Invalid params: id: is not an episode this connection watches (policy.watch), got "ep-1"',
  );
  assert.deepEqual(again.error.data, { field: 'id', rule: 'must be watched by this connection' });
});

test('policy.start holds a close hook only while its episode runs; closing stops the running one', async () => {
  const { hooks, end, stopped, call } = setup();
  const start = async () =>
    (await call('policy.start', { robot: 'arm1', instruction: 'tidy', provider: { kind: 'scripted', lines: [] } }))
      .result.id as string;
  for (let i = 0; i < 50; i++) {
    const id = await start();
    assert.equal(hooks.size, 1, `episode ${id} running`);
    end(id);
    await new Promise((r) => setImmediate(r));
    assert.equal(hooks.size, 0, `episode ${id} ended`);
  }
  const last = await start();
  hooks.close((err) => assert.fail(String(err)));
  assert.deepEqual(stopped, [last]);
});
