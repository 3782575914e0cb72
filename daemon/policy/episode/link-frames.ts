// What episodes read of the daemon's robot link: camera frames (each robot's colour streams and
// their latest good frame; depth is not shown to the model but answers locate_point) and a simulator's ground truth.
import type { RobotLink } from '../../robots/link-service.js';
import type { Frame, FrameSource, SceneTruth } from './types.js';

/** How long a scene check waits for a sim/scene sampled after the latest state (sent at least once a second). */
export const SCENE_FRESH_TIMEOUT_S = 3;
const SCENE_POLL_MS = 50;

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
    depth: (robot, camera) => {
      const f = link.robot(robot)?.cameras.frame(camera, 'depth');
      return f && { meta: f.meta, png: new Uint8Array(f.image), time: f.receivedAt };
    },
  };
}

/**
 * The latest sim/scene predicates of a robot, once the simulator has sent one sampled no earlier
 * than the robot's state at the time of asking (so a claim is judged on the scene after the last
 * motion); undefined when the robot has no simulated scene, a problem when none arrives in time.
 */
export function linkScene(link: RobotLink, timeoutS = SCENE_FRESH_TIMEOUT_S): SceneTruth {
  return {
    predicates: async (robot) => {
      const r = link.robot(robot);
      if (!r?.simScene) return undefined;
      const since = r.session.latest?.time ?? -Infinity;
      const until = link.now() + timeoutS;
      for (;;) {
        const s = r.simScene;
        if (s && s.msg.time >= since) return { predicates: { ...s.msg.predicates }, tasks: { ...s.msg.tasks } };
        if (link.now() >= until)
          return {
            predicates: {},
            problem: `the simulator sent no scene newer than the robot's last state within ${timeoutS} s`,
          };
        await new Promise((resolve) => setTimeout(resolve, SCENE_POLL_MS));
      }
    },
  };
}
