// Config errors never echo a secret: URL passwords are masked, `secret` keys show their length
// only, and a password that is not valid percent-encoding is a config issue, not a URIError.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../../daemon/config/load.js';
import { weakSecrets } from '../../../daemon/config/secret-strength.js';
import { redactUrl } from '../../../daemon/config/url-secrets.js';
import { mqttIdentities } from '../../../daemon/mqtt/identities.js';
import type { Config } from '../../../daemon/config/schema.js';
import { runCli } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${(err as Error).stack}`);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}

test('a bad mqtt.url shows the URL with its password masked', () => {
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_MQTT_URL: 'http://u:supersecret123@host' } }));
  assert.match(
    msg,
    /mqtt\.url: must use one of the schemes .*, got "http:\/\/u:\*\*\*@host\/" \(from BRAINSTEM_MQTT_URL\)/,
  );
  assert.doesNotMatch(msg, /supersecret123/);
});

test('a secret key with a wrong type shows its length, not its value', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const file = join(dir.path, 'user.yaml');
  writeFileSync(file, 'server:\n  token: 123456789\n');
  const msg = configError(() => loadConfig({ file, env: {} }));
  assert.match(msg, /server\.token: must be a string, got <hidden, 9 characters>/);
  assert.doesNotMatch(msg, /123456789/);
});

test('a misspelt BRAINSTEM_ variable does not echo its value (it may be a secret)', () => {
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_SERVER_TOKN: 'hunter2-hunter2' } }));
  assert.match(msg, /BRAINSTEM_SERVER_TOKN: is not a known configuration variable .*got <hidden, 15 characters>/);
  assert.doesNotMatch(msg, /hunter2/);
});

test('BRAINSTEM_MODELS_* is reported: models are set in a config file', () => {
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_MODELS_QWEN_PATH: '/m' } }));
  assert.match(
    msg,
    /BRAINSTEM_MODELS_QWEN_PATH: cannot be set from the environment: models is a mapping of .*config file/,
  );
});

test('a % that is not percent-encoding in the mqtt.url password is a config issue without the value', () => {
  const msg = configError(() => loadConfig({ env: { BRAINSTEM_MQTT_URL: 'mqtt://u:ab%zzcd@host:1883' } }));
  assert.match(msg, /mqtt\.url: must percent-encode its user name and password \(write % as %25\)/);
  assert.doesNotMatch(msg, /ab%zzcd/);
});

test('weakSecrets and mqttIdentities do not throw on an undecodable URL password', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const c = loadConfig({ env: {}, overrides: { data_dir: dir.path } });
  const bad = { ...c, mqtt: { ...c.mqtt, url: 'mqtt://u:%zz@host:1883' } } as Config;
  assert.deepEqual(weakSecrets(bad), []);
  assert.equal(mqttIdentities(bad, false)[0]!.username, c.mqtt.username);
});

test('redactUrl masks credentials in text the URL parser refuses', () => {
  assert.equal(redactUrl('mqtt://u:pw@host:1883'), 'mqtt://u:***@host:1883');
  assert.equal(redactUrl('mqtt://u:pw@ho st'), 'mqtt://***@ho st');
});

test('config check with an undecodable mqtt.url password exits 2 without a stack trace', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const file = join(dir.path, 'user.yaml');
  writeFileSync(file, '{}\n');
  const r = await runCli(['config', 'check', file], { BRAINSTEM_MQTT_URL: 'mqtt://u:%zz@host:1883' });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /mqtt\.url: must percent-encode its user name and password/);
  assert.doesNotMatch(r.stderr, /URIError|\n\s+at /);
});

test('sim --broker does not echo the password of a bad URL', async () => {
  const r = await runCli(['sim', '--robot', 'panda', '--broker', 'http://u:supersecret123@host']);
  assert.equal(r.code, 2, r.stderr);
  assert.doesNotMatch(r.stderr, /supersecret123/);
});
