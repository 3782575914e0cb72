// daemon.lock: one daemon per data_dir; a live owner refuses, a dead (or our own, reused) pid is replaced.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { acquireLock, lockFile, LockedError, releaseLock } from '../../daemon/runtime-lock.js';
import { tempDir } from '../helpers/temp.js';

function dir(t: { after(fn: () => void): void }): string {
  const d = tempDir();
  t.after(() => d.remove());
  return d.path;
}

test('the lock holds the pid with mode 0600 and is released only by its owner', (t) => {
  const d = dir(t);
  acquireLock(d, { pid: 1234, alive: () => true });
  assert.equal(readFileSync(lockFile(d), 'utf8'), '1234\n');
  assert.equal(statSync(lockFile(d)).mode & 0o777, 0o600);
  releaseLock(d, 999);
  assert.equal(existsSync(lockFile(d)), true, 'another pid does not release it');
  releaseLock(d, 1234);
  assert.equal(existsSync(lockFile(d)), false);
});

test('a live owner refuses the start, naming the pid and the data_dir', (t) => {
  const d = dir(t);
  acquireLock(d, { pid: 1234, alive: () => true });
  assert.throws(
    () => acquireLock(d, { pid: 5678, alive: (pid) => pid === 1234 }),
    (err: Error) =>
      err instanceof LockedError &&
      err.pid === 1234 &&
      err.message.includes(`another daemon (pid 1234) is running on data_dir ${d}`),
  );
  assert.equal(readFileSync(lockFile(d), 'utf8'), '1234\n', 'the owner keeps it');
});

test('a stale lock (dead pid, garbage, or this very pid reused) is replaced', (t) => {
  const d = dir(t);
  for (const [content, alive] of [
    ['1234\n', false],
    ['not a pid\n', true],
    ['5678\n', true],
  ] as const) {
    writeFileSync(lockFile(d), content);
    acquireLock(d, { pid: 5678, alive: () => alive });
    assert.equal(readFileSync(lockFile(d), 'utf8'), '5678\n', content);
  }
});

test('the real liveness check: this process is alive, a finished child is not', async (t) => {
  const d = dir(t);
  writeFileSync(lockFile(d), `${process.pid}\n`);
  assert.throws(() => acquireLock(d, { pid: process.pid + 1 }), LockedError);
  const { spawnSync } = await import('node:child_process');
  const gone = spawnSync(process.execPath, ['-e', '']).pid!;
  writeFileSync(lockFile(d), `${gone}\n`);
  acquireLock(d, { pid: process.pid + 1 });
  assert.equal(readFileSync(lockFile(d), 'utf8'), `${process.pid + 1}\n`);
});
