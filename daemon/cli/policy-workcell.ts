// The policy commands that run their own simulated workcell (daemon/policy/workcell.ts):
// `brainstem policy eval --scene S --task T --provider P --runs N --seed K` (N seeded episodes of
// one scene task) and `brainstem policy replay ID` (a recorded episode's tool calls again).
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { loadScene } from '../../robot/sim/scene/scene-config.js';
import { loadConfig } from '../config/load.js';
import { readEpisodeMeta, readEvents } from '../policy/episode/records.js';
import { evalTable, runEval } from '../policy/eval.js';
import { replayedEvent, replayEpisode, replayText, type ReplaySource } from '../policy/replay.js';
import { workcellLayer } from '../policy/workcell.js';
import { CliError } from './exit.js';
import { positive, providerOf, withProviderOptions, type ProviderOptions } from './policy-options.js';

interface EvalOptions extends ProviderOptions {
  scene: string;
  task: string;
  runs: string;
  seed: string;
  decisions?: string;
  wallS?: string;
  config?: string;
  json?: boolean;
}

/** A scene argument as `brainstem sim --scene` takes it from another directory: names stay, paths become absolute. */
const sceneArgOf = (s: string) => (s.includes('/') || s.endsWith('.yaml') ? resolve(s) : s);

const seedOf = (v: string): number => {
  const seed = Number(v);
  if (!Number.isInteger(seed) || seed < 0 || seed > 2 ** 32 - 1)
    throw new CliError(`--seed: must be an integer in 0..4294967295, got ${JSON.stringify(v)}`, 2);
  return seed;
};

export function registerPolicyEval(policy: Command): void {
  withProviderOptions(
    policy
      .command('eval')
      .description('run seeded episodes of a scene task in a simulated workcell and report the success rate')
      .requiredOption('--scene <name>', 'scene name (configs/scenes) or scene file path')
      .requiredOption('--task <name>', "the scene's task: its instruction is sent, its predicates are checked"),
  )
    .option('--runs <n>', 'number of episodes', '10')
    .option('--seed <k>', 'seed of the first run (run i uses seed k + i)', '0')
    .option('--decisions <n>', 'decision budget per episode')
    .option('--wall-s <n>', 'wall-time budget per episode in seconds')
    .option('-c, --config <file>', 'config file merged over configs/brainstem.yaml (data_dir, models, policy)')
    .option('--json', 'print the result as JSON')
    .action(async (o: EvalOptions) => {
      const seed = seedOf(o.seed);
      const sceneArg = sceneArgOf(o.scene);
      const scene = loadScene(sceneArg);
      if (!scene.ok) throw new CliError(scene.issues.map((i) => formatIssue(i)).join('\n'), 2);
      if (!scene.value.tasks.some((t) => t.name === o.task))
        throw new CliError(
          `--task: is not a task of scene ${scene.value.name} (tasks: ${scene.value.tasks.map((t) => t.name).join(', ') || 'none'}), got ${JSON.stringify(o.task)}`,
          2,
        );
      const runs = positive('--runs', o.runs)!;
      const provider = providerOf(o);
      const budget = { decisions: positive('--decisions', o.decisions), wall_s: positive('--wall-s', o.wallS) };
      const base = `bs-eval-${randomBytes(3).toString('hex')}`;
      const config = loadConfig({ file: o.config, overrides: [workcellLayer(scene.value.robot, base)] });
      const abort = new AbortController();
      const onSignal = () => abort.abort();
      process.once('SIGINT', onSignal);
      try {
        const result = await runEval(config, {
          sceneArg,
          scene: scene.value,
          task: o.task,
          provider,
          runs,
          seed,
          budget: Object.fromEntries(Object.entries(budget).filter(([, v]) => v !== undefined)),
          signal: abort.signal,
          ...(o.json
            ? {}
            : {
                onRun: (r) =>
                  process.stderr.write(
                    `run ${r.run} (seed ${r.seed}): ${r.outcome}, success ${r.success ? 'yes' : 'no'}\n`,
                  ),
              }),
        });
        process.stdout.write(o.json ? `${JSON.stringify(result, null, 2)}\n` : evalTable(result));
      } finally {
        process.off('SIGINT', onSignal);
      }
    });
}

interface ReplayOptions {
  scene?: string;
  seed?: string;
  robotConfig?: string;
  config?: string;
  json?: boolean;
}

/** Exit code of a replay whose outcomes differ from the record (0: all match). */
export const REPLAY_DIFFERS_EXIT = 7;

export function registerPolicyReplay(policy: Command): void {
  policy
    .command('replay')
    .description("re-execute a recorded episode's tool calls on a simulator and compare the outcomes")
    .argument('<id>', 'episode id (ep-…)')
    .option('--scene <name>', 'scene name or file (default: the scene the episode ran in)')
    .option('--seed <k>', 'scene seed (default: the seed the episode ran with)')
    .option('--robot-config <name>', 'robot or setup config (default: the one the episode ran on)')
    .option('-c, --config <file>', 'config file merged over configs/brainstem.yaml (finds data_dir)')
    .option('--json', 'print the result as JSON')
    .action(async (id: string, o: ReplayOptions) => {
      const dataDir = loadConfig({ file: o.config }).data_dir;
      let src: ReplaySource;
      try {
        const meta = readEpisodeMeta(dataDir, id) as ReplaySource['meta'];
        src = { id, meta, events: await readEvents(dataDir, id, replayedEvent) };
      } catch (err) {
        throw new CliError((err as Error).message, 2);
      }
      const robot = o.robotConfig ?? src.meta.robot_config;
      if (!robot) throw new CliError(`episode ${id} does not record its robot config: give --robot-config`, 2);
      const scene = o.scene ? sceneArgOf(o.scene) : (src.meta.sim?.scene ?? null);
      const seed = o.seed !== undefined ? seedOf(o.seed) : (src.meta.sim?.seed ?? 1);
      const base = `bs-replay-${randomBytes(3).toString('hex')}`;
      const config = loadConfig({ file: o.config, overrides: [workcellLayer(robot, base)] });
      const loaded = scene ? loadScene(scene) : undefined;
      if (loaded && !loaded.ok) throw new CliError(loaded.issues.map((i) => formatIssue(i)).join('\n'), 2);
      const cameras = loaded?.value.cameras.filter((c) => c.rate > 0).map((c) => c.name);
      const r = await replayEpisode(config, src, { scene, seed, ...(cameras ? { cameras } : {}) });
      process.stdout.write(o.json ? `${JSON.stringify(r, null, 2)}\n` : replayText(r));
      if (r.differed > 0) process.exitCode = REPLAY_DIFFERS_EXIT;
    });
}
