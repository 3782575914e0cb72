// GET /v1/robots/{robot}/cameras/{camera}/latest[?kind=depth]: the latest stored frame of a
// camera stream as the image itself (its content type), its metadata in `x-camera-meta`.
import type { RobotLink } from '../robots/link-service.js';
import { HttpError } from './http.js';
import type { HttpRoutes } from './routes.js';

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
      res.writeHead(200, {
        'content-type': f.contentType,
        'content-length': f.image.length,
        'cache-control': 'no-store',
        'x-camera-meta': JSON.stringify(f.meta),
        'x-camera-age-s': (link.now() - f.receivedAt).toFixed(3),
      });
      res.end(f.image);
    },
  });
}
