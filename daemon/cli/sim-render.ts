// `brainstem sim render`: one still image (and optionally its depth image) of a scene from one of
// its cameras, with the arms at home or at given joints (robot/sim/render/).
import { writeFileSync } from 'node:fs';
import { extname } from 'node:path';
import type { Command } from 'commander';
import { formatIssues } from '../../robot/common/validation/issue.js';
import { encodeDepth, encodeRgb } from '../../robot/sim/render/encode.js';
import { Rasterizer } from '../../robot/sim/render/rasterizer.js';
import { renderCamera, type ArmView } from '../../robot/sim/render/scene-primitives.js';
import { homeArms, startStates } from '../../robot/sim/render/scene-start.js';
import { loadScene } from '../../robot/sim/scene/scene-config.js';
import { intOption } from './bench-common.js';
import { CliError } from './exit.js';
import { group, type CommandRegistrar } from './group.js';

interface Flags {
  scene: string;
  camera: string;
  out: string;
  depth?: string;
  joints: string[];
  gripper: string[];
  seed: string;
  quality?: string;
  supersample?: boolean;
}

/** `[arm=]v1,v2,...` → the arm it names (the only arm when unnamed) and the numbers. */
function armValues(flag: string, spec: string, arms: ArmView[]): { arm: ArmView; values: number[] } {
  const eq = spec.indexOf('=');
  const name = eq < 0 ? null : spec.slice(0, eq);
  const names = arms.map((a) => a.model.name).join(', ');
  if (name === null && arms.length !== 1) throw new CliError(`${flag} must name an arm (${names}) as arm=...`, 2);
  const arm = name === null ? arms[0] : arms.find((a) => a.model.name === name);
  if (!arm) throw new CliError(`${flag}: no arm "${name}" in this scene (arms: ${names})`, 2);
  const text = spec.slice(eq + 1);
  const values = text.split(',').map(Number);
  if (text.trim() === '' || values.some((v) => !Number.isFinite(v)))
    throw new CliError(`${flag} must be comma-separated numbers (got "${spec}")`, 2);
  return { arm, values };
}

function applyArmFlags(flags: Flags, arms: ArmView[]): void {
  for (const spec of flags.joints) {
    const { arm, values } = armValues('--joints', spec, arms);
    if (values.length !== arm.model.chain.dof)
      throw new CliError(
        `--joints: arm "${arm.model.name}" has ${arm.model.chain.dof} joints (got ${values.length})`,
        2,
      );
    arm.q = values;
  }
  for (const spec of flags.gripper) {
    const { arm, values } = armValues('--gripper', spec, arms);
    if (values.length !== 1 || values[0] < 0 || values[0] > 1)
      throw new CliError(`--gripper must be one number in [0, 1] (got "${spec}")`, 2);
    arm.gripper = values[0];
  }
}

const repeat = (v: string, acc: string[]) => [...acc, v];

export const registerSimRender: CommandRegistrar = (program: Command) => {
  // `sim`'s own options stop at the subcommand, so `sim render --seed` reaches render.
  group(program, 'sim')
    .enablePositionalOptions()
    .command('render')
    .description('render one still image of a scene from one of its cameras (arms at home unless --joints)')
    .requiredOption('--scene <name|file>', 'scene: a name under configs/scenes/ or a YAML file')
    .requiredOption('--camera <name>', "one of the scene's cameras")
    .requiredOption('--out <file>', 'image file: .png, or .jpg/.jpeg')
    .option('--depth <file>', 'also write the depth image: 16-bit greyscale PNG in millimetres')
    .option('--joints <[arm=]q,...>', 'joint positions of an arm (rad), repeatable; default: home', repeat, [])
    .option('--gripper <[arm=]g>', 'gripper opening of an arm, 0 closed … 1 open, repeatable; default: 1', repeat, [])
    .option('--seed <n>', "seed of the scene's pose noise, as brainstem sim --seed", '1')
    .option('--quality <q>', 'JPEG quality 1–100', '85')
    .option('--supersample', '2×2 supersampling (antialiased edges)')
    .action(async (flags: Flags) => {
      const ext = extname(flags.out).toLowerCase();
      const format = ext === '.png' ? 'png' : ext === '.jpg' || ext === '.jpeg' ? 'jpeg' : null;
      if (!format) throw new CliError(`--out must end in .png, .jpg or .jpeg (got "${flags.out}")`, 2);
      if (flags.depth !== undefined && extname(flags.depth).toLowerCase() !== '.png')
        throw new CliError(`--depth must end in .png (got "${flags.depth}")`, 2);
      const quality = intOption('quality', flags.quality ?? '85', 1, 100);
      const seed = intOption('seed', flags.seed, 0, 2 ** 32 - 1);
      const loaded = loadScene(flags.scene);
      if (!loaded.ok) throw new CliError(formatIssues(loaded.issues), 2);
      const scene = loaded.value;
      const camera = scene.cameras.find((c) => c.name === flags.camera);
      if (!camera)
        throw new CliError(
          `--camera: scene "${scene.name}" has no camera "${flags.camera}" (cameras: ${scene.cameras.map((c) => c.name).join(', ') || 'none'})`,
          2,
        );
      let arms: ArmView[];
      try {
        arms = homeArms(scene);
      } catch (err) {
        throw new CliError((err as Error).message, 2);
      }
      applyArmFlags(flags, arms);
      const frame = renderCamera(new Rasterizer(), scene, camera, startStates(scene, seed), arms, {
        depth: flags.depth !== undefined,
        supersample: flags.supersample === true,
      });
      const image = await encodeRgb(frame, { format, quality });
      try {
        writeFileSync(flags.out, image);
        if (flags.depth !== undefined) writeFileSync(flags.depth, await encodeDepth(frame));
      } catch (err) {
        throw new CliError(`cannot write: ${(err as Error).message}`, 1);
      }
      process.stdout.write(
        `${flags.out}: ${frame.width}×${frame.height} ${format}, ${image.length} bytes (scene ${scene.name}, camera ${camera.name})\n`,
      );
    });
};
