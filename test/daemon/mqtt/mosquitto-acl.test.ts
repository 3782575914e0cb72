// `brainstem mqtt credentials` against a real Mosquitto running with the files it writes: the
// grants hold there too (Mosquitto drops a refused publish and keeps the connection), and the
// daemon with its simulated controller (stored robot.yam secret) still moves the arm.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { MqttClient } from 'mqtt';
import { runCli, startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { getOwnMosquitto } from '../../helpers/mosquitto.js';
import { connectMqtt, nextMessage } from '../../helpers/mqtt.js';
import { RpcTestClient, waitRobotReady } from '../../helpers/rpc.js';
import { tempDir } from '../../helpers/temp.js';
import { within } from '../../helpers/wait.js';

const BASE = 'lab';

/** `brainstem mqtt credentials` for a config serving `serve` (YAML list items) with observer `app`. */
async function credentials(t: TestContext, serve: string[]) {
  const dir = tempDir('brainstem-acl-');
  t.after(() => dir.remove());
  const dataDir = join(dir.path, 'data');
  const config = join(dir.path, 'brainstem.yaml');
  const items = serve.map((x) => `    - ${x}\n`).join('');
  writeFileSync(
    config,
    `data_dir: ${dataDir}\nmqtt:\n  base: ${BASE}\n  observers: [app]\nrobots:\n  serve:\n${items}`,
  );
  const out = join(dir.path, 'mosquitto');
  const run = await runCli(['mqtt', 'credentials', '--config', config, '--out', out]);
  assert.equal(run.code, 0, run.stderr);
  const secret = (name: string) => readFileSync(join(dataDir, name), 'utf8').trim();
  return { dataDir, out, run, secret };
}

test('Mosquitto with the generated password and ACL files enforces the identities', async (t) => {
  const { dataDir, out, run, secret } = await credentials(t, [
    '{id: yam, robot: yam, sim: true}',
    '{id: other, robot: yam}',
  ]);
  assert.match(run.stdout, /robot\.yam \(controller\): .*mqtt-identities\/robot\.yam/);
  const secrets = [
    secret('mqtt-password'),
    secret('mqtt-identities/robot.yam'),
    secret('mqtt-identities/observer.app'),
  ];
  for (const s of secrets) assert.ok(!run.stdout.includes(s) && !run.stderr.includes(s), 'no secret printed');
  assert.equal(statSync(join(out, 'passwd')).mode & 0o777, 0o600);
  assert.match(readFileSync(join(out, 'passwd'), 'utf8'), /^robot\.yam:\$7\$101\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/m);

  const broker = await getOwnMosquitto(t, { passwordFile: join(out, 'passwd'), aclFile: join(out, 'acl') });
  if (!broker) return;
  t.after(() => broker.stop());
  const login = (username: string, password: string) => connectMqtt({ url: broker.url, username, password });
  const daemonCreds = ['brainstem', secret('mqtt-password')] as const;
  const yam = await login('robot.yam', secret('mqtt-identities/robot.yam'));
  const app = await login('observer.app', secret('mqtt-identities/observer.app'));
  const sniffer = await login(...daemonCreds);
  t.after(() => Promise.all([yam, app, sniffer].map((c) => c.endAsync())));

  /** `who` publishes on `topic` (acknowledged), then `marker` does: the sniffer sees only the marker. */
  const refused = async (who: MqttClient, topic: string, marker: MqttClient) => {
    const first = nextMessage(sniffer, topic, (m) => ['attack', 'marker'].includes(m.payload));
    await sniffer.subscribeAsync(topic, { qos: 1 });
    await who.publishAsync(topic, 'attack', { qos: 1 });
    await marker.publishAsync(topic, 'marker', { qos: 1 });
    assert.equal((await first).payload, 'marker', `refused on ${topic}`);
  };
  const other = await login('robot.other', secret('mqtt-identities/robot.other'));
  t.after(() => other.endAsync());
  await refused(yam, `${BASE}/robots/yam/trajectory`, sniffer);
  await refused(yam, `${BASE}/robots/other/state`, other);
  // A simulator's ground truth: its own robot's only.
  await refused(other, `${BASE}/robots/yam/sim/scene`, yam);
  await refused(app, `${BASE}/robots/yam/stop`, sniffer);
  await refused(app, `${BASE}/daemon/heartbeat`, sniffer);
  // Camera frames: a controller publishes its own robot's, observers read them.
  await refused(other, `${BASE}/robots/yam/cameras/wrist`, yam);
  // Only the four camera topic shapes: Mosquitto cannot refuse a retain by topic, so a deeper
  // topic (`cameras/<any>/availability`, retained for ever) is refused outright.
  const deeper = new Promise<string>((resolve) =>
    sniffer.on('message', (topic, p) => ['attack', 'marker'].includes(p.toString()) && resolve(topic)),
  );
  await sniffer.subscribeAsync(`${BASE}/robots/yam/cameras/#`, { qos: 1 });
  await yam.publishAsync(`${BASE}/robots/yam/cameras/c1/availability`, 'attack', { qos: 1, retain: true });
  await yam.publishAsync(`${BASE}/robots/yam/cameras/c1`, 'marker', { qos: 1 });
  assert.equal(await within(deeper, 10_000, 'a camera message'), `${BASE}/robots/yam/cameras/c1`, 'deeper: refused');
  const frameTopic = `${BASE}/robots/yam/cameras/wrist/meta`;
  const frame = nextMessage(app, frameTopic);
  await app.subscribeAsync(frameTopic, { qos: 1 });
  await yam.publishAsync(frameTopic, 'meta', { qos: 1 });
  assert.equal((await frame).payload, 'meta');
  await assert.rejects(login('robot.yam', 'wrong'), /Bad username or password|Not authorized/);

  // The daemon on this broker: its secret and the sim's are the stored ones.
  const d = await startTestDaemon({
    data_dir: dataDir,
    mqtt: { url: broker.url, base: BASE, observers: ['app'] },
    robots: { simulate: true, serve: [{ id: 'yam', robot: 'yam', sim: true }] },
  });
  t.after(() => d.stop());
  const rpc = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => rpc.close());
  await waitRobotReady(rpc, 'yam', 'robot yam ready over Mosquitto');
  const state = (await nextMessage(app, `${BASE}/robots/yam/state`)).payload;
  assert.ok(JSON.parse(state).arms.arm, 'an observer reads state');
  const call = async (name: string, args: object) =>
    (await rpc.call('robots.call', { robot: 'yam', call: { name, arguments: args } }, 30_000)).result;
  const p = (await call('get_state', {})).arms.arm.tcp as number[];
  const moved = await call('move_to', { target: { pose_xyzquat: [p[0]! + 0.02, ...p.slice(1)] } });
  assert.equal(moved.status, 'ok', moved.message);
});

