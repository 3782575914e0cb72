// mqtts:// to a Mosquitto with a test CA: the daemon and its simulated controller connect with
// mqtt.tls.ca; without the CA the broker's certificate is refused; a missing file names its key.
// The embedded broker's own TLS listener (mqtt.embedded.tls).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { getOwnMosquitto } from '../../helpers/mosquitto.js';
import { connectMqtt, nextMessage } from '../../helpers/mqtt.js';
import { RpcTestClient, waitRobotReady } from '../../helpers/rpc.js';
import { makeCerts } from '../../helpers/certs.js';
import { tempDir } from '../../helpers/temp.js';

test('mqtts:// with mqtt.tls.ca: daemon and simulated controller connect; no CA, no connection', async (t) => {
  const dir = tempDir('brainstem-tls-');
  t.after(() => dir.remove());
  const certs = makeCerts(dir.path);
  if (!certs) return t.skip('openssl is not installed');
  const broker = await getOwnMosquitto(t, { tls: { cafile: certs.ca, certfile: certs.cert, keyfile: certs.key } });
  if (!broker) return;
  t.after(() => broker.stop());
  assert.match(broker.urlWithCredentials, /^mqtts:/);

  const d = await startTestDaemon({
    mqtt: { url: broker.urlWithCredentials, tls: { ca: certs.ca } },
    robots: { simulate: true, serve: [{ id: 'yam', robot: 'yam', sim: true }] },
  });
  t.after(() => d.stop());
  assert.equal(d.daemon.health().services['mqtt-client']!.detail!.connected, true);
  const rpc = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => rpc.close());
  await waitRobotReady(rpc, 'yam', 'the simulated yam ready over mqtts://');

  const untrusting = await startTestDaemon({
    mqtt: { url: broker.urlWithCredentials, reconnect: { min_ms: 60_000, max_ms: 60_000 } },
  });
  t.after(() => untrusting.stop());
  const client = untrusting.daemon.health().services['mqtt-client']!;
  assert.equal(client.detail!.connected, false);
  assert.match(String(client.detail!.last_error), /certificate/i);

  await assert.rejects(
    startTestDaemon({ mqtt: { url: broker.urlWithCredentials, tls: { ca: join(dir.path, 'missing.pem') } } }),
    /mqtt\.tls\.ca: cannot read .*missing\.pem: ENOENT/,
  );
});

test('mqtt.embedded.tls: the embedded broker also listens for mqtts://, with the same identities and ACLs', async (t) => {
  const dir = tempDir('brainstem-tls-embedded-');
  t.after(() => dir.remove());
  const certs = makeCerts(dir.path);
  if (!certs) return t.skip('openssl is not installed');
  const d = await startTestDaemon({
    mqtt: { observers: ['console'], embedded: { tls: { cert: certs.cert, key: certs.key, port: 0 } } },
  });
  t.after(() => d.stop());
  const tlsUrl = d.broker!.tlsUrl()!;
  assert.match(tlsUrl, /^mqtts:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(d.daemon.health().services['mqtt-broker']!.detail!.tls_url, tlsUrl);

  const observer = await connectMqtt({ ...d.mqttAs('observer.console'), url: tlsUrl }, { ca: readFileSync(certs.ca) });
  t.after(() => observer.endAsync());
  assert.equal((await nextMessage(observer, 'brainstem/daemon/availability')).payload, 'online');
  await assert.rejects(
    connectMqtt({ ...d.mqttAs('observer.console'), url: tlsUrl }),
    /certificate/i,
    'without the CA the self-signed broker is not trusted',
  );
  await assert.rejects(
    connectMqtt({ ...d.mqttAs('observer.console'), url: tlsUrl, password: 'wrong' }, { ca: readFileSync(certs.ca) }),
    /Bad username or password/,
  );

  await assert.rejects(
    startTestDaemon({ mqtt: { embedded: { tls: { cert: certs.cert, key: '' } } } }),
    /mqtt\.embedded\.tls\.key: must be set with the other of cert\/key/,
  );
});
