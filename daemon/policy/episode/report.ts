// An episode's report from its recorded events: decisions, time, tokens, outcomes by kind and
// the failures (malformed or invalid calls, failed tools, rejected checks, the end).
import type { EpisodeEvent } from './types.js';

export interface EpisodeReport {
  id: string;
  robot: string | null;
  instruction: string | null;
  provider: string | null;
  check: string | null;
  state: string;
  reason: string | null;
  decisions: number;
  wall_s: number;
  tokens: { prompt: number; completion: number };
  /** tool → status → count; `(none)` for replies that were no valid call. */
  outcomes: Record<string, Record<string, number>>;
  checks: { decision: number; complete: boolean; reason: string }[];
  failures: { decision: number; tool: string | null; kind: string; message: string }[];
}

/** `meta`: the record's episode.json, whose end stands where no `finished` event was recorded (an
 *  episode the daemon stopped in, marked `interrupted` at its next start). */
export function episodeReport(events: readonly EpisodeEvent[], meta: Record<string, unknown> = {}): EpisodeReport {
  const started = events.find((e) => e.type === 'started');
  const finished = events.findLast((e) => e.type === 'finished');
  const last = events.findLast((e) => e.type === 'decision');
  const used = (finished?.used ?? last?.used ?? {}) as Partial<Record<string, number>>;
  const r: EpisodeReport = {
    id: events[0]?.episode ?? '',
    robot: (started?.robot as string) ?? null,
    instruction: (started?.instruction as string) ?? null,
    provider: (started?.provider as string) ?? null,
    check: (started?.check as string) ?? null,
    state: (finished?.state as string) ?? (meta.state as string) ?? 'running (no end recorded)',
    reason: (finished?.reason as string) ?? (meta.reason as string) ?? null,
    decisions: used.decisions ?? 0,
    wall_s: used.wall_s ?? events.at(-1)?.t ?? 0,
    tokens: { prompt: used.prompt_tokens ?? 0, completion: used.completion_tokens ?? 0 },
    outcomes: {},
    checks: [],
    failures: [],
  };
  const tally = (tool: string | null, status: string) => {
    const key = tool ?? '(none)';
    const t = r.outcomes[key] ?? {};
    t[status] = (t[status] ?? 0) + 1;
    r.outcomes[key] = t;
  };
  for (const e of events) {
    const decision = (e.decision as number) ?? 0;
    const tool = (e.tool as string | null) ?? null;
    if (e.type === 'request' && e.error !== undefined) {
      tally(tool, 'rejected');
      r.failures.push({ decision, tool, kind: tool === null ? 'malformed' : 'invalid', message: e.error as string });
    } else if (e.type === 'outcome') {
      tally(tool, e.status as string);
      if (e.status !== 'ok')
        r.failures.push({ decision, tool, kind: e.status as string, message: e.message as string });
    } else if (e.type === 'check') {
      tally('done', e.complete ? 'confirmed' : 'rejected');
      r.checks.push({ decision, complete: e.complete as boolean, reason: e.reason as string });
      if (!e.complete) r.failures.push({ decision, tool: 'done', kind: 'check_rejected', message: e.reason as string });
    } else if (e.type === 'request' && tool === 'give_up') tally('give_up', 'ok');
  }
  if (r.state === 'failed' || r.state === 'interrupted')
    r.failures.push({ decision: r.decisions, tool: null, kind: `episode_${r.state}`, message: r.reason ?? '' });
  return r;
}

/** The report as lines for a terminal. */
export function reportText(r: EpisodeReport): string {
  const lines = [
    `episode ${r.id}: ${r.state}${r.reason ? ` (${r.reason})` : ''}`,
    `robot ${r.robot ?? '?'}, provider ${r.provider ?? '?'}, check ${r.check ?? '?'}`,
    `task: ${r.instruction ?? '?'}`,
    `decisions ${r.decisions}, wall time ${r.wall_s.toFixed(1)} s, tokens ${r.tokens.prompt} prompt + ${r.tokens.completion} completion`,
    'outcomes:',
    ...Object.entries(r.outcomes).map(
      ([tool, s]) =>
        `  ${tool}: ${Object.entries(s)
          .map(([k, n]) => `${k} ×${n}`)
          .join(', ')}`,
    ),
  ];
  if (r.failures.length) {
    lines.push('failures:');
    for (const f of r.failures) lines.push(`  decision ${f.decision} ${f.tool ?? '(no call)'} ${f.kind}: ${f.message}`);
  }
  return `${lines.join('\n')}\n`;
}
