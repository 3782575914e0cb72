// A description sent over the /controller WebSocket must name the robot of its envelope, as one
// over MQTT must name the robot of its topic: otherwise it is invalid, counted, and not applied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { waitFor } from '../../helpers/wait.js';

const description = (robot: string) => ({
  v: 1,
  robot,
  session: 'c-test',
  time: 1,
  controller: { name: 'test', version: '1' },
  arms: [{ name: 'arm', joints: ['joint1'], gripper: false }],
  state_rate: 100,
  heartbeat_timeout: 0.5,
});

test('a description over WebSocket naming another robot than its envelope is invalid and ignored', async (t) => {
  const d = await startTestDaemon({ robots: { serve: [{ id: 'wsbot', robot: 'yam', transport: 'ws' }] } });
  t.after(() => d.stop());
  const rpc = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => rpc.close());
  const ws = new WebSocket(`${d.ws.replace(/\/ws$/, '')}/controller`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  t.after(() => ws.close());
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  ws.send(JSON.stringify({ type: 'availability', robot: 'wsbot', payload: 'online' }));
  ws.send(JSON.stringify({ type: 'description', robot: 'wsbot', payload: description('otherbot') }));
  const r = await waitFor(async () => {
    const robot = (await rpc.call('robots.list')).result.robots[0];
    return robot.invalid_messages > 0 ? robot : undefined;
  }, 'the description counted invalid');
  assert.equal(r.invalid_messages, 1);
  assert.equal(r.controller, null, 'no controller was taken from it');
});
