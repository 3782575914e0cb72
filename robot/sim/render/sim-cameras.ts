// The simulator's camera node: at each tick of the process's camera loop, renders the scene's
// cameras that are due (their own rates, or one rate for all) from the arms' measured joints and
// the workcell's object poses, and returns the encoded images for the link to publish.
import type { SetupDescription } from '../../description/types.js';
import type { FramesHook } from '../process.js';
import type { SimWorld } from '../scene/world.js';
import { CameraSchedule, captureCamera } from './capture.js';
import { Rasterizer } from './rasterizer.js';
import { armModels, type ArmView } from './scene-primitives.js';

/** How often the process asks (Hz): the fastest camera, or the one rate given. */
export function cameraTickRate(world: SimWorld, rate: number | null): number {
  return rate ?? Math.max(0, ...world.scene.cameras.map((c) => c.rate));
}

/** The frames hook of a workcell; `rate` (Hz) overrides every camera's own rate. */
export function workcellFrames(world: SimWorld, setup: SetupDescription, rate: number | null): FramesHook {
  const rasterizer = new Rasterizer();
  const models = armModels(setup);
  const schedule = new CameraSchedule(world.scene.cameras, rate);
  return async (now, controller) => {
    const due = schedule.due(now);
    if (due.length === 0) return [];
    const positions = new Map(controller.armPositions().map((a) => [a.name, a]));
    const arms: ArmView[] = models.map((model) => ({
      model,
      q: positions.get(model.name)?.q ?? [],
      gripper: positions.get(model.name)?.gripper ?? null,
    }));
    const frames = [];
    for (const camera of due)
      frames.push(...(await captureCamera(rasterizer, world.scene, camera, world.objects, arms)));
    return frames;
  };
}
