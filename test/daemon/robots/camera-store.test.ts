// One robot's camera streams: the ring's count and byte bounds, drops that never displace the
// latest good frame, the observed rate and age on an injected clock, rate-limited drop logs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Logger } from '../../../daemon/log.js';
import { CameraStore, IDLE_STREAM_S, type CameraLimits } from '../../../daemon/robots/camera-store.js';
import type { CameraMeta } from '../../../robot/link/camera-protocol.js';
import { depthPng, solidImage } from '../../helpers/images.js';

function capture(): { log: Logger; warnings: Record<string, unknown>[] } {
  const warnings: Record<string, unknown>[] = [];
  const log = { warn: (o: Record<string, unknown>) => warnings.push(o), info: () => undefined } as unknown as Logger;
  return { log, warnings };
}

const LIMITS: CameraLimits = { maxFrameBytes: 100_000, ringFrames: 3, ringBytes: 1 << 20, maxStreams: 2 };
const meta = (seq: number): CameraMeta => ({ v: 1, seq, time: seq, encoding: 'jpeg', width: 8, height: 6 });

test('the ring keeps ring_frames frames, newest last; index counts back from the latest', async () => {
  const store = new CameraStore('r1', LIMITS, capture().log);
  const jpeg = await solidImage('jpeg', 8, 6);
  for (let i = 0; i < 5; i++) assert.equal(store.accept('wrist', 'color', meta(i), jpeg, i * 0.1), null);
  assert.deepEqual(
    [0, 1, 2, 3].map((i) => store.frame('wrist', 'color', i)?.meta.seq),
    [4, 3, 2, undefined],
  );
  const [s] = store.list(0.4);
  assert.deepEqual(s!.ring, { frames: 3, bytes: 3 * jpeg.length });
  assert.equal(s!.received, 5);
});

test('the byte bound drops the oldest frames but never the latest', async () => {
  const jpeg = await solidImage('jpeg', 8, 6);
  const store = new CameraStore('r1', { ...LIMITS, ringFrames: 100, ringBytes: jpeg.length * 2 + 1 }, capture().log);
  for (let i = 0; i < 4; i++) store.accept('wrist', 'color', meta(i), jpeg, i);
  assert.deepEqual(store.list(4)[0]!.ring, { frames: 2, bytes: 2 * jpeg.length });
  const tiny = new CameraStore('r1', { ...LIMITS, ringBytes: 10 }, capture().log);
  tiny.accept('wrist', 'color', meta(0), jpeg, 0);
  tiny.accept('wrist', 'color', meta(1), jpeg, 1);
  assert.deepEqual(tiny.list(1)[0]!.ring, { frames: 1, bytes: jpeg.length });
  assert.equal(tiny.frame('wrist', 'color')?.meta.seq, 1);
});

test('corrupt, oversized, wrongly typed and meta-less frames are counted; the last good frame stays', async () => {
  const { log, warnings } = capture();
  const store = new CameraStore('r1', LIMITS, log);
  const jpeg = await solidImage('jpeg', 8, 6);
  store.accept('wrist', 'color', meta(1), jpeg, 0);
  const png = await solidImage('png', 8, 6);
  const bad: [CameraMeta | { code: 'no_meta'; detail: string }, Buffer][] = [
    [meta(2), jpeg.subarray(0, 50)],
    [meta(3), Buffer.alloc(LIMITS.maxFrameBytes + 1, 0xff)],
    [meta(4), png],
    [{ code: 'no_meta', detail: 'none' }, jpeg],
    [{ ...meta(5), width: 9 }, jpeg],
  ];
  for (const [m, image] of bad) assert.notEqual(store.accept('wrist', 'color', m, image, 1), null);
  assert.equal(store.frame('wrist', 'color')?.meta.seq, 1);
  assert.equal(store.frame('wrist', 'color', 1), undefined);
  assert.deepEqual(store.list(1)[0]!.dropped, {
    corrupt: 1,
    oversize: 1,
    wrong_encoding: 1,
    no_meta: 1,
    size_mismatch: 1,
  });
  assert.equal(warnings.length, 5);
  // The same reason again within the log interval is counted, not logged.
  store.accept('wrist', 'color', meta(6), png, 2);
  assert.equal(warnings.length, 5);
  store.accept('wrist', 'color', meta(7), png, 20);
  assert.equal(warnings.length, 6);
  assert.equal(warnings[5]!.also_dropped, 1);
});

