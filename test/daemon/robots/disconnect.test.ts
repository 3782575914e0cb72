// Dead man end to end: the client of a running robots.call disconnects; the daemon stops the arm
// through the ordinary stop path and the simulated controller brings it to rest short of the target.
// And at shutdown: stopping the robot link stops a motion started from RPC and answers its call.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import { callTool, poseFromHere, startRig, waitReady } from './harness.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { TEST_TOKEN } from '../../helpers/daemon.js';
import { waitFor, within } from '../../helpers/wait.js';

/** A ready arm1, the stops on its topic as they come, and a target 15 cm away (a few seconds' move). */
async function armWithStops(t: TestContext) {
  const rig = await startRig(t, 'embedded', { robots: [{ id: 'arm1', robot: 'yam' }] });
  if (!rig) return undefined;
  await waitReady(rig, 'arm1');
  const sniffer: MqttClient = await connectMqtt(rig.broker!);
  t.after(() => sniffer.endAsync());
  const stops: { reason: string }[] = [];
  sniffer.on('message', (_topic, payload) => stops.push(JSON.parse(payload.toString())));
  await sniffer.subscribeAsync(`${rig.base}/robots/arm1/stop`, { qos: 1 });
  return { rig, stops, target: await poseFromHere(rig, 'arm1', 'arm', 0, 0.15, 0) };
}

test('closing the WebSocket during robots.call stops the arm: at rest, short of the target', async (t) => {
  const arm = await armWithStops(t);
  if (!arm) return;
  const { rig, stops, target } = arm;
  // The move's client leaves once it has started.
  const client = await RpcTestClient.connect(rig.d.ws, TEST_TOKEN);
  const call = { robot: 'arm1', call: { name: 'move_to', arguments: { target } } };
  client.ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'robots.call', params: call }));
  await waitFor(
    () => (client.notifications.some((n) => n.params?.phase === 'started') ? true : undefined),
    'the move to start',
  );
  await client.close();

  await waitFor(() => (stops.length > 0 ? true : undefined), 'a stop on the wire');
  assert.equal(stops[0]!.reason, 'client_disconnected');
  const atRest = await waitFor(async () => {
    const s = await callTool(rig, 'arm1', 'get_state', {});
    const arm = s.arms.arm;
    return arm.mode === 'hold' && Math.max(...arm.dq.map(Math.abs)) < 1e-3 ? arm : undefined;
  }, 'the arm at rest');
  const dy = target.pose_xyzquat[1]! - atRest.tcp[1]!;
  assert.ok(dy > 0.02, `the arm stopped ${dy.toFixed(4)} m short of the target`);
  assert.deepEqual((await rig.rpc.call('robots.list')).result.robots[0].busy, [], 'no motion left running');
});

test('stopping the robot link stops a motion started from RPC and answers its call', async (t) => {
  // Only policy episodes were stopped at shutdown: an RPC motion ran on and its call never ended.
  const arm = await armWithStops(t);
  if (!arm) return;
  const { rig, stops, target } = arm;
  const call = callTool(rig, 'arm1', 'move_to', { target });
  const executor = rig.d.robots.robot('arm1')!.executor;
  await waitFor(() => (executor.busyArms().length ? true : undefined), 'the move');
  await rig.d.robots.stop();

  const outcome = await within(call, 10_000, 'the answer to the call');
  assert.notEqual(outcome.status, 'ok', JSON.stringify(outcome));
  assert.deepEqual(executor.busyArms(), [], 'nothing left running');
  await waitFor(() => (stops.length ? true : undefined), 'a stop on the wire');
  assert.equal(stops[0]!.reason, 'daemon_stop');
});
