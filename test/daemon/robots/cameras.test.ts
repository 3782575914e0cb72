// Camera frames end to end: a controller sends them over the embedded broker (MQTT 3.1.1
// sidecar), over Mosquitto (MQTT 5 user properties) and over the /controller WebSocket; the
// daemon stores them and serves them through robots.cameras / robots.frame and HTTP. Corrupt,
// oversized and wrongly typed frames are counted as dropped while the last good frame stays.
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { solidImage, depthPng } from '../../helpers/images.js';
import { getMosquitto, type BrokerEndpoint } from '../../helpers/mosquitto.js';
import { connectMqtt } from '../../helpers/mqtt.js';
import { parsePrometheus } from '../../helpers/prometheus.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { waitFor, within } from '../../helpers/wait.js';
import { ControllerMqtt, type MqttVersion } from '../../../robot/link/controller-mqtt.js';
import { ControllerWs } from '../../../robot/link/controller-ws.js';
import type { ControllerLink } from '../../../robot/link/controller-link.js';
import { startSim } from '../../../robot/sim/process.js';
import { loadSimRobot } from '../../../robot/sim/robot.js';
import {
  cameraMetaTopic,
  cameraTopic,
  decodeBinary,
  metaToUserProperties,
  type FrameMeta,
} from '../../../robot/link/camera-protocol.js';

const HUNDRED_MB = 100 * 1024 * 1024;
const meta = (seq: number, over: Partial<FrameMeta> = {}): FrameMeta => ({
  seq,
  time: 100 + seq,
  encoding: 'jpeg',
  width: 16,
  height: 12,
  intrinsics: { fx: 20, fy: 20, cx: 7.5, cy: 5.5 },
  extrinsics: { frame: 'world', pose: [0.5, 0, 1, 1, 0, 0, 0] },
  ...over,
});

interface Rig {
  d: TestDaemon;
  rpc: RpcTestClient;
  base: string;
  /** Run last first, before the daemon stops (clients close while their broker is up). */
  cleanups: (() => Promise<unknown>)[];
}

async function startRig(t: TestContext, broker?: BrokerEndpoint): Promise<Rig> {
  const mqttUrl = broker?.urlWithCredentials;
  const base = `bs-cam-${randomBytes(3).toString('hex')}`;
  const d = await startTestDaemon({
    mqtt: { base, ...(mqttUrl ? { url: mqttUrl } : {}) },
    robots: {
      serve: [
        { id: 'cam1', robot: 'yam' },
        { id: 'camws', robot: 'yam', transport: 'ws' },
      ],
    },
  });
  const rpc = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const cleanups: Rig['cleanups'] = [];
  t.after(async () => {
    for (const c of cleanups.reverse()) await c();
    await rpc.close();
    await d.stop();
    await broker?.stop();
  });
  return { d, rpc, base, cleanups };
}

const withCreds = (c: { url: string; username: string; password: string }) =>
  c.url.replace('://', `://${encodeURIComponent(c.username)}:${encodeURIComponent(c.password)}@`);

async function connected(rig: Rig, make: () => ControllerLink): Promise<ControllerLink> {
  const link = make();
  rig.cleanups.push(() => link.close());
  await waitFor(() => (link.connected ? true : undefined), 'the controller link to connect');
  return link;
}

function mqttController(rig: Rig, creds: { url: string; username: string; password: string }, version: MqttVersion) {
  return connected(
    rig,
    () =>
      new ControllerMqtt(
        {
          url: withCreds(creds),
          base: rig.base,
          robot: 'cam1',
          version,
          clientId: `robot.cam1.t-${randomBytes(2).toString('hex')}`,
        },
        { up: () => undefined, message: () => undefined, down: () => undefined },
      ),
  );
}

async function cameras(rig: Rig, robot: string): Promise<any> {
  const r = await rig.rpc.call('robots.cameras', { robot });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  return r.result;
}

async function stream(rig: Rig, robot: string, name = 'wrist', kind = 'color'): Promise<any> {
  return (await cameras(rig, robot)).cameras.find((c: any) => c.name === name && c.kind === kind);
}

/** Waits until the stream has received `n` good frames and dropped `dropped` by reason. */
async function until(rig: Rig, robot: string, received: number, dropped: Record<string, number> = {}, name = 'wrist') {
  let last: any;
  const done = async () => {
    last = await stream(rig, robot, name);
    return last?.received === received && Object.entries(dropped).every(([k, v]) => last.dropped[k] === v);
  };
  await waitFor(async () => ((await done()) ? true : undefined), `${robot}/${name}`).catch((err: Error) => {
    throw new Error(
      `${err.message}: ${received} frames, dropped ${JSON.stringify(dropped)}; now ${JSON.stringify(last)}`,
    );
  });
}

