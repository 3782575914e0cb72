// End to end: daemon ↔ `brainstem sim` children over the embedded broker, over Mosquitto and
// over the /controller WebSocket, driven through the robots.* JSON-RPC methods.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callTool, poseFromHere, startRig, waitReady, type Transport } from './harness.js';
import type { IPublishPacket } from 'mqtt';
import { connectMqtt } from '../../helpers/mqtt.js';
import { waitFor } from '../../helpers/wait.js';

for (const transport of ['embedded', 'mosquitto', 'ws'] as Transport[]) {
  test(`e2e over ${transport}: move_to, move_eef_chunk, dual-arm with a held arm, set_gripper, check_path, stop mid-move`, async (t) => {
    const rig = await startRig(t, transport);
    if (!rig) return;
    await waitReady(rig, 'arm1');
    await waitReady(rig, 'duo');

    const list = (await rig.rpc.call('robots.list')).result.robots;
    assert.deepEqual(
      list.map((r: any) => [r.id, r.robot, r.kind, r.transport, r.controller.name]),
      [
        ['arm1', 'yam', 'robot', transport === 'ws' ? 'ws' : 'mqtt', 'brainstem-sim'],
        ['duo', 'dual-yam', 'setup', transport === 'ws' ? 'ws' : 'mqtt', 'brainstem-sim'],
      ],
    );
    await waitFor(
      async () =>
        (await rig.rpc.call('robots.list')).result.robots[0].clock.source === 'round_trip' ? true : undefined,
      'a round-trip clock estimate',
    );

    // move_to, with progress notifications.
    const target = await poseFromHere(rig, 'arm1', 'arm', 0.03, 0.02, -0.02);
    const before = rig.rpc.notifications.length;
    const moved = await callTool(rig, 'arm1', 'move_to', { target });
    assert.equal(moved.status, 'ok', moved.message);
    assert.equal(moved.reached, true);
    assert.ok(moved.arms.arm.pose_error.position_m < 0.002, JSON.stringify(moved.arms.arm.pose_error));
    const phases = rig.rpc.notifications
      .slice(before)
      .filter((n) => n.method === 'robots.progress' && n.params.call_id === moved.call_id)
      .map((n) => n.params.phase);
    assert.deepEqual(phases, ['validated', 'planned', 'sent', 'accepted', 'started', 'finished', 'settled']);

    // move_eef_chunk as Hermes text, as a local model would emit it.
    const a = await poseFromHere(rig, 'arm1', 'arm', 0.02, 0, 0);
    const b = { pose_xyzquat: [a.pose_xyzquat[0]!, a.pose_xyzquat[1]! - 0.03, ...a.pose_xyzquat.slice(2)] };
    const text = `<tool_call>{"name": "move_eef_chunk", "arguments": {"poses": [${JSON.stringify(a)}, ${JSON.stringify(b)}]}}</tool_call>`;
    const chunk = (await rig.rpc.call('robots.call', { robot: 'arm1', call: text }, 30_000)).result;
    assert.equal(chunk.status, 'ok', chunk.message);
    chunk.arms.arm.tcp
      .slice(0, 3)
      .forEach((x: number, i: number) => assert.ok(Math.abs(x - b.pose_xyzquat[i]!) < 0.002));

    // Dual arm: the left arm moves, the right one is held.
    const right0 = (await callTool(rig, 'duo', 'get_state', {})).arms.right.q;
    const left = await poseFromHere(rig, 'duo', 'left', 0.02, -0.02, 0.02);
    const dual = await callTool(rig, 'duo', 'move_to', { target: { left, right: null } });
    assert.equal(dual.status, 'ok', dual.message);
    assert.deepEqual(dual.arms.right.q, right0, 'the held arm did not move');

    // set_gripper on both arms of the setup.
    const grip = await callTool(rig, 'duo', 'set_gripper', { positions: { left: 0.2, right: 0.6 } });
    assert.equal(grip.status, 'ok', grip.message);
    assert.ok(
      Math.abs(grip.arms.left.gripper - 0.2) < 1e-6 && Math.abs(grip.arms.right.gripper - 0.6) < 1e-6,
      JSON.stringify(grip.arms),
    );

    // check_path plans only.
    const check = await callTool(rig, 'arm1', 'check_path', {
      poses: [await poseFromHere(rig, 'arm1', 'arm', 0.05, 0, 0)],
    });
    assert.equal(check.status, 'ok', check.message);
    const far = await callTool(rig, 'arm1', 'check_path', {
      poses: [{ pose_xyzquat: [0.65, 0, 0.6, 0, 0.7071068, 0, 0.7071068] }],
    });
    assert.equal(far.reason, 'unreachable', far.message);
    const outside = await callTool(rig, 'arm1', 'check_path', { poses: [{ pose_xyzquat: [1.5, 0, 0.3, 0, 0, 0, 1] }] });
    assert.equal(outside.reason, 'outside_workspace', outside.message);

    // Call ids are unique across the daemon's robots, not only per robot.
    const ids = [moved, chunk, dual, grip, check, far, outside].map((o) => o.call_id);
    assert.equal(new Set(ids).size, ids.length, ids.join(' '));

    // Stop mid-move: robots.stop wins, the move reports stopped, the arm is at rest.
    const farther = await poseFromHere(rig, 'arm1', 'arm', 0.08, 0, 0);
    const mark = rig.rpc.notifications.length;
    const long = callTool(rig, 'arm1', 'move_to', { target: farther });
    await waitFor(
      () => (rig.rpc.notifications.slice(mark).some((n) => n.params?.phase === 'started') ? true : undefined),
      'the long move to start',
    );
    const busy = await callTool(rig, 'arm1', 'move_to', { target });
    assert.equal(busy.status, 'busy');
    const stop = (await rig.rpc.call('robots.stop', { robot: 'arm1' })).result.stopped[0];
    assert.equal(stop.status, 'ok', stop.message);
    const stopped = await long;
    assert.equal(stopped.status, 'stopped');
    assert.ok(Math.max(...stop.arms.arm.dq.map(Math.abs)) < 0.05, 'at rest after the stop');
  });
}

