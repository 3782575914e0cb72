// `brainstem bench policy`: a daemon in this process serving a model and a simulated yam runs
// policy episodes with the `local` provider until N decisions are made, and times each decision
// from the events as they are emitted: the model's prefill and decode (with the tokens the prefix
// cache spared), the executor's planning, the motion, and the rest — the daemon's own overhead.
import { createDaemon } from '../compose.js';
import { loadConfig } from '../config/load.js';
import { Logs } from '../log.js';
import type { ProviderParams } from '../policy/episode/provider-spec.js';
import type { EpisodeEvent } from '../policy/episode/types.js';
import type { DecisionTiming, DecisionUsage } from '../policy/providers/types.js';
import type { ToolOutcome } from '../../robot/tools/outcome.js';
import { percentile } from './percentile.js';

export interface PolicyBenchOptions {
  dataDir: string;
  model: string;
  decisions: number;
  threads: number;
  contextLength: number;
  /** policy.window_turns, keep_images and summary_block of the daemon (default: the config's). */
  windowTurns?: number;
  keepImages?: number;
  summaryBlock?: number;
}

/** One decision, times in ms. */
export interface DecisionRow {
  episode: number;
  decision: number;
  tool: string | null;
  status: string | null;
  prompt_tokens: number;
  /** Prompt tokens not in the previous prompt of the episode (all of the first). */
  new_tokens: number;
  prefilled_tokens: number;
  decode_tokens: number;
  /** The prompt's host summary grew (its text after the references changed). */
  compacted: boolean;
  /** From the decision's observation (prompt, model call) to its parsed tool request. */
  time_to_request_ms: number;
  queue_ms: number;
  prefill_ms: number;
  decode_ms: number;
  plan_ms: number;
  /** From the commands' hand-off to the outcome (execution and settling on the controller). */
  motion_ms: number;
  cycle_ms: number;
  /** cycle − queue − prefill − decode − motion (planning included). */
  overhead_ms: number;
  /** Of the overhead: compiling the prompt (history, exact token count). */
  prompt_ms: number;
  /** Of the overhead: the chat service around the engine (template, tokenizing, constraint, parsing). */
  chat_ms: number;
}

/** The fields of episode events read here (docs/policy.md, Events). */
type Ev = EpisodeEvent & {
  state?: string;
  phase?: string;
  decision?: number;
  tool?: string | null;
  error?: string;
  status?: string;
  usage?: DecisionUsage;
  timing?: DecisionTiming;
  summarised_turns?: number;
  prompt_ms?: number;
  outcome?: ToolOutcome;
};

const r2 = (x: number) => Math.round(x * 100) / 100;
const VERDICT_NO = JSON.stringify({
  name: 'verdict',
  arguments: { complete: false, reason: 'benchmark: not checked' },
});
const ROBOT = 'bench';

/** The rows of one episode from its events, each stamped (ms) when it was emitted. */
function rows(episode: number, events: { at: number; e: Ev }[]): DecisionRow[] {
  const out: DecisionRow[] = [];
  // A decision runs from its observation to the next one (the state stays `deciding` after a refused call).
  const starts = events.filter((x) => x.e.type === 'observation');
  const ends = [...starts.slice(1), ...events.filter((x) => x.e.type === 'finished')];
  let previousPrompt = 0;
  let previousSummarised = 0;
  starts.forEach((start, i) => {
    const end = ends[i];
    const within = events.filter((x) => x.at >= start.at && (!end || x.at < end.at));
    const find = (type: string) => within.find((x) => x.e.type === type);
    const d = find('decision')?.e;
    if (!d || !end) return;
    const request = find('request');
    const outcome = find('outcome');
    const sent = within.find((x) => x.e.type === 'progress' && x.e.phase === 'sent');
    const u = d.usage!;
    const t = d.timing!;
    const motion = sent && outcome ? outcome.at - sent.at : 0;
    const cycle = end.at - start.at;
    const model = (t.queueMs ?? 0) + (t.prefillMs ?? 0) + (t.decodeMs ?? 0);
    out.push({
      episode,
      decision: d.decision!,
      tool: request?.e.tool ?? null,
      status: outcome?.e.status ?? (request?.e.error !== undefined ? 'rejected' : null),
      prompt_tokens: u.promptTokens,
      new_tokens: u.promptTokens - previousPrompt,
      prefilled_tokens: u.prefilledTokens ?? u.promptTokens,
      decode_tokens: u.completionTokens,
      compacted: d.summarised_turns! > previousSummarised,
      time_to_request_ms: r2((request?.at ?? start.at) - start.at),
      queue_ms: r2(t.queueMs ?? 0),
      prefill_ms: r2(t.prefillMs ?? 0),
      decode_ms: r2(t.decodeMs ?? 0),
      plan_ms: r2(outcome?.e.outcome?.timing_ms?.plan ?? 0),
      motion_ms: r2(motion),
      cycle_ms: r2(cycle),
      overhead_ms: r2(cycle - model - motion),
      prompt_ms: r2(d.prompt_ms ?? 0),
      chat_ms: r2(t.totalMs - model),
    });
    previousPrompt = u.promptTokens;
    previousSummarised = d.summarised_turns!;
  });
  return out;
}

