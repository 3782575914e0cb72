// Integration: the embedded broker's auth and retained availability; a second daemon using it
// as an external broker (MQTT 5 refused → 3.1.1); reconnect after the broker restarts.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { EmbeddedBroker } from '../../../daemon/mqtt/broker.js';
import { DaemonMqttClient } from '../../../daemon/mqtt/client.js';
import { loadConfig } from '../../../daemon/config/load.js';
import { startTestDaemon, type TestDaemon } from '../../helpers/daemon.js';
import { connectMqtt, nextMessage } from '../../helpers/mqtt.js';
import { waitFor } from '../../helpers/wait.js';

/** Broker options with a single daemon identity. */
const daemonOnly = (base: string, creds: { username: string; password: string }) => ({
  base,
  identities: [{ ...creds, role: { kind: 'daemon' as const } }],
  maxPacketBytes: 1 << 20,
});

let d: TestDaemon;
before(async () => {
  d = await startTestDaemon();
});
after(() => d.stop());

test('a client with the configured credentials sees the retained availability', async (t) => {
  assert.match(d.mqttEndpoint.password, /^[A-Za-z0-9_-]{32}$/, 'generated broker password');
  const c = await connectMqtt(d.mqttEndpoint);
  t.after(() => c.endAsync());
  const m = await nextMessage(c, 'brainstem/daemon/availability');
  assert.deepEqual(m, { topic: 'brainstem/daemon/availability', payload: 'online', retain: true });
});

test('the daemon reaches its embedded broker in-process, under its own login and grants', async (t) => {
  const health = d.daemon.health();
  assert.equal(health.services['mqtt-client']!.detail!.transport, 'in-process');
  assert.equal(health.services['mqtt-client']!.detail!.connected, true);
  // The daemon's online availability came through that connection.
  const c = await connectMqtt(d.mqttEndpoint);
  t.after(() => c.endAsync());
  assert.equal((await nextMessage(c, 'brainstem/daemon/availability')).payload, 'online');
  // The same login check as a socket: a wrong password is refused in-process too.
  const wrong = new DaemonMqttClient({
    config: {
      ...loadConfig({ env: {} }).mqtt,
      username: d.mqttEndpoint.username,
      reconnect: { min_ms: 60_000, max_ms: 60_000 },
    },
    brokerUrl: () => d.broker!.url(),
    inProcess: () => d.broker!.connectInProcess(),
    password: 'wrong',
    embedded: true,
    log: pino({ level: 'silent' }),
  });
  await wrong.start();
  t.after(() => wrong.stop());
  const detail = wrong.health().detail!;
  assert.equal(detail.connected, false);
  assert.match(String(detail.last_error), /Bad username or password/);
});

test('an in-process connection to a stopped broker closes like a refused socket', async () => {
  const log = pino({ level: 'silent' });
  const broker = new EmbeddedBroker({
    host: '127.0.0.1',
    port: 0,
    ...daemonOnly('x', { username: 'u', password: 'p' }),
    log,
  });
  const stream = broker.connectInProcess();
  await new Promise((resolve) => stream.once('close', resolve));
  assert.equal(stream.destroyed, true);
});

test('wrong or missing credentials are refused', async () => {
  await assert.rejects(connectMqtt({ ...d.mqttEndpoint, password: 'wrong' }), /Bad username or password/);
  await assert.rejects(connectMqtt({ ...d.mqttEndpoint, username: '', password: '' }), /Bad username or password/);
});

test('a daemon using another broker via mqtt.url falls back to 3.1.1 and embeds none', async (t) => {
  const creds = { username: 'u', password: 'p' };
  const log = pino({ level: 'silent' });
  const other = new EmbeddedBroker({ ...daemonOnly('second', creds), host: '127.0.0.1', port: 0, log });
  await other.start();
  t.after(() => other.stop());
  const url = other.url();
  const { username, password } = creds;
  const withCreds = url.replace('mqtt://', `mqtt://${username}:${password}@`);
  const second = await startTestDaemon({ mqtt: { url: withCreds, base: 'second' } });
  t.after(() => second.stop());
  assert.equal(second.broker, undefined);
  const health = second.daemon.health();
  assert.deepEqual(Object.keys(health.services), ['api', 'mqtt-client', 'models', 'robots', 'policy']);
  assert.equal(health.services['mqtt-client']!.detail!.protocol, '3.1.1');
  assert.equal(health.services['mqtt-client']!.detail!.transport, 'socket');
  assert.equal(health.services['mqtt-client']!.detail!.url, url.replace('mqtt://', `mqtt://${username}:***@`));
  const c = await connectMqtt({ url, ...creds });
  t.after(() => c.endAsync());
  assert.equal((await nextMessage(c, 'second/daemon/availability')).payload, 'online');
  const offline = nextMessage(c, 'second/daemon/availability', (m) => m.payload === 'offline');
  await second.daemon.stop();
  assert.equal((await offline).payload, 'offline', 'a clean stop publishes offline');
});

test('the client reconnects with backoff when its broker comes back, and republishes online', async (t) => {
  const log = pino({ level: 'silent' });
  const creds = { username: 'u', password: 'p' };
  const first = new EmbeddedBroker({ host: '127.0.0.1', port: 0, ...daemonOnly('brainstem', creds), log });
  await first.start();
  const port = first.address().port;
  const client = await startTestDaemon({
    mqtt: { url: `mqtt://u:p@127.0.0.1:${port}`, protocol: '3.1.1', reconnect: { min_ms: 20, max_ms: 100 } },
  });
  t.after(() => client.stop());
  assert.equal(client.daemon.health().status, 'ready');
  await first.stop();
  await waitFor(
    () => (client.daemon.health().status === 'degraded' ? true : undefined),
    'the client to notice the broker is gone',
  );
  assert.equal(client.daemon.health().ready, true, 'degraded still counts as ready');
  const second = new EmbeddedBroker({ host: '127.0.0.1', port, ...daemonOnly('brainstem', creds), log });
  await second.start();
  t.after(() => second.stop());
  await waitFor(() => (client.daemon.health().status === 'ready' ? true : undefined), 'the client to reconnect');
  const observer = await connectMqtt({ url: `mqtt://127.0.0.1:${port}`, ...creds });
  t.after(() => observer.endAsync());
  assert.equal((await nextMessage(observer, 'brainstem/daemon/availability')).payload, 'online');
});
