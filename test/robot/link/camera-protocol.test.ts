// The camera protocol: topics, metadata validation, MQTT 5 user properties, the binary
// WebSocket layout, and the image checks that run without decoding.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cameraMetaTopic,
  cameraTopic,
  decodeBinary,
  decodeCameraFrame,
  encodeBinary,
  encodeCameraFrame,
  metaFromUserProperties,
  metaToUserProperties,
  parseCameraTopic,
  validateCameraMeta,
  type FrameMeta,
} from '../../../robot/link/camera-protocol.js';
import { checkImage, readImageHeader } from '../../../robot/link/image-header.js';
import { depthPng, solidImage } from '../../helpers/images.js';

const meta: FrameMeta = {
  seq: 7,
  time: 12.5,
  encoding: 'jpeg',
  width: 8,
  height: 6,
  intrinsics: { fx: 500, fy: 500, cx: 3.5, cy: 2.5 },
  extrinsics: { frame: 'world', pose: [0.1, 0, 1, 0, 0, 0, 1] },
};

test('camera topics: image, sidecar and depth stream parse back; other topics do not', () => {
  assert.equal(cameraTopic('b', 'r1', 'wrist'), 'b/robots/r1/cameras/wrist');
  assert.equal(cameraMetaTopic('b', 'r1', 'wrist', 'depth'), 'b/robots/r1/cameras/wrist/depth/meta');
  assert.deepEqual(parseCameraTopic('b', 'b/robots/r1/cameras/wrist'), {
    robot: 'r1',
    camera: 'wrist',
    kind: 'color',
    meta: false,
  });
  assert.deepEqual(parseCameraTopic('b', 'b/robots/r1/cameras/wrist/depth/meta'), {
    robot: 'r1',
    camera: 'wrist',
    kind: 'depth',
    meta: true,
  });
  for (const t of [
    'b/robots/r1/state',
    'b/robots/r1/cameras',
    'b/robots/r1/cameras/w/x',
    'b/robots/r 1/cameras/w',
    'c/robots/r1/cameras/w',
  ])
    assert.equal(parseCameraTopic('b', t), null, t);
});

test('metadata: valid meta passes; errors name the field, the rule and the value', () => {
  assert.ok(validateCameraMeta({ v: 1, ...meta }).ok);
  const bad = validateCameraMeta({ v: 1, ...meta, width: 0, extra: 1 });
  assert.ok(!bad.ok);
  assert.match(bad.message, /meta\.width: .*got 0/);
  assert.match(bad.message, /extra/);
  const depthJpeg = validateCameraMeta({ v: 1, ...meta, kind: 'depth' });
  assert.ok(!depthJpeg.ok);
  assert.match(depthJpeg.message, /meta\.encoding: must be "png" for a depth image/);
  const wrongTopic = validateCameraMeta({ v: 1, ...meta }, 'depth');
  assert.ok(!wrongTopic.ok);
  assert.match(wrongTopic.message, /meta\.kind: must be "depth" on this topic/);
});

test('MQTT 5 user properties carry the metadata as flat text and come back equal', () => {
  const props = metaToUserProperties(meta);
  assert.equal(props.fx, '500');
  assert.equal(props.pose, '[0.1,0,1,0,0,0,1]');
  const back = validateCameraMeta(metaFromUserProperties(props));
  assert.ok(back.ok, back.ok ? '' : back.message);
  assert.deepEqual(back.value, { v: 1, ...meta });
  const bad = validateCameraMeta(metaFromUserProperties({ ...props, seq: 'seven' }));
  assert.ok(!bad.ok);
  assert.match(bad.message, /meta\.seq: .*got "seven"/);
});

test('binary WebSocket frames: 4-byte big-endian header length, JSON header, image', () => {
  const image = Buffer.from([1, 2, 3]);
  const buf = encodeCameraFrame('r1', 'wrist', meta, image);
  const n = buf.readUInt32BE(0);
  assert.deepEqual(JSON.parse(buf.subarray(4, 4 + n).toString()), {
    type: 'camera',
    robot: 'r1',
    camera: 'wrist',
    meta: { v: 1, ...meta },
  });
  const back = decodeCameraFrame(buf);
  assert.ok(back.ok);
  assert.deepEqual(back.value.image, image);
  assert.deepEqual(decodeBinary(encodeBinary({ a: 1 }, Buffer.alloc(0))), {
    ok: true,
    value: { header: { a: 1 }, body: Buffer.alloc(0) },
  });
  const long = Buffer.alloc(8);
  long.writeUInt32BE(1000);
  assert.ok(!decodeBinary(long).ok);
  const noMeta = decodeCameraFrame(encodeBinary({ type: 'camera', robot: 'r1', camera: 'w', meta: { v: 1 } }, image));
  assert.ok(!noMeta.ok);
  assert.match(noMeta.message, /camera frame meta\.seq: is required/);
});

test('image checks: sizes read from JPEG SOF and PNG IHDR; truncation, wrong type and mismatches are named', async () => {
  const jpeg = await solidImage('jpeg', 8, 6);
  const png = await solidImage('png', 5, 4);
  assert.deepEqual(readImageHeader(jpeg), { ok: true, value: { encoding: 'jpeg', width: 8, height: 6 } });
  assert.deepEqual(readImageHeader(png), {
    ok: true,
    value: { encoding: 'png', width: 5, height: 4, bitDepth: 8, colorType: 2 },
  });
  assert.equal(checkImage(jpeg, meta), null);
  assert.equal(checkImage(png, { ...meta, encoding: 'png', width: 5, height: 4 }), null);
  assert.equal(checkImage(png, meta)?.code, 'wrong_encoding');
  assert.equal(checkImage(Buffer.from('hello'), meta)?.code, 'wrong_encoding');
  assert.equal(checkImage(jpeg.subarray(0, jpeg.length - 10), meta)?.code, 'corrupt');
  assert.equal(checkImage(Buffer.concat([jpeg, Buffer.alloc(16)]), meta), null, 'zero padding after EOI is fine');
  assert.equal(
    checkImage(Buffer.concat([jpeg.subarray(0, 3), Buffer.alloc(40, 0x11), Buffer.from([0xff, 0xd9])]), meta)?.code,
    'corrupt',
  );
  assert.equal(
    checkImage(png.subarray(0, png.length - 1), { ...meta, encoding: 'png', width: 5, height: 4 })?.code,
    'corrupt',
  );
  assert.match(checkImage(jpeg, { ...meta, width: 9 })!.detail, /meta says 9×6, the image header says 8×6/);
  assert.equal(checkImage(Buffer.alloc(0), meta)?.code, 'empty');
  const depth = await depthPng(4, 3);
  const depthMeta: FrameMeta = { ...meta, kind: 'depth', encoding: 'png', width: 4, height: 3 };
  assert.equal(checkImage(depth, depthMeta), null);
  assert.equal(checkImage(await solidImage('png', 4, 3), depthMeta)?.code, 'depth_format');
});
