// The attacks of issue 25 against the embedded broker: with the old single shared password any
// client drove robot yam, overwrote retained identity, faked the heartbeat, read $SYS and took
// over client ids. Each identity now has its own secret and grants (daemon/mqtt/acl.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type MqttClient } from 'mqtt';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { connectMqtt, nextMessage } from '../../helpers/mqtt.js';
import { within } from '../../helpers/wait.js';

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon({
    mqtt: { observers: ['app'] },
    robots: {
      serve: [
        { id: 'yam', robot: 'yam' },
        { id: 'other', robot: 'yam' },
      ],
    },
  });
});
after(() => d.stop());

let n = 0;
const as = (username: string, clientId = `${username}.test-${n++}`) => connectMqtt(d.mqttAs(username), { clientId });
const closed = (c: MqttClient) => within(new Promise<void>((r) => c.once('close', () => r())), 10_000, 'the close');
const trajectory = JSON.stringify({ v: 1, id: 'evil', arm: 'arm', joints: ['j1'], time: 0, start_time: 0 });

/** The SUBACK codes for `filters` (128 = refused; mqtt.js rejects a SUBACK that has one). */
async function granted(c: MqttClient, filters: string[], qos: 0 | 1): Promise<number[]> {
  const ack = await c.subscribeAsync(filters, { qos }).catch((err: { packet?: { granted: number[] } }) => {
    if (!err.packet) throw err;
    return err.packet.granted.map((q) => ({ qos: q }));
  });
  return ack.map((g) => g.qos);
}

/**
 * `who` publishes `payload` on `topic`: the broker drops the connection, and a daemon-side
 * sniffer of `watch` sees the marker sent afterwards on `markerTopic`, not the attack (other
 * traffic, e.g. heartbeats, aside).
 */
async function refused(
  who: string,
  topic: string,
  payload: string,
  retain = false,
  markerTopic = topic,
  watch = topic,
): Promise<void> {
  const sniffer = await connectMqtt(d.mqttEndpoint);
  try {
    await sniffer.subscribeAsync(watch, { qos: 1 });
    const seen = (m: { topic: string; payload: string; retain: boolean }) =>
      !m.retain &&
      ((m.topic === topic && m.payload === payload) || (m.topic === markerTopic && m.payload === 'marker'));
    const first = new Promise<string>((resolve) =>
      sniffer.on('message', (t, p, packet) => {
        if (seen({ topic: t, payload: p.toString(), retain: packet.retain })) resolve(p.toString());
      }),
    );
    const attacker = await as(who);
    const gone = closed(attacker);
    attacker.publish(topic, payload, { qos: 0, retain });
    await gone;
    attacker.end(true);
    // The daemon may publish anywhere it is granted; elsewhere a controller sends the marker.
    const marker = await markerSender(markerTopic);
    marker.client.publish(markerTopic, 'marker', { qos: 1 });
    assert.equal(await within(first, 10_000, 'the marker'), 'marker', `${who} must not publish on ${topic}`);
    await marker.client.endAsync();
  } finally {
    await sniffer.endAsync();
  }
}

async function markerSender(topic: string): Promise<{ client: MqttClient }> {
  const robot = /\/robots\/([^/]+)\/(state|events|availability|description|cameras\/.+|sim\/scene)$/.exec(topic)?.[1];
  return { client: robot ? await as(`robot.${robot}`) : await connectMqtt(d.mqttEndpoint) };
}

test('a controller cannot command a robot, its own included, nor speak for another robot', async () => {
  await refused('robot.other', 'brainstem/robots/yam/trajectory', trajectory);
  await refused('robot.yam', 'brainstem/robots/yam/trajectory', trajectory);
  await refused('robot.other', 'brainstem/robots/yam/state', '{}');
  await refused('robot.other', 'brainstem/robots/yam/events', '{}');
  await refused('robot.other', 'brainstem/robots/yam/cameras/wrist', 'not a picture of yam');
  await refused('robot.other', 'brainstem/robots/yam/cameras/wrist/meta', '{}');
  await refused('observer.app', 'brainstem/robots/yam/cameras/wrist', 'x');
  await refused('robot.other', 'brainstem/robots/yam/sim/scene', '{}');
});

test('retained availability and description of a robot cannot be overwritten by others', async () => {
  await refused('robot.other', 'brainstem/robots/yam/availability', 'online', true);
  await refused('observer.app', 'brainstem/robots/yam/description', '{}', true);
});

test('nobody but the daemon publishes its heartbeat or availability; observers publish nothing', async () => {
  await refused('robot.yam', 'brainstem/daemon/heartbeat', '{}');
  await refused('observer.app', 'brainstem/daemon/availability', 'offline', true);
  await refused('observer.app', 'brainstem/robots/yam/stop', '{}');
  const observer = await as('observer.app');
  const gone = closed(observer);
  observer.publish('somewhere/else', 'x', { qos: 0 });
  await gone;
  observer.end(true);
});

test('$SYS is hidden from every identity and controllers read only their own commands', async () => {
  for (const who of [d.mqttEndpoint.username, 'robot.yam', 'observer.app']) {
    const c = await as(who);
    assert.deepEqual(await granted(c, ['$SYS/#', '$SYS/+/new/clients'], 0), [128, 128], `${who} and $SYS`);
    await c.endAsync();
  }
  const yam = await as('robot.yam');
  const filters = [
    'brainstem/robots/other/trajectory',
    'brainstem/robots/+/trajectory',
    'brainstem/#',
    'brainstem/robots/yam/state',
    'brainstem/robots/yam/trajectory',
    'brainstem/daemon/heartbeat',
  ];
  assert.deepEqual(await granted(yam, filters, 1), [128, 128, 128, 128, 1, 1]);
  await yam.endAsync();
});

