// The daemon as a child process: SIGTERM stops it with exit code 0 within 5 s, availability
// flips to offline, daemon.json disappears; with an external broker the last will covers a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnTestDaemon } from '../helpers/daemon.js';
import { getMosquitto } from '../helpers/mosquitto.js';
import { connectMqtt, nextMessage } from '../helpers/mqtt.js';
import { RpcTestClient } from '../helpers/rpc.js';
import { within } from '../helpers/wait.js';

test('embedded defaults: serves, then SIGTERM exits 0 within 5 s and availability flips to offline', async (t) => {
  const d = await spawnTestDaemon();
  t.after(() => d.cleanup());
  assert.equal(d.runtime.mqtt_embedded, true);
  assert.equal(d.runtime.token_file, join(d.dataDir, 'token'));
  assert.equal((await fetch(`${d.runtime.http}/health`)).status, 200);
  const rpc = await RpcTestClient.connect(d.runtime.ws, d.token);
  assert.equal((await rpc.call('system.info')).result.pid, d.child.pid);

  const observer = await connectMqtt({ url: d.runtime.mqtt!, username: 'brainstem', password: d.mqttPassword });
  const topic = 'brainstem/daemon/availability';
  assert.equal((await nextMessage(observer, topic)).payload, 'online');
  const offline = nextMessage(observer, topic, (m) => m.payload === 'offline');
  d.child.kill('SIGTERM');
  assert.equal(await within(d.exited, 5000, 'the daemon to exit after SIGTERM'), 0, d.output().stderr);
  assert.equal((await offline).payload, 'offline');
  observer.end(true);
  assert.equal((await rpc.closed).code, 1001, 'WebSocket clients are told the daemon is going away');
  assert.equal(existsSync(join(d.dataDir, 'daemon.json')), false, 'runtime file removed');
  const logs = d
    .output()
    .stdout.trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.ok(
    logs.some((l) => l.msg === 'daemon stopped' && l.ok === true),
    'JSON logs record the clean stop',
  );
});

test('SIGINT also stops it cleanly with exit 0', async (t) => {
  const d = await spawnTestDaemon();
  t.after(() => d.cleanup());
  d.child.kill('SIGINT');
  assert.equal(await within(d.exited, 5000, 'the daemon to exit after SIGINT'), 0);
});

test('with Mosquitto: SIGTERM leaves offline retained; a crash is covered by the last will', async (t) => {
  const broker = await getMosquitto(t);
  if (!broker) return;
  t.after(() => broker.stop());
  const base = `bstest/${randomBytes(4).toString('hex')}`;
  const topic = `${base}/daemon/availability`;
  const observer = await connectMqtt(broker);
  t.after(() => observer.endAsync());

  const clean = await spawnTestDaemon({ BRAINSTEM_MQTT_URL: broker.urlWithCredentials, BRAINSTEM_MQTT_BASE: base });
  t.after(() => clean.cleanup());
  assert.equal(clean.runtime.mqtt_embedded, false);
  assert.equal((await nextMessage(observer, topic, (m) => m.payload === 'online')).payload, 'online');
  const offline = nextMessage(observer, topic, (m) => m.payload === 'offline');
  clean.child.kill('SIGTERM');
  assert.equal(await within(clean.exited, 5000, 'exit after SIGTERM'), 0, clean.output().stderr);
  assert.deepEqual(await offline, { topic, payload: 'offline', retain: false });

  const crashed = await spawnTestDaemon({ BRAINSTEM_MQTT_URL: broker.urlWithCredentials, BRAINSTEM_MQTT_BASE: base });
  t.after(() => crashed.cleanup());
  await nextMessage(observer, topic, (m) => m.payload === 'online');
  const will = nextMessage(observer, topic, (m) => m.payload === 'offline');
  crashed.child.kill('SIGKILL');
  assert.equal((await will).payload, 'offline', 'the broker published the last will');
});