test('robots.tools, robots.state streaming, robots.list problems and bad params', async (t) => {
  const rig = await startRig(t, 'embedded', { robots: [{ id: 'arm1', robot: 'yam' }] });
  if (!rig) return;
  await waitReady(rig, 'arm1');
  const tools = (await rig.rpc.call('robots.tools', { robot: 'arm1' })).result;
  assert.deepEqual(
    tools.tools.map((x: any) => x.function.name),
    ['move_to', 'move_eef_chunk', 'check_path', 'set_gripper', 'get_state', 'stop', 'done'],
  );
  assert.equal(tools.tools[0].type, 'function');
  const plain = (await rig.rpc.call('robots.tools', { robot: 'arm1', format: 'plain' })).result;
  assert.equal(plain.tools[0].name, 'move_to');
  const sub = (await rig.rpc.call('robots.state', { robot: 'arm1', rate_hz: 50 })).result;
  assert.equal(sub.notification, 'robots.state');
  const first = await rig.rpc.nextNotification('robots.state');
  assert.equal(first.params.subscription, sub.subscription);
  assert.equal(first.params.ready, true);
  assert.deepEqual(first.params.arms.arm.q, [0, 1, 1, 0, 0, 0]);
  assert.equal(first.params.arms.arm.tcp.length, 7);
  await waitFor(
    () => (rig.rpc.notifications.filter((n) => n.method === 'robots.state').length >= 10 ? true : undefined),
    '10 state notifications',
  );
  assert.deepEqual((await rig.rpc.call('robots.unsubscribe', { subscription: sub.subscription })).result, {
    unsubscribed: sub.subscription,
  });
  const unknown = await rig.rpc.call('robots.call', { robot: 'nope', call: {} });
  assert.equal(unknown.error!.code, -32602);
  assert.match(unknown.error!.message, /robot: is not a served robot \(served: arm1\), got "nope"/);
  const rate = await rig.rpc.call('robots.state', { robot: 'arm1', rate_hz: 5000 });
  assert.equal(rate.error!.code, -32602);
});

test('over Mosquitto (MQTT 5) commands carry correlation data = their id and a message expiry', async (t) => {
  const rig = await startRig(t, 'mosquitto', { robots: [{ id: 'arm1', robot: 'yam' }] });
  if (!rig) return;
  await waitReady(rig, 'arm1');
  const sniffer = await connectMqtt(rig.broker!, { protocolVersion: 5 });
  t.after(() => sniffer.endAsync());
  const seen: { topic: string; id: string; correlation?: string; expiry?: number }[] = [];
  sniffer.on('message', (topic, payload, packet: IPublishPacket) => {
    seen.push({
      topic,
      id: JSON.parse(payload.toString()).id,
      correlation: packet.properties?.correlationData?.toString(),
      expiry: packet.properties?.messageExpiryInterval,
    });
  });
  await sniffer.subscribeAsync([`${rig.base}/robots/arm1/gripper`, `${rig.base}/robots/arm1/stop`], { qos: 1 });
  const grip = await callTool(rig, 'arm1', 'set_gripper', { gripper: 0.4 });
  assert.equal(grip.status, 'ok', grip.message);
  const stop = (await rig.rpc.call('robots.stop', { robot: 'arm1' })).result.stopped[0];
  assert.equal(stop.status, 'ok', stop.message);
  await waitFor(() => (seen.length === 2 ? true : undefined), 'both commands on the wire');
  assert.deepEqual(
    seen.map((m) => [m.topic.split('/').pop(), m.correlation === m.id, m.expiry]),
    [
      ['gripper', true, 1],
      ['stop', true, undefined],
    ],
  );
});
