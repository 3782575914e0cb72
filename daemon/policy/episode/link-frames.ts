// The episode's FrameSource over the daemon's camera stores: each robot's colour streams and
// their latest good frame as it arrived (depth streams are not shown to the model).
import type { RobotLink } from '../../robots/link-service.js';
import type { Frame, FrameSource } from './types.js';

export function linkFrames(link: RobotLink): FrameSource {
  const colour = (robot: string) => {
    const r = link.robot(robot);
    if (!r) return [];
    return r.cameras
      .list(link.now())
      .filter((s) => s.kind === 'color' && s.meta !== null)
      .map((s) => s.name as string);
  };
  return {
    cameras: colour,
    latest: (robot) =>
      colour(robot).flatMap((camera): Frame[] => {
        const f = link.robot(robot)!.cameras.frame(camera, 'color');
        if (!f) return [];
        const { width, height } = f.meta;
        return [{ camera, mime: f.contentType, bytes: new Uint8Array(f.image), width, height, time: f.receivedAt }];
      }),
  };
}