test('streams beyond max_streams are dropped, unattributed', async () => {
  const store = new CameraStore('r1', LIMITS, capture().log);
  const jpeg = await solidImage('jpeg', 8, 6);
  const png = await depthPng(8, 6);
  store.accept('a', 'color', meta(0), jpeg, 0);
  store.accept('a', 'depth', { ...meta(0), kind: 'depth', encoding: 'png' }, png, 0);
  assert.equal(store.accept('b', 'color', meta(0), jpeg, 0)?.code, 'too_many_streams');
  assert.deepEqual(store.unattributed, { too_many_streams: 1 });
  assert.deepEqual(
    store.list(0).map((s) => [s.name, s.kind]),
    [
      ['a', 'color'],
      ['a', 'depth'],
    ],
  );
});

test('bad frames and sidecars under any number of names take no stream slot', async () => {
  const { log, warnings } = capture();
  const store = new CameraStore('r1', LIMITS, log);
  const jpeg = await solidImage('jpeg', 8, 6);
  for (let i = 0; i < 20; i++) {
    store.accept(`junk${i}`, 'color', meta(i), jpeg.subarray(0, 50), 0);
    store.accept(`big${i}`, 'color', meta(i), Buffer.alloc(LIMITS.maxFrameBytes + 1, 0xff), 0);
    store.accept(`png${i}`, 'depth', { ...meta(i), kind: 'depth' }, jpeg, 0);
    store.sidecar(`side${i}`, 'color', meta(i));
  }
  assert.deepEqual(store.list(0), []);
  assert.deepEqual(store.unattributed, { corrupt: 20, oversize: 20, depth_format: 20 });
  assert.equal(warnings.length, 3, 'logged once per reason');
  assert.equal(warnings[0]!.camera, 'junk0');
  // The real cameras still get their streams, a sidecar still pairs with its image.
  assert.equal(store.accept('wrist', 'color', meta(1), jpeg, 1), null);
  store.sidecar('front', 'color', meta(2));
  assert.deepEqual(store.takeSidecar('front', 'color'), meta(2));
  assert.equal(store.accept('front', 'color', meta(2), jpeg, 1), null);
  assert.deepEqual(
    store.list(1).map((s) => s.name),
    ['wrist', 'front'],
  );
  assert.equal(store.takeSidecar('side0', 'color'), null, 'only the newest max_streams sidecars wait');
});

test(`a stream without a good frame for ${IDLE_STREAM_S} s gives its slot to a new one`, async () => {
  const { log } = capture();
  const store = new CameraStore('r1', LIMITS, log);
  const jpeg = await solidImage('jpeg', 8, 6);
  store.accept('a', 'color', meta(0), jpeg, 0);
  store.accept('b', 'color', meta(0), jpeg, 0);
  store.accept('a', 'color', meta(1), jpeg, 30);
  assert.equal(store.accept('c', 'color', meta(0), jpeg, IDLE_STREAM_S)?.code, 'too_many_streams');
  assert.equal(store.accept('c', 'color', meta(1), jpeg, IDLE_STREAM_S + 1), null);
  assert.deepEqual(
    store.list(IDLE_STREAM_S + 1).map((s) => s.name),
    ['a', 'c'],
  );
  assert.equal(store.frame('b', 'color'), undefined);
});

test('rate: 1 / the moving average of intervals, lower while a gap lasts; age from the daemon clock', async () => {
  const store = new CameraStore('r1', LIMITS, capture().log);
  const jpeg = await solidImage('jpeg', 8, 6);
  for (let i = 0; i <= 10; i++) store.accept('wrist', 'color', meta(i), jpeg, i * 0.1);
  const at = (now: number) => store.status(now).wrist!;
  assert.ok(Math.abs(at(1.0).rate_hz! - 10) < 1e-9);
  assert.equal(at(1.05).age_ms, 50);
  assert.ok(Math.abs(at(1.5).rate_hz! - 2) < 1e-9);
});
