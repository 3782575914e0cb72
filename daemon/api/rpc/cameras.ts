// robots.cameras and robots.frame: the camera streams a robot's controller sends, and one stored
// frame as a data URL in the JSON result or as a binary WebSocket message paired by `binary_id`.
import { encodeBinary } from '../../../robot/link/camera-protocol.js';
import { int, obj, oneOf, str } from '../../../robot/common/validation/builders.js';
import { CAMERA_NAME_PATTERN } from '../../../robot/link/protocol-schemas.js';
import type { RobotLink } from '../../robots/link-service.js';
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';
import { robotParam, servedRobot } from './robots.js';

const CAMERA_NAME = new RegExp(CAMERA_NAME_PATTERN);

export function registerCameraMethods(rpc: RpcRegistry, link: RobotLink): void {
  rpc.register(
    'robots.cameras',
    obj({ robot: robotParam }),
    ({ robot }) => {
      const store = servedRobot(link, robot).cameras;
      return { robot, cameras: store.list(link.now()), dropped_unattributed: { ...store.unattributed } };
    },
    'camera streams of a robot: latest metadata, age_s, rate_hz, received and dropped counts by reason',
  );

  let nextBinary = 1;
  rpc.register(
    'robots.frame',
    obj({
      robot: robotParam,
      camera: str({
        nonEmpty: true,
        doc: 'camera name (robots.cameras)',
        // A stream name such as front/depth is the camera front with kind depth.
        rule: (c) =>
          CAMERA_NAME.test(c)
            ? undefined
            : c.endsWith('/depth') && CAMERA_NAME.test(c.slice(0, -6))
              ? `must be a camera name: for the depth stream give camera "${c.slice(0, -6)}" and kind "depth"`
              : `must be a camera name (${CAMERA_NAME_PATTERN})`,
      }),
      kind: oneOf(['color', 'depth'], { default: 'color', doc: 'the colour or the depth stream' }),
      format: oneOf(['data_url', 'binary'], {
        default: 'data_url',
        doc: 'data_url: the image in the result; binary: a binary WebSocket message sent before the result',
      }),
      index: int({ min: 0, max: 10_000, default: 0, doc: '0 = the latest frame, 1 = the one before, …' }),
    }),
    ({ robot, camera, kind, format, index }, ctx) => {
      const r = servedRobot(link, robot);
      const f = r.cameras.frame(camera, kind, index);
      if (!f)
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: camera: has no stored ${kind} frame at index ${index} (streams with frames: ${r.cameras.inventory()}), got ${JSON.stringify(camera)}`,
          { field: 'camera', rule: 'must name a camera stream with a frame at index' },
        );
      const result = {
        robot,
        camera,
        kind,
        index,
        meta: f.meta,
        content_type: f.contentType,
        bytes: f.image.length,
        age_s: link.now() - f.receivedAt,
      };
      if (format === 'data_url')
        return { ...result, data_url: `data:${f.contentType};base64,${f.image.toString('base64')}` };
      const binaryId = `frame-${nextBinary++}`;
      ctx.sendBinary(encodeBinary({ binary_id: binaryId, ...result }, f.image));
      return { ...result, binary_id: binaryId };
    },
    'one stored camera frame (latest or index back): as a data URL, or as a binary WebSocket message (4-byte length, JSON header with binary_id, image) sent just before the result',
  );
}
