// WebSocket heartbeat: clients that answer pings stay; a client that stops answering is dropped
// (and its subscriptions end with it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { waitFor, within } from '../../helpers/wait.js';

test('a client that answers pings survives heartbeats; one that does not is disconnected', async (t) => {
  const d = await startTestDaemon({ server: { ws_heartbeat_ms: 100 } });
  t.after(() => d.stop());
  const live = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const silent = await RpcTestClient.connect(d.ws, TEST_TOKEN, { ws: { autoPong: false } });
  await silent.call('system.subscribe', { interval_ms: 100 });
  let pings = 0;
  live.ws.on('ping', () => pings++);
  const dropped = await within(silent.closed, 10_000, 'the silent client to be dropped');
  assert.equal(dropped.code, 1006, 'terminated without a close frame');
  await waitFor(() => (pings >= 3 ? true : undefined), 'three heartbeats on the live client');
  assert.equal((await live.call('system.info')).result.name, 'brainstem');
  await waitFor(() => (d.api.health().detail?.ws_clients === 1 ? true : undefined), 'the server to count one client');
  await live.close();
});