test('a client id of another identity is refused, and the holder stays connected', async () => {
  const victim = await as('robot.yam', 'robot.yam.sim-1');
  await assert.rejects(as('observer.app', 'robot.yam.sim-1'), /Identifier rejected/);
  await assert.rejects(as('robot.other', 'robot.yam'), /Identifier rejected/);
  // An id owned by no identity is bound to whoever holds it while connected.
  const free = await as('robot.yam', 'mqttjs_free');
  await assert.rejects(as('observer.app', 'mqttjs_free'), /Identifier rejected/);
  assert.equal(victim.connected && free.connected, true);
  await victim.endAsync();
  await free.endAsync();
  await assert.rejects(connectMqtt({ ...d.mqttAs('robot.yam'), password: d.mqttEndpoint.password }), /Bad username/);
});

test('the daemon and a controller still talk: state in, commands out', async () => {
  const yam = await as('robot.yam');
  const daemon = await connectMqtt(d.mqttEndpoint);
  await yam.subscribeAsync('brainstem/robots/yam/trajectory', { qos: 1 });
  await daemon.subscribeAsync('brainstem/robots/yam/state', { qos: 0 });
  const command = nextMessage(yam, 'brainstem/robots/yam/trajectory');
  const state = nextMessage(daemon, 'brainstem/robots/yam/state');
  await daemon.subscribeAsync('brainstem/robots/yam/sim/scene', { qos: 0 });
  const scene = nextMessage(daemon, 'brainstem/robots/yam/sim/scene');
  yam.publish('brainstem/robots/yam/state', 'state-1', { qos: 0 });
  yam.publish('brainstem/robots/yam/sim/scene', 'scene-1', { qos: 0 });
  daemon.publish('brainstem/robots/yam/trajectory', trajectory, { qos: 1 });
  assert.equal((await state).payload, 'state-1');
  assert.equal((await scene).payload, 'scene-1');
  assert.equal((await command).payload, trajectory);
  await yam.endAsync();
  await daemon.endAsync();
});

test('a persistent session keeps no refused filter: nothing of another robot is queued for it', async () => {
  const clientId = `robot.yam.persist-${n++}`;
  const opts = { clientId, clean: false };
  const yam = await connectMqtt(d.mqttAs('robot.yam'), opts);
  assert.deepEqual(await granted(yam, ['brainstem/robots/yam/trajectory', 'brainstem/#'], 1), [1, 128]);
  await yam.endAsync();
  // While it is away the daemon commands the other robot (QoS 1: queued for matching sessions).
  const daemon = await connectMqtt(d.mqttEndpoint);
  await daemon.publishAsync('brainstem/robots/other/trajectory', trajectory, { qos: 1 });
  await daemon.publishAsync('brainstem/robots/yam/trajectory', trajectory, { qos: 1 });
  await daemon.endAsync();
  const seen: string[] = [];
  // Messages of the stored session come right after CONNACK: the handler is there before it.
  const creds = d.mqttAs('robot.yam');
  const back = connect(creds.url, { username: creds.username, password: creds.password, ...opts, reconnectPeriod: 0 });
  back.on('message', (topic) => seen.push(topic));
  await within(new Promise((r) => back.once('connect', r)), 10_000, 'the reconnect');
  await new Promise((r) => setTimeout(r, 500));
  await back.endAsync();
  assert.ok(!seen.includes('brainstem/robots/other/trajectory'), `another robot's command reached it: ${seen}`);
});

test('retained messages only on availability and description: a retained state or frame is refused', async () => {
  const state = JSON.stringify({ v: 1, seq: 0, time: 0, arms: {}, faults: [], hb: null });
  await refused('robot.yam', 'brainstem/robots/yam/state', state, true);
  await refused('robot.yam', 'brainstem/robots/yam/cameras/front', 'frame', true);
});

test('retained only on the exact availability and description topics of its identity, and at most 256 KiB', async () => {
  // A suffix check let `cameras/<any>/availability` be retained: each kept forever, replayed on subscribe.
  const cameras = 'brainstem/robots/yam/cameras/#';
  for (const topic of ['brainstem/robots/yam/cameras/c1/availability', 'brainstem/robots/yam/cameras/c2/description'])
    await refused('robot.yam', topic, 'x'.repeat(512), true, 'brainstem/robots/yam/cameras/c1', cameras);
  // Deeper camera topics are not granted at all, retained or not.
  await refused(
    'robot.yam',
    'brainstem/robots/yam/cameras/c1/x/y',
    'x',
    false,
    'brainstem/robots/yam/cameras/c1',
    cameras,
  );
  const big = JSON.stringify({ v: 1, x_pad: 'x'.repeat(256 * 1024) });
  await refused('robot.yam', 'brainstem/robots/yam/description', big, true);
  // Its own availability, within the bound, is still retained.
  const yam = await as('robot.yam');
  await yam.publishAsync('brainstem/robots/yam/availability', 'online', { qos: 1, retain: true });
  await yam.endAsync();
  const reader = await connectMqtt(d.mqttEndpoint);
  const m = await nextMessage(reader, 'brainstem/robots/yam/availability');
  await reader.endAsync();
  assert.deepEqual(m, { topic: 'brainstem/robots/yam/availability', payload: 'online', retain: true });
});
