// mqtts:// to a Mosquitto with a test CA: the daemon and its simulated controller connect with
// mqtt.tls.ca; without the CA the broker's certificate is refused; a missing file names its key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { getOwnMosquitto } from '../../helpers/mosquitto.js';
import { RpcTestClient, waitRobotReady } from '../../helpers/rpc.js';
import { tempDir } from '../../helpers/temp.js';

/** A CA and a server certificate for 127.0.0.1 (P-256), or undefined without openssl. */
function makeCerts(dir: string): { ca: string; cert: string; key: string } | undefined {
  const f = (name: string) => join(dir, name);
  writeFileSync(f('ext'), 'subjectAltName=IP:127.0.0.1\n');
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const steps = [
    ['req', '-x509', ...ec, '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=bs-test-ca'],
    ['req', ...ec, '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1'],
    ['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial'],
  ];
  steps[2]!.push('-out', f('server.pem'), '-days', '2', '-extfile', f('ext'));
  for (const args of steps) {
    const r = spawnSync('openssl', args, { stdio: 'pipe' });
    if (r.error || r.status !== 0) return undefined;
  }
  return { ca: f('ca.pem'), cert: f('server.pem'), key: f('server.key') };
}

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
