// The robot link stopped and started again in one daemon: its MQTT handlers are added once, so
// a controller's message is handled once (a second start used to add a second copy of each).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { waitFor } from '../../helpers/wait.js';

test('after a stop and start of the robot link, an invalid controller message is counted once', async (t) => {
  const d = await startTestDaemon({
    mqtt: { base: 'restart' },
    robots: { serve: [{ id: 'arm1', robot: 'yam', transport: 'mqtt' }] },
  });
  t.after(() => d.stop());
  await d.robots.stop();
  await d.robots.start();
  const rpc = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => rpc.close());
  const c = await connectMqtt(d.mqttAs('robot.arm1'), { clientId: 'robot.arm1.test' });
  t.after(() => c.endAsync());
  await c.publishAsync('restart/robots/arm1/state', '{"v": 1}', { qos: 1 });
  // Every handler runs in the same turn for one message: once the count moves, it is final.
  const counted = await waitFor(async () => {
    const n = (await rpc.call('robots.list')).result.robots[0].invalid_messages;
    return n > 0 ? n : undefined;
  }, 'the invalid state counted');
  assert.equal(counted, 1);
});
