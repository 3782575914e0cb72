// GET …/cameras/{camera}/latest: the frame metadata travels in a header, which must hold only
// printable ASCII and stay small, whatever text or vendor fields the controller put in it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IncomingMessage, ServerResponse, type OutgoingHttpHeaders } from 'node:http';
import { Socket } from 'node:net';
import type { Logger } from '../../../daemon/log.js';
import { MAX_META_HEADER, registerCameraRoutes } from '../../../daemon/api/camera-routes.js';
import { HttpRoutes, type RouteContext } from '../../../daemon/api/routes.js';
import { CameraStore } from '../../../daemon/robots/camera-store.js';
import type { RobotLink } from '../../../daemon/robots/link-service.js';
import { validateCameraMeta } from '../../../robot/link/camera-protocol.js';
import { solidImage } from '../../helpers/images.js';

const log = { warn: () => undefined } as unknown as Logger;

/** Stores one frame with `meta` and asks the route for it; the headers are those Node accepted. */
async function latest(meta: Record<string, unknown>): Promise<OutgoingHttpHeaders> {
  const m = validateCameraMeta({ v: 1, seq: 7, time: 1, encoding: 'jpeg', width: 8, height: 6, ...meta });
  assert.ok(m.ok, m.ok ? '' : m.message);
  const store = new CameraStore('r1', { maxFrameBytes: 1e6, ringFrames: 2, ringBytes: 1e6, maxStreams: 4 }, log);
  assert.equal(store.accept('wrist', 'color', m.value, await solidImage('jpeg', 8, 6), 1), null);
  const routes = new HttpRoutes();
  registerCameraRoutes(routes, { robot: () => ({ cameras: store }), now: () => 1.5 } as unknown as RobotLink);
  const match = routes.match('GET', '/v1/robots/r1/cameras/wrist/latest');
  assert.ok('route' in match);
  const req = new IncomingMessage(new Socket());
  const res = new ServerResponse(req);
  let headers: OutgoingHttpHeaders = {};
  const writeHead = res.writeHead.bind(res);
  res.writeHead = ((status: number, h: OutgoingHttpHeaders) => {
    headers = h;
    return writeHead(status, h); // Node's own checks (ERR_INVALID_CHAR) run here
  }) as typeof res.writeHead;
  const url = new URL('http://x/v1/robots/r1/cameras/wrist/latest');
  await match.route.handler(req, res, { url, params: match.params } as unknown as RouteContext);
  assert.equal(res.statusCode, 200);
  return headers;
}

test('non-Latin-1 text in the metadata is escaped: the header is printable ASCII and the same JSON', async () => {
  const meta = {
    extrinsics: { frame: 'cam→base', pose: [0, 0, 1, 0, 0, 0, 1] },
    x_note: 'température 🌡 \u007f',
  };
  const h = await latest(meta);
  const value = String(h['x-camera-meta']);
  assert.match(value, /^[\x20-\x7e]+$/);
  assert.deepEqual(JSON.parse(value), { v: 1, seq: 7, time: 1, encoding: 'jpeg', width: 8, height: 6, ...meta });
  assert.equal(h['x-camera-meta-truncated'], undefined);
  assert.equal(h['x-camera-age-s'], '0.500');
});

test('metadata over the header bound goes without its x_ fields, and says so', async () => {
  const h = await latest({
    intrinsics: { fx: 5, fy: 5, cx: 4, cy: 3, x_model: 'pinhole' },
    x_small: 1,
    x_blob: 'é'.repeat(10_000),
  });
  const value = String(h['x-camera-meta']);
  assert.ok(value.length <= MAX_META_HEADER, `${value.length} bytes`);
  assert.deepEqual(JSON.parse(value), {
    v: 1,
    seq: 7,
    time: 1,
    encoding: 'jpeg',
    width: 8,
    height: 6,
    intrinsics: { fx: 5, fy: 5, cx: 4, cy: 3 },
  });
  assert.equal(h['x-camera-meta-truncated'], 'true');
});
