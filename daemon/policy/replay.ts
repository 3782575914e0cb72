// `brainstem policy replay ID`: re-executes a recorded episode's robot tool calls, in order, on a
// fresh simulator of the same robot (and the scene and seed it ran in, when it ran in one), and
// says per call whether the outcome matches the recorded one (status and reason).
import { episodeRobot } from './episode/service.js';
import type { EpisodeEvent } from './episode/types.js';
import { LOOP_TOOL_NAMES } from './tools.js';
import { startWorkcell, withSimulator, WORKCELL_ROBOT } from './workcell.js';
import type { Config } from '../config/schema.js';

export interface ReplayCall {
  decision: number;
  tool: string;
  arguments: unknown;
  recorded: { status: string; reason: string | null } | null;
  /** null: not replayed (done is the check's, give_up and locate_point the loop's). */
  replayed: { status: string; reason: string | null; message: string } | null;
  match: boolean | null;
}

export interface ReplayResult {
  episode: string;
  robot_config: string;
  scene: string | null;
  seed: number;
  calls: ReplayCall[];
  matched: number;
  differed: number;
  skipped: number;
  /** The scene's predicates at the episode's last check and after the replay (with a scene). */
  predicates: { recorded: Record<string, boolean> | null; replayed: Record<string, boolean> | null };
}

/** What replay reads of the record: episode.json's robot config and simulated scene, and the events. */
export interface ReplaySource {
  id: string;
  meta: { robot_config?: string; sim?: { scene: string; seed: number } };
  events: EpisodeEvent[];
}

/** The events replay reads: a record's others (observations, progress, decisions: most of a long
 *  record's bytes) are never held (readEvents' `keep`). */
export const replayedEvent = (e: EpisodeEvent): boolean =>
  e.type === 'request' || e.type === 'outcome' || e.type === 'check';

/** The tool calls that were executed (requests without an error), with their recorded outcomes.
 *  Outcomes and checks are indexed once by decision and tool: a find per request was quadratic in
 *  a long episode's events. The first outcome of a decision and tool stands, as find gave it. */
export function recordedCalls(events: readonly EpisodeEvent[]): Omit<ReplayCall, 'replayed' | 'match'>[] {
  const outcomes = new Map<string, EpisodeEvent>();
  const checks = new Map<unknown, EpisodeEvent>();
  for (const e of events) {
    const key = JSON.stringify([e.decision, e.tool]);
    if (e.type === 'outcome' && !outcomes.has(key)) outcomes.set(key, e);
    if (e.type === 'check' && !checks.has(e.decision)) checks.set(e.decision, e);
  }
  return events
    .filter((e) => e.type === 'request' && e.error === undefined)
    .map((r) => {
      const o = outcomes.get(JSON.stringify([r.decision, r.tool]));
      // A done has no outcome event: its check says what came of it.
      const c = r.tool === 'done' ? checks.get(r.decision) : undefined;
      const recorded = o
        ? { status: o.status as string, reason: (o.reason as string | undefined) ?? null }
        : c
          ? { status: c.complete ? 'confirmed' : 'rejected', reason: null }
          : null;
      return { decision: r.decision as number, tool: r.tool as string, arguments: r.arguments, recorded };
    });
}

const NOT_REPLAYED: readonly string[] = ['done', ...LOOP_TOOL_NAMES];

/** `config` must serve the record's robot config through workcellLayer. */
export async function replayEpisode(
  config: Config,
  src: ReplaySource,
  sim: { scene: string | null; seed: number; cameras?: readonly string[] },
): Promise<ReplayResult> {
  const w = await startWorkcell(config);
  try {
    return await withSimulator(w, { ...sim, scene: sim.scene ?? undefined }, async (runtime) => {
      const robot = episodeRobot(runtime);
      const calls: ReplayCall[] = [];
      for (const c of recordedCalls(src.events)) {
        if (NOT_REPLAYED.includes(c.tool)) {
          calls.push({ ...c, replayed: null, match: null });
          continue;
        }
        const o = await robot.execute({ name: c.tool, arguments: c.arguments }, () => undefined);
        const replayed = { status: o.status, reason: o.reason ?? null, message: o.message };
        const match = c.recorded !== null && c.recorded.status === o.status && c.recorded.reason === replayed.reason;
        calls.push({ ...c, replayed, match });
      }
      const check = src.events.filter((e) => e.type === 'check' && e.predicates).at(-1);
      const now = sim.scene ? await w.parts.policy.scene.predicates(WORKCELL_ROBOT) : undefined;
      return {
        episode: src.id,
        robot_config: runtime.entry.robot,
        scene: sim.scene,
        seed: sim.seed,
        calls,
        matched: calls.filter((c) => c.match === true).length,
        differed: calls.filter((c) => c.match === false).length,
        skipped: calls.filter((c) => c.match === null).length,
        predicates: {
          recorded: (check?.predicates as Record<string, boolean> | undefined) ?? null,
          replayed: now && !now.problem ? now.predicates : null,
        },
      };
    });
  } finally {
    await w.parts.daemon.stop();
  }
}

/** One line per call and a summary. */
export function replayText(r: ReplayResult): string {
  const status = (s: { status: string; reason: string | null } | null) =>
    s ? `${s.status}${s.reason ? ` (${s.reason})` : ''}` : 'none';
  const lines = r.calls.map((c) =>
    c.match === null
      ? `#${c.decision} ${c.tool}: not replayed (recorded ${status(c.recorded)})`
      : `#${c.decision} ${c.tool}: recorded ${status(c.recorded)}, replayed ${status(c.replayed)}: ${c.match ? 'match' : 'DIFFERS'}`,
  );
  const scene = r.scene ? `scene ${r.scene}, seed ${r.seed}` : 'no scene';
  const p = r.predicates;
  return [
    `replay of ${r.episode} on ${r.robot_config} (${scene})`,
    ...lines,
    `${r.matched} match, ${r.differed} differ, ${r.skipped} not replayed`,
    ...(p.recorded || p.replayed
      ? [`predicates at the last check: ${JSON.stringify(p.recorded)}; after the replay: ${JSON.stringify(p.replayed)}`]
      : []),
    '',
  ].join('\n');
}
