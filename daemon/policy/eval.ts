// `brainstem policy eval`: N seeded episodes of one scene task in a simulated workcell that this
// process runs itself (workcell.ts: per run a `brainstem sim --scene S --seed K+i` child), each
// checked by the task's scene check; one row per run and the aggregate. Episodes are recorded
// under the config's data_dir like any other.
import type { SceneDescription } from '../../robot/sim/scene/types.js';
import type { Config } from '../config/schema.js';
import { sceneVerdict } from './episode/checks.js';
import type { ProviderParams } from './episode/provider-spec.js';
import type { BudgetUsed, EpisodeEvent, FinalState } from './episode/types.js';
import { FINAL_STATES } from './episode/types.js';
import { startWorkcell, withSimulator, WORKCELL_ROBOT } from './workcell.js';

type Workcell = Awaited<ReturnType<typeof startWorkcell>>;

export interface EvalRequest {
  /** The scene as `brainstem sim --scene` takes it: a name or a file path. */
  sceneArg: string;
  scene: SceneDescription;
  task: string;
  provider: ProviderParams;
  runs: number;
  seed: number;
  budget: { decisions?: number; wall_s?: number };
  /** Each run as it ends (progress on a terminal). */
  onRun?: (run: EvalRun) => void;
  signal?: AbortSignal;
}

export interface EvalRun extends BudgetUsed {
  run: number;
  seed: number;
  episode: string;
  outcome: FinalState;
  reason: string;
  /** The task's predicates all held when the episode ended (whatever the model claimed). */
  success: boolean;
  /** The scene's predicates that held then. */
  held: string[];
}

export interface EvalResult {
  scene: string;
  task: string;
  instruction: string;
  robot: string;
  provider: string;
  seed: number;
  runs: EvalRun[];
  aggregate: {
    runs: number;
    successes: number;
    success_rate: number;
    outcomes: Record<FinalState, number>;
    mean: BudgetUsed;
  };
}

export async function runEval(config: Config, req: EvalRequest): Promise<EvalResult> {
  const task = req.scene.tasks.find((t) => t.name === req.task);
  if (!task)
    throw new Error(
      `--task: is not a task of scene ${req.scene.name} (tasks: ${req.scene.tasks.map((t) => t.name).join(', ') || 'none'}), got ${JSON.stringify(req.task)}`,
    );
  const w = await startWorkcell(config);
  const runs: EvalRun[] = [];
  try {
    for (let i = 0; i < req.runs && !req.signal?.aborted; i++) {
      const run = await runOne(w, req, task.instruction, i);
      runs.push(run);
      req.onRun?.(run);
    }
  } finally {
    await w.parts.daemon.stop();
  }
  return {
    scene: req.scene.name,
    task: task.name,
    instruction: task.instruction,
    robot: req.scene.robot,
    provider: req.provider.kind,
    seed: req.seed,
    runs,
    aggregate: aggregate(runs),
  };
}

async function runOne(w: Workcell, req: EvalRequest, instruction: string, i: number): Promise<EvalRun> {
  const seed = req.seed + i;
  const { policy } = w.parts;
  const cameras = req.scene.cameras.filter((c) => c.rate > 0).map((c) => c.name);
  return withSimulator(w, { scene: req.sceneArg, seed, cameras }, async () => {
    let finish: (e: EpisodeEvent) => void = () => undefined;
    const finished = new Promise<EpisodeEvent>((resolve) => (finish = resolve));
    const episode = await policy.startEpisode(
      {
        robot: WORKCELL_ROBOT,
        instruction,
        provider: req.provider,
        check: { kind: 'scene', task: req.task },
        budget: req.budget,
      },
      (e) => e.type === 'finished' && finish(e),
    );
    const stop = () => policy.stopIfRunning(episode, 'operator');
    req.signal?.addEventListener('abort', stop);
    if (req.signal?.aborted) stop(); // aborted while the episode started: the listener came too late
    const end = await finished.finally(() => req.signal?.removeEventListener('abort', stop));
    const verdict = await sceneVerdict({ task: req.task }, policy.scene, WORKCELL_ROBOT);
    return {
      run: i + 1,
      seed,
      episode,
      outcome: end.state as FinalState,
      reason: end.reason as string,
      success: verdict.complete,
      held: verdict.held ?? [],
      ...(end.used as BudgetUsed),
    };
  });
}

function aggregate(runs: EvalRun[]): EvalResult['aggregate'] {
  const n = runs.length;
  const mean = (k: keyof BudgetUsed) => (n ? runs.reduce((s, r) => s + (r[k] ?? 0), 0) / n : 0);
  const successes = runs.filter((r) => r.success).length;
  return {
    runs: n,
    successes,
    success_rate: n ? successes / n : 0,
    outcomes: Object.fromEntries(FINAL_STATES.map((s) => [s, runs.filter((r) => r.outcome === s).length])) as Record<
      FinalState,
      number
    >,
    mean: {
      decisions: mean('decisions'),
      wall_s: mean('wall_s'),
      prompt_tokens: mean('prompt_tokens'),
      completion_tokens: mean('completion_tokens'),
    },
  };
}

/** The table a terminal shows: one row per run, then the aggregate. */
export function evalTable(r: EvalResult): string {
  const head = ['run', 'seed', 'outcome', 'success', 'decisions', 'wall_s', 'prompt_tok', 'completion_tok', 'episode'];
  const rows = r.runs.map((x) => [
    String(x.run),
    String(x.seed),
    x.outcome,
    x.success ? 'yes' : 'no',
    String(x.decisions),
    x.wall_s.toFixed(1),
    String(x.prompt_tokens),
    String(x.completion_tokens),
    x.episode,
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((v, c) => v.padEnd(widths[c]!))
      .join('  ')
      .trimEnd();
  const a = r.aggregate;
  return [
    `scene ${r.scene}, task ${r.task} (${r.instruction}), provider ${r.provider}, seeds ${r.seed}..${r.seed + Math.max(a.runs - 1, 0)}`,
    line(head),
    ...rows.map(line),
    `success ${a.successes}/${a.runs} (${(100 * a.success_rate).toFixed(1)}%); mean decisions ${a.mean.decisions.toFixed(1)}, wall ${a.mean.wall_s.toFixed(1)} s, prompt tokens ${a.mean.prompt_tokens.toFixed(0)}, completion tokens ${a.mean.completion_tokens.toFixed(0)}`,
    '',
  ].join('\n');
}
