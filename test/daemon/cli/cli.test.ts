// The CLI as users run it: config check, bad configs (exit 2, no stack trace), doctor.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { runCli } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';

function file(t: { after(fn: () => void): void }, text: string): string {
  const dir = tempDir();
  t.after(() => dir.remove());
  const p = join(dir.path, 'brainstem.yaml');
  writeFileSync(p, text);
  return p;
}

const noStack = (s: string) => assert.doesNotMatch(s, /\n\s+at .+:\d+:\d+/, `stack trace in:\n${s}`);

test('config check accepts a valid file and can print it with secrets masked', async (t) => {
  const p = file(t, 'server:\n  port: 8080\n  token: s3cret\n');
  const ok = await runCli(['config', 'check', p]);
  assert.deepEqual([ok.code, ok.stdout], [0, `${p}: valid\n`]);
  const printed = await runCli(['config', 'check', p, '--print']);
  assert.equal(printed.code, 0);
  assert.match(printed.stdout, /port: 8080/);
  assert.match(printed.stdout, /token: "\*\*\*"/);
  assert.doesNotMatch(printed.stdout, /s3cret/);
});

test('config check on a bad file exits 2 naming key, rule and value', async (t) => {
  const p = file(t, 'server:\n  port: 99999\nmqtt:\n  bse: x\n');
  const r = await runCli(['config', 'check', p]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^brainstem: invalid configuration \(2 problems\):/);
  assert.match(r.stderr, /server\.port: must be an integer in 0\.\.65535, got 99999 \(from .*brainstem\.yaml\)/);
  assert.match(r.stderr, /mqtt\.bse: is not a known key \(did you mean "base"\?\)/);
  noStack(r.stderr);
});

test('config check reports YAML syntax errors and missing files with exit 2', async (t) => {
  const broken = await runCli(['config', 'check', file(t, 'server: [1,\n')]);
  assert.equal(broken.code, 2);
  assert.match(broken.stderr, /is not valid YAML/);
  noStack(broken.stderr);
  const missing = await runCli(['config', 'check', '/nonexistent/x.yaml']);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read config file \/nonexistent\/x\.yaml: file not found/);
});

test('start with a bad config or a bad environment variable exits 2 before listening', async (t) => {
  const bad = await runCli(['start', '--config', file(t, 'logging:\n  level: loud\n')]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /logging\.level: must be one of .*got "loud"/);
  noStack(bad.stderr);
  const env = await runCli(['start'], { BRAINSTEM_SERVER_PORT: 'http' });
  assert.equal(env.code, 2);
  assert.match(env.stderr, /server\.port: .*got "http" \(from BRAINSTEM_SERVER_PORT\)/);
});

test('start with an unusable data_dir exits 2 naming it', async (t) => {
  const notADir = file(t, 'I am a file\n');
  const r = await runCli(['start'], { BRAINSTEM_DATA_DIR: join(notADir, 'state') });
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /cannot keep the generated token in data_dir .*brainstem\.yaml\/state: ENOTDIR .*set data_dir \(BRAINSTEM_DATA_DIR\)/,
  );
  noStack(r.stderr);
});

test('a file a command cannot write is named without a stack; bad option values exit 2 before any work', async (t) => {
  const existing = file(t, 'x\n');
  const creds = await runCli(['mqtt', 'credentials', '--out', existing]);
  assert.equal(creds.code, 1);
  assert.match(creds.stderr, /^brainstem: EEXIST: file already exists, mkdir '.*brainstem\.yaml'\n$/);
  noStack(creds.stderr);
  const provider = await runCli(['policy', 'run', 'do it', '--robot', 'yam', '--provider', 'bogus', '--model', 'm']);
  assert.equal(provider.code, 2);
  assert.match(provider.stderr, /--provider: must be one of scripted, openai, local, got "bogus"/);
  const out = join(existing, '..', 'synth');
  const synth = await runCli([
    'models',
    'synth',
    '--arch',
    'qwen3_moe',
    '--shape',
    'tiny',
    '--tokenizer',
    '/nonexistent',
    '--out',
    out,
  ]);
  assert.equal(synth.code, 1);
  assert.match(synth.stderr, /--tokenizer \/nonexistent: tokenizer\.json is missing/);
  assert.equal(existsSync(out), false, 'nothing written before the tokenizer was checked');
});

test('start on a port in use exits 1 naming the key to change', async (t) => {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => srv.close());
  const port = (srv.address() as { port: number }).port;
  const dir = tempDir();
  t.after(() => dir.remove());
  const r = await runCli(['start'], {
    BRAINSTEM_SERVER_PORT: String(port),
    BRAINSTEM_DATA_DIR: dir.path,
    BRAINSTEM_MQTT_EMBEDDED_PORT: '0',
    BRAINSTEM_LOGGING_LEVEL: 'silent',
  });
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    new RegExp(
      `could not start: api: cannot listen on 127\\.0\\.0\\.1:${port}: EADDRINUSE; choose another server\\.port`,
    ),
  );
  noStack(r.stderr);
});

test('doctor --json reports CPU, memory, disks, native backends and a profile', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const r = await runCli(['doctor', '--json'], { BRAINSTEM_DATA_DIR: dir.path }, { timeoutMs: 60_000 });
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.ok(report.cpu.cores >= 1);
  assert.ok(report.memory.total_bytes > 0 && report.memory.available_bytes > 0);
  assert.equal(typeof report.memory.unified, 'boolean');
  assert.ok(Array.isArray(report.disks.filesystems));
  assert.equal(report.disks.data_dir.path, dir.path);
  assert.equal(report.native.built, true, 'the test build includes the addon');
  assert.ok(report.native.backends.some((b: { name: string; usable: boolean }) => b.name === 'cpu' && b.usable));
  assert.ok(['streaming', 'resident'].includes(report.recommended_profile.name));
  const text = await runCli(['doctor'], { BRAINSTEM_DATA_DIR: dir.path }, { timeoutMs: 60_000 });
  assert.equal(text.code, 0);
  assert.match(text.stdout, /^CPU /);
  assert.match(text.stdout, /\nProfile {4}reference 30B-A3B int4: \w+ under [\d.]+ GiB/);
});