function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50: r2(percentile(s, 50)), p90: r2(percentile(s, 90)), max: r2(s.at(-1) ?? 0) };
}

export async function runPolicyBench(o: PolicyBenchOptions): Promise<Record<string, unknown>> {
  const config = loadConfig({
    env: {},
    overrides: [
      {
        data_dir: o.dataDir,
        server: { port: 0 },
        mqtt: { embedded: { port: 0 } },
        logging: { level: 'silent' },
        // Staleness and heartbeat limits as the test rig's: a loaded machine may pause a process for a few 100 ms.
        robots: {
          simulate: true,
          serve: [{ id: ROBOT, robot: 'yam', sim: true }],
          stale_ms: 1000,
          heartbeat: { timeout_ms: 1500 },
        },
        models: { bench: { path: o.model, threads: o.threads, context_length: o.contextLength, keep_alive: -1 } },
        policy: {
          ...(o.windowTurns !== undefined ? { window_turns: o.windowTurns } : {}),
          ...(o.keepImages !== undefined ? { keep_images: o.keepImages } : {}),
          ...(o.summaryBlock !== undefined ? { summary_block: o.summaryBlock } : {}),
        },
      },
    ],
  });
  const parts = createDaemon(config, { logs: new Logs(config.logging) });
  await parts.daemon.start();
  try {
    await robotReady(parts, 60_000);
    const all: DecisionRow[] = [];
    const ends: string[] = [];
    for (let episode = 1; all.length < o.decisions; episode++) {
      const events: { at: number; e: Ev }[] = [];
      const left = o.decisions - all.length;
      const id = await parts.policy.startEpisode(
        {
          robot: ROBOT,
          instruction: 'put the red block in the bowl',
          provider: { kind: 'local', model: 'bench' } as ProviderParams,
          budget: { decisions: left },
          // A verifier that never confirms: a done goes back to the model and the history grows on.
          check: {
            kind: 'verifier',
            provider: { kind: 'scripted', lines: Array(left).fill(VERDICT_NO) } as ProviderParams,
          },
        },
        (e) => events.push({ at: performance.now(), e: e as Ev }),
      );
      await parts.policy.episode(id).finished;
      const r = rows(episode, events);
      if (r.length === 0) throw new Error(`episode ${id} made no decision: ${parts.policy.episode(id).reason}`);
      all.push(...r);
      ends.push(`${parts.policy.episode(id).state}: ${parts.policy.episode(id).reason}`);
    }
    // Warm: the session holds the episode's earlier turns and the summary did not change.
    const warm = all.filter((r) => r.decision > 1 && !r.compacted);
    return {
      model: o.model,
      decisions: all.length,
      episodes: ends,
      window_turns: config.policy.window_turns,
      keep_images: config.policy.keep_images,
      summary_block: config.policy.summary_block,
      warm_decisions: warm.length,
      warm_prefill_excess_tokens: stats(warm.map((r) => r.prefilled_tokens - r.new_tokens)),
      overhead_ms: stats(all.map((r) => r.overhead_ms)),
      overhead_ex_plan_ms: stats(all.map((r) => r.overhead_ms - r.plan_ms)),
      prompt_ms: stats(all.map((r) => r.prompt_ms)),
      chat_ms: stats(all.map((r) => r.chat_ms)),
      time_to_request_ms: stats(all.map((r) => r.time_to_request_ms)),
      plan_ms: stats(all.filter((r) => r.plan_ms > 0).map((r) => r.plan_ms)),
      rows: all,
    };
  } finally {
    await parts.daemon.stop();
  }
}

async function robotReady(parts: ReturnType<typeof createDaemon>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const r = parts.robots.robot(ROBOT);
    if (r && !r.session.problem(parts.robots.now())) return;
    if (performance.now() > deadline) throw new Error(`the simulated robot was not ready within ${timeoutMs} ms`);
    await new Promise((res) => setTimeout(res, 50));
  }
}
