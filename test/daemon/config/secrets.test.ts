import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../../daemon/config/load.js';
import { redactConfig, redactUrl, resolveSecret, storeOnce } from '../../../daemon/config/secrets.js';
import { tempDir } from '../../helpers/temp.js';

test('an empty secret is generated once, stored with mode 0600 and reused', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const dataDir = join(dir.path, 'nested', 'state');
  const first = resolveSecret('', dataDir, 'token');
  assert.equal(first.generated, true);
  assert.equal(first.file, join(dataDir, 'token'));
  assert.match(first.value, /^[A-Za-z0-9_-]{32}$/);
  assert.equal(statSync(first.file!).mode & 0o777, 0o600);
  assert.equal(readFileSync(first.file!, 'utf8').trim(), first.value);
  const second = resolveSecret('', dataDir, 'token');
  assert.deepEqual(second, { value: first.value, file: first.file, generated: false });
});

test('a configured secret wins and writes nothing', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  assert.deepEqual(resolveSecret('mine', dir.path, 'token'), { value: 'mine', generated: false });
  assert.throws(() => statSync(join(dir.path, 'token')), /ENOENT/);
});

test('an empty stored secret file is replaced', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  writeFileSync(join(dir.path, 'token'), '\n');
  const s = resolveSecret('', dir.path, 'token');
  assert.equal(s.generated, true);
  assert.notEqual(s.value, '');
});

test('a secret another process stored first is adopted, not overwritten', (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const file = join(dir.path, 'token');
  assert.equal(storeOnce(file, 'first-value'), 'first-value');
  assert.equal(statSync(file).mode & 0o777, 0o600);
  // The race: a second process read "no file" before the first wrote; it must use the winner.
  assert.equal(storeOnce(file, 'second-value'), 'first-value');
  assert.equal(readFileSync(file, 'utf8'), 'first-value\n');
});

test('redaction masks secrets and URL passwords only', () => {
  assert.equal(redactUrl('mqtt://u:secret@h:1883'), 'mqtt://u:***@h:1883');
  assert.equal(redactUrl('mqtt://h:1883'), 'mqtt://h:1883');
  const c = loadConfig({
    env: {},
    overrides: { server: { token: 'tok' }, mqtt: { url: 'mqtt://u:pw@127.0.0.1:1', password: 'pw' } },
  });
  const r = redactConfig(c);
  assert.equal(r.server.token, '***');
  assert.equal(r.mqtt.password, '***');
  assert.equal(r.mqtt.url, 'mqtt://u:***@127.0.0.1:1');
  assert.equal(r.mqtt.username, 'brainstem');
  assert.equal(c.server.token, 'tok', 'the original is untouched');
});
