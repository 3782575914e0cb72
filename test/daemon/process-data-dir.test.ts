// `brainstem start` as a child process and its data_dir: created (0700) even when no secret is
// generated there, locked against a second daemon, daemon.json and daemon.lock gone after stop.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupOnExit } from '../../daemon/cli/start.js';
import { lockFile } from '../../daemon/runtime-lock.js';
import { runtimeFile } from '../../daemon/runtime-file.js';
import { runCli, spawnTestDaemon } from '../helpers/daemon.js';
import { tempDir } from '../helpers/temp.js';
import { within } from '../helpers/wait.js';

// A configured token and an external broker with credentials in its URL: nothing generates a
// secret, so nothing else creates data_dir. The broker is unreachable; the daemon starts anyway.
function noSecretsEnv(dataDir: string): Record<string, string> {
  return {
    BRAINSTEM_DATA_DIR: dataDir,
    BRAINSTEM_SERVER_TOKEN: randomBytes(20).toString('base64url'),
    BRAINSTEM_MQTT_URL: `mqtt://u:${randomBytes(16).toString('base64url')}@127.0.0.1:1`,
  };
}

test('start creates a missing data_dir (0700) when no secret is generated, then stops cleanly', async (t) => {
  const parent = tempDir();
  t.after(() => parent.remove());
  const dataDir = join(parent.path, 'nd');
  const d = await spawnTestDaemon(noSecretsEnv(dataDir));
  t.after(() => d.cleanup());
  assert.equal(statSync(dataDir).mode & 0o777, 0o700);
  assert.equal(readFileSync(lockFile(dataDir), 'utf8'), `${d.child.pid}\n`);
  d.child.kill('SIGTERM');
  assert.equal(await within(d.exited, 10_000, 'the daemon to exit after SIGTERM'), 0, d.output().stderr);
  assert.equal(existsSync(runtimeFile(dataDir)), false, 'daemon.json removed');
  assert.equal(existsSync(lockFile(dataDir)), false, 'daemon.lock removed');
});

test('a second daemon on the same data_dir is refused naming the first pid; the first keeps daemon.json', async (t) => {
  const first = await spawnTestDaemon();
  t.after(() => first.cleanup());
  const second = await runCli(['start'], {
    BRAINSTEM_DATA_DIR: first.dataDir,
    BRAINSTEM_SERVER_PORT: '0',
    BRAINSTEM_MQTT_EMBEDDED_PORT: '0',
    BRAINSTEM_LOGGING_LEVEL: 'silent',
  });
  assert.equal(second.code, 1, second.stderr);
  assert.match(
    second.stderr,
    new RegExp(`cannot start: another daemon \\(pid ${first.child.pid}\\) is running on data_dir ${first.dataDir}`),
  );
  assert.equal(JSON.parse(readFileSync(runtimeFile(first.dataDir), 'utf8')).pid, first.child.pid);
  assert.equal(readFileSync(lockFile(first.dataDir), 'utf8'), `${first.child.pid}\n`);
});

test('the exit cleanup removes daemon.json and the lock only when they are this process', (t) => {
  const d = tempDir();
  t.after(() => d.remove());
  const write = (pid: number) => {
    writeFileSync(runtimeFile(d.path), JSON.stringify({ pid }));
    writeFileSync(lockFile(d.path), `${pid}\n`);
  };
  write(process.pid + 1);
  cleanupOnExit(d.path);
  assert.deepEqual([existsSync(runtimeFile(d.path)), existsSync(lockFile(d.path))], [true, true]);
  write(process.pid);
  cleanupOnExit(d.path);
  assert.deepEqual([existsSync(runtimeFile(d.path)), existsSync(lockFile(d.path))], [false, false]);
});