/** robots.frame as a data URL: the image bytes and the result. */
async function frame(rig: Rig, robot: string, index = 0): Promise<{ image: Buffer; result: any }> {
  const r = await rig.rpc.call('robots.frame', { robot, camera: 'wrist', index });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  const [, type, b64] = /^data:([^;]+);base64,(.*)$/.exec(r.result.data_url)!;
  assert.equal(type, r.result.content_type);
  return { image: Buffer.from(b64!, 'base64'), result: r.result };
}

test('embedded broker (MQTT 3.1.1 sidecar): frames served; corrupt, 100 MB, wrong type and meta-less frames dropped', async (t) => {
  const rig = await startRig(t);
  const creds = rig.d.mqttAs('robot.cam1');
  const link = await mqttController(rig, creds, 'auto');
  const good = await solidImage('jpeg', 16, 12);
  assert.ok(link.sendFrame('wrist', good, meta(1)));
  await until(rig, 'cam1', 1);
  const got = await frame(rig, 'cam1');
  assert.deepEqual(got.image, good);
  assert.deepEqual(got.result.meta, { v: 1, ...meta(1) });
  assert.equal(got.result.content_type, 'image/jpeg');

  // A raw client of the same identity sends what a broken camera node might.
  const raw = await connectMqtt(creds, { clientId: 'robot.cam1.raw' });
  rig.cleanups.push(() => raw.endAsync());
  const side = (m: FrameMeta) =>
    raw.publishAsync(cameraMetaTopic(rig.base, 'cam1', 'wrist'), JSON.stringify({ v: 1, ...m }));
  const image = (b: Buffer) => raw.publishAsync(cameraTopic(rig.base, 'cam1', 'wrist'), b);
  await side(meta(2));
  // SOI, then a marker byte 0x00 with segment length 0: no header parses (random bytes could form one).
  await image(Buffer.concat([good.subarray(0, 3), Buffer.alloc(200), Buffer.from([0xff, 0xd9])]));
  await side(meta(3, { encoding: 'png' }));
  await image(good);
  await image(good); // no sidecar before it
  await raw.publishAsync(cameraMetaTopic(rig.base, 'cam1', 'wrist'), '{"v": 1, "seq": -1}');
  await image(good); // its sidecar was invalid: dropped with it
  await until(rig, 'cam1', 1, { corrupt: 1, wrong_encoding: 1, no_meta: 1, invalid_meta: 1 });

  // 100 MB: the broker closes the connection at the packet's header and the robot counts the drop
  // (its stream is unknown from the header alone), as the WebSocket path does.
  const big = await connectMqtt(creds, { clientId: 'robot.cam1.big' });
  rig.cleanups.push(() => big.endAsync(true));
  const closed = new Promise<void>((resolve) => big.once('close', () => resolve()));
  big.on('error', () => undefined);
  await big.publishAsync(cameraMetaTopic(rig.base, 'cam1', 'wrist'), JSON.stringify({ v: 1, ...meta(4) }));
  big.publish(cameraTopic(rig.base, 'cam1', 'wrist'), Buffer.alloc(HUNDRED_MB, 0xff));
  await within(closed, 10_000, 'the broker to close the oversized sender');
  await waitFor(
    async () => ((await cameras(rig, 'cam1')).dropped_unattributed.oversize === 1 ? true : undefined),
    'the oversized frame counted',
  );
  assert.deepEqual((await frame(rig, 'cam1')).image, good, 'the last good frame is still served');

  // The daemon is still up and takes the next good frame; the ring holds both.
  assert.ok(link.sendFrame('wrist', good, meta(5)));
  await until(rig, 'cam1', 2);
  assert.equal((await frame(rig, 'cam1', 1)).result.meta.seq, 1);

  const metrics = await fetch(`${rig.d.http}/metrics`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  const counts = parsePrometheus(await metrics.text())
    .samples.filter((x) => x.name === 'brainstem_camera_frames_total' && x.labels.robot === 'cam1')
    .map((x) => [x.labels.camera, x.labels.outcome, x.value]);
  assert.deepEqual(counts.sort(), [
    ['', 'oversize', 1],
    ['wrist', 'corrupt', 1],
    ['wrist', 'invalid_meta', 1],
    ['wrist', 'no_meta', 1],
    ['wrist', 'ok', 2],
    ['wrist', 'wrong_encoding', 1],
  ]);
});

test('Mosquitto: MQTT 5 user properties and content type; a 3.1.1 controller with sidecars on the same broker', async (t) => {
  const broker = await getMosquitto(t);
  if (!broker) return;
  const rig = await startRig(t, broker);
  assert.equal(rig.d.mqtt.protocol, '5');
  const creds = { url: broker.url, username: broker.username, password: broker.password };
  const v5 = await mqttController(rig, creds, '5');
  const good = await solidImage('jpeg', 16, 12);
  assert.ok(v5.sendFrame('wrist', good, meta(1)));
  await until(rig, 'cam1', 1);
  assert.deepEqual((await frame(rig, 'cam1')).result.meta, { v: 1, ...meta(1) });

  const raw = await connectMqtt(creds, { protocolVersion: 5 });
  rig.cleanups.push(() => raw.endAsync());
  const topic = cameraTopic(rig.base, 'cam1', 'wrist');
  const props = (m: FrameMeta, contentType = 'image/jpeg') => ({
    properties: { contentType, userProperties: metaToUserProperties(m) },
  });
  await raw.publishAsync(topic, good, props(meta(2), 'image/png'));
  await raw.publishAsync(topic, good, props(meta(3, { encoding: 'png' }), 'image/png'));
  await raw.publishAsync(topic, good.subarray(0, good.length - 20), props(meta(4)));
  await raw.publishAsync(topic, good, props(meta(5, { width: 17 })));
  await until(rig, 'cam1', 1, { wrong_encoding: 2, corrupt: 1, size_mismatch: 1 });
  assert.deepEqual((await frame(rig, 'cam1')).image, good);

  const v3 = await mqttController(rig, creds, '3.1.1');
  const png = await solidImage('png', 16, 12);
  assert.ok(v3.sendFrame('wrist', png, meta(6, { encoding: 'png' })));
  await until(rig, 'cam1', 2);
  const latest = await frame(rig, 'cam1');
  assert.deepEqual(latest.image, png);
  assert.equal(latest.result.content_type, 'image/png');
});

test('WebSocket controller: binary frames, a depth stream, robots.frame as binary, HTTP latest; 100 MB closes the socket', async (t) => {
  const rig = await startRig(t);
  // A socket serves the robots it announced: availability on every (re)connection.
  const holder: { link?: ControllerLink } = {};
  const link = await connected(
    rig,
    () =>
      new ControllerWs(
        { url: `${rig.d.api.url('ws')}/controller`, robot: 'camws', token: TEST_TOKEN, reconnect: 0.05 },
        { up: () => holder.link?.send('availability', 'online'), message: () => undefined, down: () => undefined },
      ),
  );
  holder.link = link;
  link.send('availability', 'online');
  await waitFor(
    async () => ((await rig.rpc.call('robots.list')).result.robots[1].availability === 'online' ? true : undefined),
    'camws online',
  );
  const good = await solidImage('jpeg', 16, 12);
  assert.ok(link.sendFrame('wrist', good, meta(1)));
  const depth = await depthPng(16, 12);
  assert.ok(link.sendFrame('wrist', depth, meta(1, { kind: 'depth', encoding: 'png', depth_scale: 0.001 })));
  await until(rig, 'camws', 1);
  await waitFor(
    async () => ((await stream(rig, 'camws', 'wrist', 'depth'))?.received === 1 ? true : undefined),
    'depth',
  );

  // Binary reply: the image arrives as a binary message whose header names the result's binary_id.
  const before = rig.rpc.binaries.length;
  const r = await rig.rpc.call('robots.frame', { robot: 'camws', camera: 'wrist', kind: 'depth', format: 'binary' });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  assert.equal(rig.rpc.binaries.length, before + 1, 'the binary message came before the result');
  const bin = decodeBinary(rig.rpc.binaries[before]!);
  assert.ok(bin.ok);
  assert.equal((bin.value.header as any).binary_id, r.result.binary_id);
  assert.deepEqual(bin.value.body, depth);
  assert.equal(r.result.meta.depth_scale, 0.001);

  const http = (path: string, auth = true) =>
    fetch(`${rig.d.http}${path}`, auth ? { headers: { authorization: `Bearer ${TEST_TOKEN}` } } : {});
  const res = await http('/v1/robots/camws/cameras/wrist/latest');
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'image/jpeg');
  assert.deepEqual(Buffer.from(await res.arrayBuffer()), good);
  assert.equal(JSON.parse(res.headers.get('x-camera-meta')!).seq, 1);
  assert.equal(
    (await http('/v1/robots/camws/cameras/wrist/latest?kind=depth')).headers.get('content-type'),
    'image/png',
  );
  assert.equal((await http('/v1/robots/camws/cameras/nope/latest')).status, 404);
  assert.equal((await http('/v1/robots/camws/cameras/wrist/latest', false)).status, 401);

  // Wrong type and corrupt frames are counted on their stream.
  link.sendFrame('wrist', good, meta(2, { encoding: 'png' }));
  link.sendFrame('wrist', good.subarray(0, 30), meta(3));
  await until(rig, 'camws', 1, { wrong_encoding: 1, corrupt: 1 });

  // 100 MB: ws refuses it from its length alone and closes the socket (1009); the controller reconnects.
  assert.ok(link.sendFrame('wrist', Buffer.alloc(HUNDRED_MB, 0xff), meta(4)));
  await waitFor(
    async () => ((await cameras(rig, 'camws')).dropped_unattributed.oversize === 1 ? true : undefined),
    'the oversized frame counted',
  );
  assert.deepEqual((await frame(rig, 'camws')).image, good, 'the last good frame is still served');
  await waitFor(
    async () => ((await rig.rpc.call('robots.list')).result.robots[1].availability === 'online' ? true : undefined),
    'camws back online',
  );
  await waitFor(() => (link.sendFrame('wrist', good, meta(5)) ? true : undefined), 'the frame sent');
  await until(rig, 'camws', 2);

  // robots.state and robots.list report each stream's age and rate.
  const sub = await rig.rpc.call('robots.state', { robot: 'camws', rate_hz: 50 });
  const n = await rig.rpc.nextNotification('robots.state');
  assert.deepEqual(Object.keys(n.params.cameras).sort(), ['wrist', 'wrist/depth']);
  assert.equal(typeof n.params.cameras.wrist.age_ms, 'number');
  await rig.rpc.call('robots.unsubscribe', { subscription: sub.result.subscription });
  assert.ok((await rig.rpc.call('robots.list')).result.robots[1].cameras.wrist);
});

