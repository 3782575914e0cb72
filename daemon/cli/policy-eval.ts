// `brainstem policy eval --scene S --task T --provider P --runs N --seed K`: N seeded episodes of
// one scene task in a simulated workcell this command runs itself (daemon/policy/eval.ts); a
// table, or JSON with --json.
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { formatIssue } from '../../robot/common/validation/issue.js';
import { loadScene } from '../../robot/sim/scene/scene-config.js';
import { loadConfig } from '../config/load.js';
import { evalLayer, evalTable, runEval } from '../policy/eval.js';
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
      const seed = Number(o.seed);
      if (!Number.isInteger(seed) || seed < 0)
        throw new CliError(`--seed: must be an integer ≥ 0, got ${JSON.stringify(o.seed)}`, 2);
      const isPath = o.scene.includes('/') || o.scene.endsWith('.yaml');
      const sceneArg = isPath ? resolve(o.scene) : o.scene;
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
      const config = loadConfig({ file: o.config, overrides: [evalLayer(scene.value.robot, base)] });
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
