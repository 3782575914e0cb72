// A scene as it stands before anything moves, for still images and benchmarks: the objects resting
// at their initial poses (optionally with the scene's seeded pose noise) and every arm at home.
import { Prng } from '../../common/prng.js';
import { formatIssues } from '../../common/validation/issue.js';
import { loadArms, ROBOTS_DIR } from '../../description/loader.js';
import { compose, rotationZ } from '../../math/transform.js';
import { bottomZ } from '../scene/geometry.js';
import type { ObjectState, SceneDescription } from '../scene/types.js';
import { armModels, type ArmView } from './scene-primitives.js';

/**
 * Each object at its initial pose, moved so its bottom is at its rest height; with a seed, first
 * shifted by uniform noise within ± noise.xy in x and y and turned within ± noise.yaw about z.
 */
export function startStates(scene: SceneDescription, seed: number | null = null): ObjectState[] {
  const rng = seed === null ? null : new Prng(seed);
  return scene.objects.map((o) => {
    const pose = Float64Array.from(o.pose);
    if (rng) {
      pose[3] += rng.uniform(-o.noise.xy, o.noise.xy);
      pose[7] += rng.uniform(-o.noise.xy, o.noise.xy);
      const turn = rotationZ(new Float64Array(12), rng.uniform(-o.noise.yaw, o.noise.yaw));
      const [x, y, z] = [pose[3], pose[7], pose[11]];
      compose(pose, turn, pose);
      [pose[3], pose[7], pose[11]] = [x, y, z];
    }
    pose[11] += o.restZ - bottomZ(o.shape, pose);
    return { name: o.name, pose, heldBy: null };
  });
}

/** The scene's arms (its robot or setup) at their home poses, grippers open. */
export function homeArms(scene: SceneDescription, dir: string = ROBOTS_DIR): ArmView[] {
  const r = loadArms(scene.robot, dir);
  if (!r.ok) throw new Error(`scene "${scene.name}": robot "${scene.robot}": ${formatIssues(r.issues)}`);
  const arms = r.value.setup.arms;
  return armModels(r.value.setup).map((model, i) => ({ model, q: [...arms[i].robot.home], gripper: 1 }));
}
