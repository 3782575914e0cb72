// A lost connection drops the daemon's unacknowledged trajectory (a topic given to
// dropOnDisconnect) from mqtt.js's outgoing store: on reconnection only the stop is resent, and
// what the connection handlers publish follows it. mqtt.js used to resend the old trajectory first.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import { Aedes } from 'aedes';
import { pino } from 'pino';
import { loadConfig } from '../../../daemon/config/load.js';
import { DaemonMqttClient } from '../../../daemon/mqtt/client.js';
import { streamPair } from '../../../daemon/util/stream-pair.js';
import { waitFor, within } from '../../helpers/wait.js';

test('an unacknowledged trajectory is dropped when the link is lost; the stop is resent first', async (t) => {
  // While `holding`, the broker takes publishes without acknowledging them (QoS 1 stays stored).
  let holding = false;
  const held: string[] = [];
  const seen: string[] = [];
  const aedes = await Aedes.createBroker({
    authorizePublish: (_client, packet, done) => {
      const what = `${packet.topic}=${packet.payload.toString()}`;
      if (holding) return void held.push(what);
      if (packet.topic.includes('/robots/')) seen.push(what);
      done(null);
    },
  });
  const served: Duplex[] = [];
  const client = new DaemonMqttClient({
    config: { ...loadConfig({ env: {} }).mqtt, base: 'x', username: '', reconnect: { min_ms: 10, max_ms: 10 } },
    brokerUrl: () => 'mqtt://127.0.0.1:1',
    inProcess: () => {
      const [mine, theirs] = streamPair();
      served.push(theirs);
      aedes.handle(theirs);
      return mine;
    },
    password: '',
    embedded: true,
    log: pino({ level: 'silent' }),
  });
  await client.start();
  t.after(async () => {
    await client.stop();
    await new Promise<void>((resolve) => aedes.close(() => resolve()));
  });
  assert.equal(client.connected, true);
  client.dropOnDisconnect((topic) => topic.endsWith('/trajectory'));

  holding = true;
  const trajectory = client.publish('x/robots/r/trajectory', 'T', { qos: 1 });
  trajectory.catch(() => undefined);
  void client.publish('x/robots/r/stop', 'S1', { qos: 1 }).catch(() => undefined);
  await waitFor(() => (held.length === 2 ? true : undefined), 'both publishes at the broker, unacknowledged');
  client.onConnection((up) => {
    if (up) void client.publish('x/robots/r/stop', 'S2', { qos: 1 });
  });
  holding = false;
  served[0]!.destroy();

  await assert.rejects(within(trajectory, 10_000, 'the dropped publish'), /Message removed/);
  await waitFor(() => (seen.includes('x/robots/r/stop=S2') ? true : undefined), 'the stop sent on reconnection');
  assert.deepEqual(seen, ['x/robots/r/stop=S1', 'x/robots/r/stop=S2']);
});
