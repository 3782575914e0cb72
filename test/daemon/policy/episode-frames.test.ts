// The episode's FrameSource over the daemon's camera stores: colour streams only, the latest good
// frame of each with its size, type and arrival time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../../daemon/log.js';
import { linkFrames, linkScene } from '../../../daemon/policy/episode/link-frames.js';
import { CameraStore } from '../../../daemon/robots/camera-store.js';
import type { RobotLink } from '../../../daemon/robots/link-service.js';
import type { CameraMeta } from '../../../robot/link/camera-protocol.js';
import { depthPng, solidImage } from '../../helpers/images.js';

test('linkFrames: the latest colour frame per camera; depth streams and unknown robots give none', async () => {
  const log = { warn: () => undefined } as unknown as Logger;
  const store = new CameraStore(
    'arm1',
    { maxFrameBytes: 100_000, ringFrames: 3, ringBytes: 1 << 20, maxStreams: 4 },
    log,
  );
  const meta = (seq: number, encoding: 'jpeg' | 'png', kind?: 'depth'): CameraMeta => ({
    v: 1,
    seq,
    time: seq,
    encoding,
    width: 8,
    height: 6,
    ...(kind ? { kind } : {}),
  });
  const first = await solidImage('jpeg', 8, 6, 10);
  const second = await solidImage('jpeg', 8, 6, 250);
  assert.equal(store.accept('top', 'color', meta(1, 'jpeg'), first, 1), null);
  assert.equal(store.accept('top', 'color', meta(2, 'jpeg'), second, 2), null);
  assert.equal(store.accept('top', 'depth', meta(3, 'png', 'depth'), await depthPng(8, 6), 3), null);
  const link = {
    robot: (id: string) => (id === 'arm1' ? { cameras: store } : undefined),
    now: () => 5,
  } as unknown as RobotLink;
  const frames = linkFrames(link);
  assert.deepEqual(frames.cameras('arm1'), ['top']);
  const latest = frames.latest('arm1');
  assert.equal(latest.length, 1);
  const f = latest[0]!;
  assert.deepEqual([f.camera, f.mime, f.width, f.height, f.time], ['top', 'image/jpeg', 8, 6, 2]);
  assert.deepEqual(Buffer.from(f.bytes), second);
  assert.deepEqual(frames.cameras('other'), []);
  assert.deepEqual(frames.latest('other'), []);
});

test('linkScene: predicates of a sim/scene sampled after the last state; a problem when none comes; none without a simulator', async () => {
  let now = 0;
  const runtime: any = { simScene: null, session: { latest: { time: 10 } } };
  const link = { robot: (id: string) => (id === 'arm1' ? runtime : undefined), now: () => now } as unknown as RobotLink;
  const scene = linkScene(link, 1);
  assert.equal(await scene.predicates('arm1'), undefined, 'no simulated scene');
  assert.equal(await scene.predicates('other'), undefined);
  const tasks = { put: ['block_in_bowl'] };
  const msg = (time: number, ok: boolean) => ({ msg: { time, predicates: { block_in_bowl: ok }, tasks }, at: 0 });
  runtime.simScene = msg(9.5, false);
  const waiting = scene.predicates('arm1');
  runtime.simScene = msg(10.2, true);
  assert.deepEqual(await waiting, { predicates: { block_in_bowl: true }, tasks });
  runtime.simScene = msg(9.5, false);
  const stale = scene.predicates('arm1');
  now = 2;
  const r = await stale;
  assert.match(r!.problem!, /no scene newer than the robot's last state within 1 s/);
});
