// The daemon's own MQTT link drops during a motion: the motion is abandoned (link_down) and its
// stop, which could not go out then, is the first command on the wire after the reconnection
// (it used to be lost, while mqtt.js could resend the old trajectory).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { MqttClient } from 'mqtt';
import { callTool, poseFromHere, startRig, waitReady } from './harness.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { waitFor } from '../../helpers/wait.js';

test('a stop lost with the MQTT link goes out first when the link is back', async (t) => {
  const rig = await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    config: { mqtt: { reconnect: { min_ms: 50, max_ms: 50 } } },
  });
  if (!rig) return;
  await waitReady(rig, 'arm1');
  const sniffer: MqttClient = await connectMqtt(rig.broker!);
  t.after(() => sniffer.endAsync());
  const commands: { topic: string; msg: { reason?: string } }[] = [];
  sniffer.on('message', (topic, payload) => commands.push({ topic, msg: JSON.parse(payload.toString()) }));
  const topics = ['trajectory', 'gripper', 'stop'].map((k) => `${rig.base}/robots/arm1/${k}`);
  await sniffer.subscribeAsync(topics, { qos: 1 });

  const target = await poseFromHere(rig, 'arm1', 'arm', 0, 0.15, 0);
  const call = callTool(rig, 'arm1', 'move_to', { target });
  await waitFor(() => (rig.d.robots.robot('arm1')!.executor.busyArms().length ? true : undefined), 'the move');
  await waitFor(() => (commands.some((c) => c.topic.endsWith('/trajectory')) ? true : undefined), 'the trajectory');
  const sent = commands.length;
  // The daemon's in-process connection to its broker breaks as a dropped socket would.
  (rig.d.mqtt as unknown as { client: MqttClient }).client.stream.destroy();

  const outcome = await call;
  assert.equal(outcome.reason, 'link_down', JSON.stringify(outcome));
  assert.match(outcome.message, /the motion was abandoned \(a stop goes out first when the link is back\)/);
  await waitFor(() => (commands.length > sent ? true : undefined), 'a command after the reconnection');
  const after = commands.slice(sent);
  assert.equal(after[0]?.topic, `${rig.base}/robots/arm1/stop`, JSON.stringify(after));
  assert.equal(after[0]?.msg.reason, 'link_down');
  assert.ok(!after.some((c) => c.topic.endsWith('/trajectory')), 'no trajectory resent');
});
