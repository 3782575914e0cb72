// Subscriptions over a real WebSocket: capped per connection (server.max_subscriptions) and across
// connections (server.max_subscriptions_total) with a -32600 naming the limit; an unsubscribe or a
// close frees the slot, so a subscribe/unsubscribe loop never runs into the cap; a repeat
// policy.watch streams each event once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { registerPolicyMethods } from '../../../daemon/api/rpc/policy.js';
import { registerSystemMethods } from '../../../daemon/api/rpc/system.js';
import { RpcRegistry } from '../../../daemon/api/rpc/registry.js';
import type { DaemonHealth } from '../../../daemon/daemon.js';
import { API_TOKEN, startApiServer } from '../../helpers/api-server.js';
import { stubPolicy } from '../../helpers/policy-stub.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { waitFor } from '../../helpers/wait.js';

const HOUR = { interval_ms: 3_600_000 };

test('subscriptions are capped per connection and daemon-wide; ending one frees its slot', async (t) => {
  const rpc = new RpcRegistry();
  registerSystemMethods({ rpc, health: () => ({ status: 'ready' }) as DaemonHealth, info: () => ({}) });
  const stub = stubPolicy();
  registerPolicyMethods(rpc, stub.policy);
  const { api } = await startApiServer({ max_subscriptions: 3, max_subscriptions_total: 4 }, { rpc });
  t.after(() => api.stop());
  const ws = `${api.url('ws')}/ws`;
  const live = () => api.health().detail?.ws_subscriptions;
  const a = await RpcTestClient.connect(ws, API_TOKEN);
  const b = await RpcTestClient.connect(ws, API_TOKEN);

  // 100 cycles on a cap of 3: each unsubscribe gave its slot back.
  for (let i = 0; i < 100; i++) {
    const s = await a.call('system.subscribe', HOUR);
    assert.equal(s.error, undefined, `cycle ${i}: ${JSON.stringify(s.error)}`);
    await a.call('system.unsubscribe', { subscription: s.result.subscription });
  }
  assert.equal(live(), 0);

  for (let i = 0; i < 3; i++) assert.equal((await a.call('system.subscribe', HOUR)).error, undefined);
  const own = await a.call('system.subscribe', HOUR);
  assert.deepEqual(own.error, {
    code: -32600,
    message:
      'Invalid Request: this connection already holds 3 live subscriptions, the limit (server.max_subscriptions); unsubscribe one first',
    data: { field: '(subscriptions)', rule: 'max_subscriptions', limit: 3, value: 4 },
  });
  assert.equal((await b.call('system.subscribe', HOUR)).error, undefined);
  const all = await b.call('system.subscribe', HOUR);
  assert.deepEqual(all.error, {
    code: -32600,
    message:
      'Invalid Request: the daemon already serves 4 live subscriptions across connections, the limit (server.max_subscriptions_total)',
    data: { field: '(subscriptions)', rule: 'max_subscriptions_total', limit: 4, value: 5 },
  });
  assert.equal(live(), 4, 'the refused calls took no slot');

  await a.close();
  await waitFor(() => (live() === 1 ? true : undefined), "the closed connection's slots to be freed");
  assert.equal((await b.call('system.subscribe', HOUR)).error, undefined);

  // A repeat watch: one listener, each event once; the notification before a reply arrives first.
  for (let i = 0; i < 3; i++) assert.equal((await b.call('policy.watch', { id: 'ep-1' })).error, undefined);
  assert.equal(stub.listeners.size, 1);
  stub.emit({ episode: 'ep-1', seq: 0 });
  await b.call('system.info');
  assert.equal(b.notifications.filter((n) => n.method === 'policy.event').length, 1);
  await b.close();
  await waitFor(() => (stub.listeners.size === 0 ? true : undefined), 'the watch to end with the connection');
  assert.equal(live(), 0);
});
