// A controller message as large as a camera frame is not parsed: over MQTT (state, sim/scene) and
// over WebSocket (a text envelope) one above MAX_MESSAGE_BYTES is counted as invalid for its robot,
// with a reason naming the bound, and never reaches the session.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { WebSocket } from 'ws';
import { MAX_MESSAGE_BYTES } from '../../../robot/link/protocol.js';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { waitFor } from '../../helpers/wait.js';

const arm = { q: [0, 0, 0, 0, 0, 0], dq: [0, 0, 0, 0, 0, 0], gripper: 1, mode: 'hold', trajectory: null, faults: [] };
/** A state valid but for its size (x_ fields are allowed): the old code parsed and delivered it. */
const bigState = JSON.stringify({
  v: 1,
  seq: 0,
  time: 0,
  arms: { arm },
  faults: [],
  hb: null,
  x_pad: 'x'.repeat(MAX_MESSAGE_BYTES),
});
const bound = new RegExp(`must be at most ${MAX_MESSAGE_BYTES} bytes`);

test('oversized controller messages over MQTT and WebSocket are dropped unparsed and counted', async (t) => {
  const d = await startTestDaemon({
    mqtt: { base: 'big' },
    robots: {
      serve: [
        { id: 'm', robot: 'yam', transport: 'mqtt' },
        { id: 'w', robot: 'yam', transport: 'ws' },
      ],
    },
  });
  t.after(() => d.stop());
  const session = (id: string) => d.robots.robot(id)!.session;

  const c = await connectMqtt(d.mqttAs('robot.m'), { clientId: 'robot.m.test' });
  t.after(() => c.endAsync());
  await c.publishAsync('big/robots/m/state', bigState, { qos: 1 });
  await waitFor(() => (session('m').invalid > 0 ? true : undefined), 'the oversized state counted');
  assert.match(session('m').lastInvalid!, bound);
  assert.equal(session('m').latest, null, 'the state was not delivered');
  await c.publishAsync('big/robots/m/sim/scene', `{"x_pad": "${'x'.repeat(MAX_MESSAGE_BYTES)}"}`, { qos: 1 });
  await waitFor(() => (session('m').invalid > 1 ? true : undefined), 'the oversized scene counted');
  assert.match(session('m').lastInvalid!, bound);

  const ws = new WebSocket(d.api.url('ws') + '/controller', { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  t.after(() => ws.terminate());
  await once(ws, 'open');
  ws.send(JSON.stringify({ type: 'availability', robot: 'w', payload: 'online' }));
  ws.send(JSON.stringify({ type: 'state', robot: 'w', payload: JSON.parse(bigState) }));
  await waitFor(() => (session('w').invalid > 0 ? true : undefined), 'the oversized envelope counted');
  assert.match(session('w').lastInvalid!, /^envelope: .*must be at most 262144 bytes/);
  assert.equal(session('w').latest, null, 'the state was not delivered');
  assert.equal(session('w').availability, 'online', 'the socket still serves its robot');
});
