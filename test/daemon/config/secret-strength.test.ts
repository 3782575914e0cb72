// Short secrets: refused (exit 2, key and rule named, the secret never printed) when reachable off
// loopback, warned on loopback; generated and stored secrets are checked the same way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDaemon } from '../../../daemon/compose.js';
import { ConfigError, loadConfig } from '../../../daemon/config/load.js';
import { checkSecretStrength, isLoopbackHost, MIN_SECRET_LENGTH } from '../../../daemon/config/secret-strength.js';
import { resolveSecret } from '../../../daemon/config/secrets.js';
import { Logs } from '../../../daemon/log.js';
import { runCli } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';

const load = (overrides: Record<string, unknown>) => loadConfig({ env: {}, overrides });

function refused(overrides: Record<string, unknown>, pattern: RegExp, secret: string): void {
  assert.throws(
    () => load(overrides),
    (e: unknown) => {
      assert.ok(e instanceof ConfigError);
      assert.match(e.message, pattern);
      assert.ok(!e.message.includes(secret), `the secret is printed: ${e.message}`);
      return true;
    },
  );
}

test('loopback addresses: 127/8, ::1, localhost; wildcards, LAN addresses and names are not', () => {
  for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1'])
    assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['0.0.0.0', '::', '192.168.1.4', '10.0.0.1', 'broker.local', '128.0.0.1', '::ffff:10.0.0.1'])
    assert.equal(isLoopbackHost(h), false, h);
});

test('a one-character token bound to 0.0.0.0 is a config error naming the key and rule, not the secret', () => {
  refused(
    { server: { host: '0.0.0.0', token: 'Z' } },
    /server\.token: must be at least 16 characters when server\.host \(0\.0\.0\.0\) is off loopback; it has 1 \(leave it empty/,
    '"Z"',
  );
  refused(
    { server: { host: '192.168.1.4', token: 'hunter2-hunter2' } },
    /server\.token: must be at least 16 characters .* it has 15/,
    'hunter2',
  );
  assert.equal(load({ server: { host: '0.0.0.0', token: 'x'.repeat(MIN_SECRET_LENGTH) } }).server.host, '0.0.0.0');
  assert.equal(load({ server: { host: '0.0.0.0', token: '' } }).server.token, '', 'empty = generated');
});

test('a short broker password is refused when the embedded broker or the external one is off loopback', () => {
  refused(
    { mqtt: { embedded: { host: '::' }, password: 'pw' } },
    /mqtt\.password: must be at least 16 characters when mqtt\.embedded\.host \(::\) is off loopback; it has 2/,
    'pw"',
  );
  refused(
    { mqtt: { url: 'mqtt://u:s3cr%40t@broker.local:1883' } },
    /mqtt\.url: its password must be at least 16 characters when mqtt\.url \(broker\.local\) is off loopback; it has 6/,
    's3cr',
  );
  refused(
    { mqtt: { url: 'mqtt://broker.local:1883', password: 'short' } },
    /mqtt\.password: must be at least 16 .*mqtt\.url \(broker\.local\)/,
    'short',
  );
  refused(
    { mqtt: { embedded: { tls: { cert: 'c.pem', key: 'k.pem', host: '0.0.0.0' } }, password: 'pw' } },
    /mqtt\.password: must be at least 16 characters when mqtt\.embedded\.tls\.host \(0\.0\.0\.0\) is off loopback/,
    'pw"',
  );
  // The API off loopback does not expose the broker password, nor the reverse.
  load({ server: { host: '0.0.0.0', token: 'y'.repeat(20) }, mqtt: { password: 'pw' } });
  load({ server: { token: 'tok' }, mqtt: { embedded: { host: '0.0.0.0' }, password: 'z'.repeat(16) } });
});

test('on loopback a short secret is accepted with a warning per key', () => {
  const c = load({ server: { token: 'tok' }, mqtt: { password: 'pw' } });
  const { issues, warnings } = checkSecretStrength(c);
  assert.deepEqual(issues, []);
  assert.equal(warnings.length, 2);
  assert.match(warnings[0]!, /^server\.token: a secret of 3 characters \(shorter than 16\) is accepted only because/);
  assert.match(warnings[1]!, /^mqtt\.password: a secret of 2 characters/);
  assert.ok(!warnings.join().includes('tok"'));
});

test('generated secrets are long enough; a short stored one is refused off loopback when the daemon is built', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  assert.ok(resolveSecret('', join(dir.path, 'gen'), 'token').value.length >= 2 * MIN_SECRET_LENGTH);
  writeFileSync(join(dir.path, 'token'), 'abc\n');
  const config = load({ data_dir: dir.path, server: { host: '0.0.0.0', port: 0 }, mqtt: { embedded: { port: 0 } } });
  assert.throws(
    () => createDaemon(config, { logs: new Logs({ ...config.logging, level: 'silent' }) }),
    /server\.token: must be at least 16 characters when server\.host \(0\.0\.0\.0\) is off loopback; it has 3/,
  );
});

