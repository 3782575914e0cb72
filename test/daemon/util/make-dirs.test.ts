// makeDirs: mkdir -p with a mode for each created level, an error on a file in the way, and an
// error (not Node's endless retry) where a pseudo file system refuses a new child.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeDirs } from '../../../daemon/util/make-dirs.js';

test('creates each missing level with the mode; an existing folder is fine', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'brainstem-make-dirs-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const deep = join(root, 'a', 'b', 'c');
  makeDirs(deep, 0o700);
  for (const p of [join(root, 'a'), join(root, 'a', 'b'), deep]) assert.equal(statSync(p).mode & 0o777, 0o700, p);
  makeDirs(deep, 0o700);
  writeFileSync(join(root, 'file'), 'x');
  assert.throws(() => makeDirs(join(root, 'file', 'sub')), { code: 'ENOTDIR' });
  assert.equal(existsSync(join(root, 'file', 'sub')), false);
  // A link to nothing is an error, not a folder made (mkdir would say EEXIST and succeed quietly).
  symlinkSync(join(root, 'nowhere'), join(root, 'dangling'));
  assert.throws(() => makeDirs(join(root, 'dangling')), { code: 'ENOENT' });
});

test('a folder under /proc is an ENOENT error at once (Node recursive mkdir spins there)', {
  skip: !existsSync('/proc/self'),
}, () => {
  // In a child with a time limit: a regression would hang this process, not fail it.
  const mod = fileURLToPath(new URL('../../../daemon/util/make-dirs.js', import.meta.url));
  const code = `import(${JSON.stringify(mod)}).then((m) => { try { m.makeDirs('/proc/brainstem-none/x'); } catch (e) { console.log(e.code); } })`;
  const r = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.signal, null, 'makeDirs returned');
  assert.equal(r.stdout.trim(), 'ENOENT');
});