test("Mosquitto with brainstem.conf binds client ids to identities: another identity reusing a controller's id does not knock it off", async (t) => {
  const { out, run, secret } = await credentials(t, ['{id: yam, robot: yam}']);
  const conf = readFileSync(join(out, 'brainstem.conf'), 'utf8');
  assert.ok(conf.includes(`password_file ${join(out, 'passwd')}\n`) && conf.includes(`acl_file ${join(out, 'acl')}\n`));
  assert.match(run.stdout, /^ {2}use_username_as_clientid true$/m);
  // The harness writes its own listener, password_file and acl_file lines; the binding is the new one.
  const bind = conf.split('\n').filter((l) => l.startsWith('use_username_as_clientid'));
  assert.deepEqual(bind, ['use_username_as_clientid true']);
  const broker = await getOwnMosquitto(t, {
    passwordFile: join(out, 'passwd'),
    aclFile: join(out, 'acl'),
    conf: `${bind[0]}\n`,
  });
  if (!broker) return;
  t.after(() => broker.stop());
  const login = (username: string, password: string, clientId: string) =>
    connectMqtt({ url: broker.url, username, password }, { clientId });
  const yam = await login('robot.yam', secret('mqtt-identities/robot.yam'), 'robot.yam.sim');
  let closes = 0;
  yam.on('close', () => closes++);
  const sniffer = await login('brainstem', secret('mqtt-password'), 'brainstem.sniffer');
  // The observer takes the simulator's id, then the bare identity name: neither is its own.
  const thief = await login('observer.app', secret('mqtt-identities/observer.app'), 'robot.yam.sim');
  const thief2 = await login('observer.app', secret('mqtt-identities/observer.app'), 'robot.yam');
  t.after(() => Promise.all([yam, sniffer, thief, thief2].map((c) => c.endAsync())));
  const topic = `${BASE}/robots/yam/state`;
  const seen = nextMessage(sniffer, topic);
  await sniffer.subscribeAsync(topic, { qos: 1 });
  await yam.publishAsync(topic, 'still here', { qos: 1 });
  assert.equal((await seen).payload, 'still here');
  assert.equal(closes, 0, 'the controller kept its connection');
  // The trade-off: one connection per identity. A second robot.yam login replaces the first.
  const closed = new Promise<void>((resolve) => yam.once('close', () => resolve()));
  const second = await login('robot.yam', secret('mqtt-identities/robot.yam'), 'robot.yam.other');
  t.after(() => second.endAsync());
  await closed;
});

test("Mosquitto with brainstem.conf's max_packet_size passes a largest camera frame and disconnects a larger packet", async (t) => {
  const { out, run, secret } = await credentials(t, ['{id: yam, robot: yam}']);
  const conf = readFileSync(join(out, 'brainstem.conf'), 'utf8');
  const limit = conf.split('\n').filter((l) => l.startsWith('max_packet_size'));
  // robots.cameras.max_frame_bytes (8 MiB) + 64 KiB for topic and properties + 5 header bytes.
  assert.deepEqual(limit, [`max_packet_size ${(8 << 20) + (64 << 10) + 5}`]);
  assert.match(run.stdout, /^ {2}max_packet_size \d+$/m);
  const broker = await getOwnMosquitto(t, {
    passwordFile: join(out, 'passwd'),
    aclFile: join(out, 'acl'),
    conf: `${limit[0]}\n`,
  });
  if (!broker) return;
  t.after(() => broker.stop());
  const yam = await connectMqtt({
    url: broker.url,
    username: 'robot.yam',
    password: secret('mqtt-identities/robot.yam'),
  });
  const daemon = await connectMqtt({ url: broker.url, username: 'brainstem', password: secret('mqtt-password') });
  t.after(() => Promise.all([yam, daemon].map((c) => c.endAsync(true))));
  const topic = `${BASE}/robots/yam/cameras/wrist`;
  await daemon.subscribeAsync(topic, { qos: 0 });
  const seen = nextMessage(daemon, topic);
  yam.publish(topic, Buffer.alloc(8 << 20, 0xff));
  assert.equal((await seen).payload.length, 8 << 20);
  const closed = new Promise<void>((resolve) => yam.once('close', () => resolve()));
  yam.publish(topic, Buffer.alloc((8 << 20) + (64 << 10), 0xff));
  await within(closed, 10_000, 'Mosquitto to disconnect the oversized publisher');
});
