// Simulated cameras end to end: `brainstem sim --scene --camera-rate` renders the scene's cameras
// and publishes them as a camera node would (MQTT 3.1.1 sidecars on the embedded broker, binary
// frames over the WebSocket controller link); the daemon serves them with robots.cameras/frame.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import sharp from 'sharp';
import { runCli } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';
import { startRig, waitReady, type Transport } from './harness.js';

interface CameraInfo {
  name: string;
  kind: string;
  received: number;
  meta: { width: number; height: number; intrinsics: { fx: number } } | null;
}

for (const transport of ['embedded', 'ws'] as Transport[]) {
  test(`sim cameras over ${transport}: the scene's colour and depth streams reach robots.frame as decodable images`, async (t) => {
    const rig = await startRig(t, transport, {
      robots: [{ id: 'arm1', robot: 'yam' }],
      simExtra: { arm1: ['--scene', 'yam-pick-place', '--camera-rate', '4'] },
    });
    if (!rig) return;
    await waitReady(rig, 'arm1');
    const cameras: CameraInfo[] = await waitFor(
      async () => {
        const r = (await rig.rpc.call('robots.cameras', { robot: 'arm1' })).result;
        return r.cameras.length === 3 && r.cameras.every((c: CameraInfo) => c.received > 0) ? r.cameras : undefined;
      },
      `frames of front, front/depth and wrist (sim stderr: ${rig.sims.get('arm1')!.stderr()})`,
    );
    assert.deepEqual(cameras.map((c) => `${c.name}/${c.kind}`).sort(), ['front/color', 'front/depth', 'wrist/color']);
    const front = cameras.find((c) => c.name === 'front' && c.kind === 'color')!;
    assert.deepEqual([front.meta!.width, front.meta!.height], [640, 480]);
    // fov 60° over 640 px: fx = 320 / tan 30°.
    assert.ok(Math.abs(front.meta!.intrinsics.fx - 320 / Math.tan(Math.PI / 6)) < 1e-6);

    const frame = (await rig.rpc.call('robots.frame', { robot: 'arm1', camera: 'wrist' })).result;
    assert.match(frame.data_url, /^data:image\/jpeg;base64,/);
    const img = await sharp(Buffer.from(frame.data_url.split(',')[1], 'base64')).metadata();
    assert.deepEqual([img.format, img.width, img.height], ['jpeg', 320, 240]);
    const depth = (await rig.rpc.call('robots.frame', { robot: 'arm1', camera: 'front', kind: 'depth' })).result;
    const d = await sharp(Buffer.from(depth.data_url.split(',')[1], 'base64')).metadata();
    assert.deepEqual([d.format, d.depth, d.channels], ['png', 'ushort', 1]);
    assert.match(rig.sims.get('arm1')!.stderr(), /cameras front, wrist at 4 Hz/);
  });
}

test('brainstem sim --camera-rate: needs --scene, and a rate in range', async () => {
  const noScene = await runCli(['sim', '--robot', 'yam', '--camera-rate', '5']);
  assert.equal(noScene.code, 2);
  assert.match(noScene.stderr, /--camera-rate needs --scene/);
  const bad = await runCli(['sim', '--robot', 'yam', '--scene', 'yam-pick-place', '--camera-rate', '500']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--camera-rate must be a number in \[0\.1, 60\] \(got "500"\)/);
});
