// `brainstem sim render` writes decodable images of a shipped scene; `brainstem bench render`
// prints its JSON report; both refuse bad arguments by name. No timing is asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { runCli } from '../../helpers/daemon.js';
import { tempDir } from '../../helpers/temp.js';

test('sim render writes the camera image and a 16-bit depth PNG; the same seed gives the same bytes', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const out = (f: string) => join(dir.path, f);
  const args = ['sim', 'render', '--scene', 'yam-pick-place', '--camera', 'front', '--seed', '7'];
  const a = await runCli([...args, '--out', out('a.png'), '--depth', out('a-depth.png')]);
  assert.equal(a.code, 0, a.stderr);
  assert.match(a.stdout, /a\.png: 640×480 png, \d+ bytes \(scene yam-pick-place, camera front\)/);
  const meta = await sharp(out('a.png')).metadata();
  assert.deepEqual([meta.format, meta.width, meta.height, meta.channels], ['png', 640, 480, 3]);
  const depth = await sharp(out('a-depth.png')).metadata();
  assert.deepEqual([depth.width, depth.channels, depth.depth], [640, 1, 'ushort']);
  const b = await runCli([...args, '--out', out('b.png')]);
  assert.equal(b.code, 0, b.stderr);
  assert.deepEqual(readFileSync(out('a.png')), readFileSync(out('b.png')));
  const c = await runCli([
    'sim',
    'render',
    '--scene',
    'yam-pick-place',
    '--camera',
    'wrist',
    '--joints',
    '0,1.2,1,0,-0.3,0',
    '--gripper',
    '0.5',
    '--out',
    out('w.jpg'),
    '--quality',
    '60',
  ]);
  assert.equal(c.code, 0, c.stderr);
  const w = await sharp(out('w.jpg')).metadata();
  assert.deepEqual([w.format, w.width, w.height], ['jpeg', 320, 240]);
});

test('sim render refuses bad arguments by name; sim without a subcommand still needs --robot', async (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  const base = ['sim', 'render', '--scene', 'yam-pick-place', '--out', join(dir.path, 'x.png')];
  const bad: [string[], RegExp][] = [
    [
      [...base, '--camera', 'nosuch'],
      /--camera: scene "yam-pick-place" has no camera "nosuch" \(cameras: front, wrist\)/,
    ],
    [[...base, '--camera', 'front', '--joints', '0,1'], /--joints: arm "arm" has 6 joints \(got 2\)/],
    [
      [...base, '--camera', 'front', '--joints', 'left=0,1,1,0,0,0'],
      /--joints: no arm "left" in this scene \(arms: arm\)/,
    ],
    [[...base, '--camera', 'front', '--gripper', '2'], /--gripper must be one number in \[0, 1\] \(got "2"\)/],
    [[...base, '--camera', 'front', '--quality', '0'], /--quality must be an integer in \[1, 100\], got "0"/],
    [
      ['sim', 'render', '--scene', 'yam-pick-place', '--camera', 'front', '--out', join(dir.path, 'x.gif')],
      /--out must end in \.png, \.jpg or \.jpeg \(got ".*x\.gif"\)/,
    ],
    [['sim', 'render', '--scene', 'nosuch', '--camera', 'front', '--out', 'x.png'], /scene "nosuch"/],
    [
      ['sim', '--robot', 'yam', '--broker', 'notaurl'],
      /--broker: must be a broker URL such as mqtt:\/\/127\.0\.0\.1:1883, got "notaurl"/,
    ],
    // The schemes the daemon's mqtt.url takes (its simulated controllers get that URL).
    [
      ['sim', '--robot', 'yam', '--broker', 'http://127.0.0.1:1883'],
      /--broker: the scheme must be one of mqtt, mqtts, tcp, tls, ws, wss, got "http:\/\/127\.0\.0\.1:1883"/,
    ],
  ];
  for (const [args, message] of bad) {
    const r = await runCli(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
  // A missing required option is reported as commander reports one elsewhere: exit 1 with the usage.
  const missing = await runCli(['sim']);
  assert.equal(missing.code, 1, missing.stderr);
  assert.match(missing.stderr, /required option '--robot <name\|file>' not specified[\s\S]*Usage: brainstem sim/);
});

test('bench render prints a row per scene camera with render and encode percentiles', async () => {
  const r = await runCli(['bench', 'render', '--frames', '3', '--warmup', '1', '--resolution', '160x120', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.target_render_ms, 15);
  const front = report.cameras.find(
    (c: { scene: string; camera: string }) => c.scene === 'yam-pick-place' && c.camera === 'front',
  );
  assert.ok(front, r.stdout);
  assert.deepEqual([front.width, front.height, front.encoding, front.frames], [160, 120, 'jpeg', 3]);
  for (const key of [
    'render_p50_ms',
    'render_p99_ms',
    'encode_p50_ms',
    'encode_p99_ms',
    'depth_encode_p50_ms',
    'mean_bytes',
  ])
    assert.ok(front[key] >= 0, key);
  const bad = await runCli(['bench', 'render', '--resolution', '640']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--resolution must be WxH \(each 1–4096\) or native, got "640"/);
});
