// Without the native addon, doctor and start say what to run instead of crashing.
// The compiled tree (without tests) is copied next to configs, the console's page and node_modules
// but without build/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../../daemon/util/repo-root.js';
import { runCli, spawnTestDaemon } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { tempDir } from '../../helpers/temp.js';
import { within } from '../../helpers/wait.js';

function treeWithoutAddon(t: { after(fn: () => void): void }): string {
  const dir = tempDir('brainstem-noaddon-');
  t.after(() => dir.remove());
  cpSync(join(repoRoot, 'dist'), join(dir.path, 'dist'), {
    recursive: true,
    filter: (src) => !src.includes(`${join('dist', 'test')}`),
  });
  cpSync(join(repoRoot, 'configs'), join(dir.path, 'configs'), { recursive: true });
  // The operator console's page is read from the source tree, as an install has it.
  cpSync(join(repoRoot, 'daemon', 'console', 'web'), join(dir.path, 'daemon', 'console', 'web'), { recursive: true });
  cpSync(join(repoRoot, 'package.json'), join(dir.path, 'package.json'));
  symlinkSync(join(repoRoot, 'node_modules'), join(dir.path, 'node_modules'));
  return join(dir.path, 'dist', 'daemon', 'main.js');
}

test('doctor reports the missing addon and the command that builds it', async (t) => {
  const main = treeWithoutAddon(t);
  const r = await runCli(['doctor', '--json'], {}, { main, timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.native.built, false);
  assert.match(
    report.native.error,
    /native addon not found at .*build\/Release\/brainstem\.node; build it with `npm run build:native`/,
  );
  assert.match(r.stderr, /npm run build:native/);
});

test('start runs without the addon, warns what to run, and system.info says why', async (t) => {
  const main = treeWithoutAddon(t);
  const d = await spawnTestDaemon({}, { main });
  t.after(() => d.cleanup());
  assert.equal((await fetch(`${d.runtime.http}/health`)).status, 200);
  const warning = d
    .output()
    .stdout.split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((l) => l.level === 40);
  assert.match(warning?.msg ?? '', /npm run build:native.*without the inference engine/);
  const rpc = await RpcTestClient.connect(d.runtime.ws, d.token);
  assert.match((await rpc.call('system.info')).result.native.error, /npm run build:native/);
  d.child.kill('SIGTERM');
  assert.equal(await within(d.exited, 5000, 'exit after SIGTERM'), 0);
});