test('robots.frame names what is missing', async (t) => {
  const rig = await startRig(t);
  const r = await rig.rpc.call('robots.frame', { robot: 'cam1', camera: 'wrist' });
  assert.equal(r.error?.code, -32602);
  assert.match(
    r.error!.message,
    /camera: has no stored color frame at index 0 \(streams with frames: none\), got "wrist"/,
  );
  const bad = await rig.rpc.call('robots.frame', { robot: 'cam1', camera: 'wrist', format: 'gif' });
  assert.match(bad.error!.message, /format/);
  // A stream name is not a camera name: the depth stream is asked for with kind.
  const stream = await rig.rpc.call('robots.frame', { robot: 'cam1', camera: 'wrist/depth' });
  assert.equal(stream.error?.code, -32602);
  assert.match(
    stream.error!.message,
    /camera: must be a camera name: for the depth stream give camera "wrist" and kind "depth"/,
  );
});

test('the simulator sends the frames its hook renders, numbered per stream, stamped with the time it was asked', async (t) => {
  const rig = await startRig(t);
  const jpeg = await solidImage('jpeg', 16, 12);
  const depth = await depthPng(16, 12);
  const asked: number[] = [];
  const sim = startSim({
    robot: loadSimRobot('yam'),
    sim: { robotId: 'camws', version: 'test' },
    link: (on) => new ControllerWs({ url: `${rig.d.api.url('ws')}/controller`, robot: 'camws', token: TEST_TOKEN }, on),
    cameras: {
      rate: 50,
      frames: async (now, controller) => {
        asked.push(now);
        assert.ok(controller.description(now).arms.length > 0);
        return [
          { camera: 'front', image: jpeg, meta: { encoding: 'jpeg', width: 16, height: 12 } },
          { camera: 'front', image: depth, meta: { kind: 'depth', encoding: 'png', width: 16, height: 12 } },
        ];
      },
    },
  });
  await waitFor(
    async () => ((await stream(rig, 'camws', 'front'))?.received >= 3 ? true : undefined),
    'three frames from the simulator',
  );
  await sim.close();
  const ring = (await stream(rig, 'camws', 'front')).ring.frames;
  const frames = await Promise.all(
    Array.from({ length: ring }, (_, index) =>
      rig.rpc.call('robots.frame', { robot: 'camws', camera: 'front', index }),
    ),
  );
  const seqs = frames.map((r) => r.result.meta.seq);
  assert.deepEqual(
    seqs,
    seqs.map((_, i) => seqs[0] - i),
    'numbered 0, 1, 2, … per stream',
  );
  for (const r of frames) assert.ok(asked.includes(r.result.meta.time), 'time is the instant the hook was asked for');
  const depthStream = await stream(rig, 'camws', 'front', 'depth');
  assert.ok(depthStream.received >= 3 && Object.keys(depthStream.dropped).length === 0);
});