test('CLI: start with a short token off loopback exits 2 before listening; config check warns on loopback', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const file = join(dir.path, 'brainstem.yaml');
  writeFileSync(file, `data_dir: ${dir.path}\nserver:\n  host: 0.0.0.0\n  port: 0\n  token: q\n`);
  const r = await runCli(['start', '--config', file]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(
    r.stderr,
    /server\.token: must be at least 16 characters when server\.host \(0\.0\.0\.0\) is off loopback/,
  );
  assert.doesNotMatch(r.stderr, /"q"/);
  writeFileSync(file, 'server:\n  token: q\n');
  const check = await runCli(['config', 'check', file]);
  assert.equal(check.code, 0, check.stderr);
  assert.match(check.stderr, /^warning: server\.token: a secret of 1 characters/);
});

test('CLI: config check judges the token stored in data_dir as start does (short and off loopback: exit 2)', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const file = join(dir.path, 'brainstem.yaml');
  writeFileSync(join(dir.path, 'token'), 'short\n');
  writeFileSync(file, `data_dir: ${dir.path}\nserver:\n  host: 0.0.0.0\n  port: 0\n`);
  const check = await runCli(['config', 'check', file]);
  assert.equal(check.code, 2, check.stderr);
  assert.match(
    check.stderr,
    /server\.token: must be at least 16 characters when server\.host \(0\.0\.0\.0\) is off loopback; it has 5/,
  );
  // Nothing is generated by a check: a data_dir without secrets stays without them.
  const empty = join(dir.path, 'fresh');
  writeFileSync(file, `data_dir: ${empty}\n`);
  assert.equal((await runCli(['config', 'check', file])).code, 0);
  assert.equal(existsSync(empty), false);
});

test("a hand-written controller's or observer's secret is judged like the others (start and config check)", async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  mkdirSync(join(dir.path, 'mqtt-identities'));
  writeFileSync(join(dir.path, 'mqtt-identities', 'observer.grafana'), 'pw12\n');
  const yaml = (host: string) =>
    `data_dir: ${dir.path}\nserver:\n  port: 0\nmqtt:\n  observers: [grafana]\n  embedded:\n    host: ${host}\n    port: 0\n`;
  const config = load({
    data_dir: dir.path,
    server: { port: 0 },
    mqtt: { observers: ['grafana'], embedded: { host: '0.0.0.0', port: 0 } },
  });
  const rule =
    /data_dir\/mqtt-identities\/observer\.grafana: must be at least 16 characters when mqtt\.embedded\.host \(0\.0\.0\.0\) is off loopback; it has 4.*delete that file/s;
  assert.throws(() => createDaemon(config, { logs: new Logs({ ...config.logging, level: 'silent' }) }), rule);
  const file = join(dir.path, 'brainstem.yaml');
  writeFileSync(file, yaml('0.0.0.0'));
  const check = await runCli(['config', 'check', file]);
  assert.equal(check.code, 2, check.stderr);
  assert.match(check.stderr, rule);
  assert.doesNotMatch(check.stderr, /pw12/);
  writeFileSync(file, yaml('127.0.0.1'));
  const onLoopback = await runCli(['config', 'check', file]);
  assert.equal(onLoopback.code, 0, onLoopback.stderr);
  assert.match(onLoopback.stderr, /warning: data_dir\/mqtt-identities\/observer\.grafana: a secret of 4 characters/);
  // With an external broker nothing is generated at start: the hint says how to renew it there.
  writeFileSync(
    file,
    `data_dir: ${dir.path}\nmqtt:\n  observers: [grafana]\n  url: mqtt://u:${'p'.repeat(20)}@broker.example:1883\n`,
  );
  const external = await runCli(['config', 'check', file]);
  assert.equal(external.code, 2, external.stderr);
  assert.match(
    external.stderr,
    /observer\.grafana: must be at least 16 .*mqtt\.url \(broker\.example\).*run `brainstem mqtt credentials`/s,
  );
});
