// Integration against a real Mosquitto (CI's, or one started here): MQTT 5, no embedded broker,
// retained availability, offline on a clean stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestDaemon } from '../../helpers/daemon.js';
import { getMosquitto } from '../../helpers/mosquitto.js';
import { connectMqtt, nextMessage } from '../../helpers/mqtt.js';

test('the daemon speaks MQTT 5 to Mosquitto and keeps its availability retained', async (t) => {
  const broker = await getMosquitto(t);
  if (!broker) return;
  t.after(() => broker.stop());
  // A unique base: CI's broker is shared and keeps retained messages between runs.
  const base = `bstest/${randomBytes(4).toString('hex')}`;
  const d = await startTestDaemon({ mqtt: { url: broker.urlWithCredentials, base } });
  t.after(() => d.stop());
  assert.equal(d.broker, undefined, 'no embedded broker with mqtt.url');
  const client = d.daemon.health().services['mqtt-client']!;
  assert.deepEqual([client.status, client.detail!.protocol, client.detail!.connected], ['ready', '5', true]);

  const observer = await connectMqtt(broker, { protocolVersion: 5 });
  t.after(() => observer.endAsync());
  const topic = `${base}/daemon/availability`;
  assert.deepEqual(await nextMessage(observer, topic), { topic, payload: 'online', retain: true });
  const offline = nextMessage(observer, topic, (m) => m.payload === 'offline');
  await d.daemon.stop();
  assert.equal((await offline).payload, 'offline');

  const late = await connectMqtt(broker);
  t.after(() => late.endAsync());
  assert.deepEqual(
    await nextMessage(late, topic),
    { topic, payload: 'offline', retain: true },
    'offline stays retained',
  );
});

test('mqtt.protocol 3.1.1 is honoured against an MQTT 5 broker', async (t) => {
  const broker = await getMosquitto(t);
  if (!broker) return;
  t.after(() => broker.stop());
  const d = await startTestDaemon({
    mqtt: { url: broker.urlWithCredentials, base: `bstest/${randomBytes(4).toString('hex')}`, protocol: '3.1.1' },
  });
  t.after(() => d.stop());
  assert.equal(d.daemon.health().services['mqtt-client']!.detail!.protocol, '3.1.1');
});
