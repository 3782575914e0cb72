// GET /v1/robots/{robot}/cameras/{camera}/latest[?kind=depth]: the latest stored frame of a
// camera stream as the image itself (its content type), its metadata in `x-camera-meta`.
import type { CameraMeta } from '../../robot/link/camera-protocol.js';
import type { RobotLink } from '../robots/link-service.js';
import { HttpError } from './http.js';
import type { HttpRoutes } from './routes.js';

/** Longest `x-camera-meta` value: clients and proxies refuse large headers (often 8–16 KiB in all). */
export const MAX_META_HEADER = 8 * 1024;

/**
 * Frame metadata as a header value: JSON with every character outside printable ASCII escaped
 * (header values are Latin-1 at most), without its `x_` fields when it would exceed MAX_META_HEADER.
 */
export function metaHeader(meta: CameraMeta): { value: string; truncated: boolean } {
  const full = asciiJson(meta);
  if (full.length <= MAX_META_HEADER) return { value: full, truncated: false };
  return { value: asciiJson(meta, (k, v) => (k.startsWith('x_') ? undefined : v)), truncated: true };
}

function asciiJson(v: unknown, replacer?: (key: string, value: unknown) => unknown): string {
  // Outside JSON strings everything is ASCII already, so the escapes keep it valid JSON.
  return JSON.stringify(v, replacer).replace(
    /[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

export function registerCameraRoutes(routes: HttpRoutes, link: RobotLink): void {
  routes.add({
    method: 'GET',
    path: '/v1/robots/:robot/cameras/:camera/latest',
    handler: (_req, res, { params, url }) => {
      const r = link.robot(params.robot!);
      if (!r) throw new HttpError(404, `robot: is not a served robot, got ${JSON.stringify(params.robot)}`);
      const kind = url.searchParams.get('kind') ?? 'color';
      if (kind !== 'color' && kind !== 'depth')
        throw new HttpError(400, `kind: must be "color" or "depth", got ${JSON.stringify(kind)}`, undefined, 'kind');
      const f = r.cameras.frame(params.camera!, kind);
      if (!f)
        throw new HttpError(
          404,
          `camera: has no stored ${kind} frame (streams with frames: ${r.cameras.inventory()}), got ${JSON.stringify(params.camera)}`,
        );
      const meta = metaHeader(f.meta);
      res.writeHead(200, {
        'content-type': f.contentType,
        'content-length': f.image.length,
        'cache-control': 'no-store',
        'x-camera-meta': meta.value,
        ...(meta.truncated ? { 'x-camera-meta-truncated': 'true' } : {}),
        'x-camera-age-s': (link.now() - f.receivedAt).toFixed(3),
      });
      res.end(f.image);
    },
  });
}
