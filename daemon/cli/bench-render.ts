// `brainstem bench render`: ms per camera frame (render and encode apart, p50/p99) for each
// camera of each shipped scene, on one core (sharp limited to one thread).
import type { Command } from 'commander';
import sharp from 'sharp';
import { formatIssues } from '../../robot/common/validation/issue.js';
import { listConfigs } from '../../robot/description/loader.js';
import { loadScene, SCENES_DIR } from '../../robot/sim/scene/scene-config.js';
import { runRenderBench, type RenderBenchRow } from '../bench/render-bench.js';
import { intOption, printBench } from './bench-common.js';
import { CliError } from './exit.js';
import { group, type CommandRegistrar } from './group.js';

/** The frame budget the issue sets: a 10 Hz camera under 15% of a core. */
export const RENDER_TARGET_MS = 15;

interface Options {
  scene: string[];
  frames: string;
  warmup: string;
  resolution: string;
  supersample?: boolean;
  json?: boolean;
}

function resolution(value: string): { width: number; height: number } | null {
  if (value === 'native') return null;
  const m = /^(\d+)x(\d+)$/.exec(value);
  const width = Number(m?.[1]),
    height = Number(m?.[2]);
  if (!m || width < 1 || height < 1 || width > 4096 || height > 4096)
    throw new CliError(`--resolution must be WxH (each 1–4096) or native, got "${value}"`, 2);
  return { width, height };
}

export const registerBenchRender: CommandRegistrar = (program: Command) => {
  group(program, 'bench')
    .command('render')
    .description(
      `ms per camera frame, render and encode apart (p50, p99), for each shipped scene and camera (target ≤ ${RENDER_TARGET_MS} ms render)`,
    )
    .option(
      '--scene <name|file>',
      'only this scene, repeatable (default: every scene in configs/scenes/)',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option('--frames <n>', 'timed frames per camera', '100')
    .option('--warmup <n>', 'untimed frames first', '10')
    .option(
      '--resolution <WxH|native>',
      "image size for every camera (intrinsics scaled), or each camera's own",
      '640x480',
    )
    .option('--supersample', '2×2 supersampling')
    .option('--json', 'print JSON (the default when stdout is not a terminal)')
    .action(async (opts: Options) => {
      const frames = intOption('frames', opts.frames, 1, 100000);
      const warmup = intOption('warmup', opts.warmup, 0, 100000);
      const size = resolution(opts.resolution);
      const names = opts.scene.length ? opts.scene : listConfigs(SCENES_DIR);
      // One core: the renderer runs on the main thread; sharp's thread pool would spread encoding.
      sharp.concurrency(1);
      const clock = (): number => performance.now();
      const cpuClock = (): number => {
        const u = process.cpuUsage();
        return (u.user + u.system) / 1000;
      };
      const rows: RenderBenchRow[] = [];
      for (const name of names) {
        const scene = loadScene(name);
        if (!scene.ok) throw new CliError(formatIssues(scene.issues), 2);
        for (const camera of scene.value.cameras)
          rows.push(
            await runRenderBench(scene.value, camera, {
              frames,
              warmup,
              resolution: size,
              supersample: opts.supersample === true,
              clock,
              cpuClock,
            }),
          );
      }
      const worst = Math.max(0, ...rows.map((r) => r.render_p50_ms));
      printBench(
        {
          resolution: opts.resolution,
          supersample: opts.supersample === true,
          frames,
          target_render_ms: RENDER_TARGET_MS,
          worst_render_p50_ms: worst,
          meets_target: worst <= RENDER_TARGET_MS,
          cameras: rows,
        },
        opts.json,
      );
    });
};
