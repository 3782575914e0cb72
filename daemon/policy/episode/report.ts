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

/** A report folded from events one at a time: `policy report` streams a record through it, so a
 *  long one (hundreds of MB of events) is never in memory whole. */
export class ReportTally {
  private first?: EpisodeEvent;
  private last?: EpisodeEvent;
  private started?: EpisodeEvent;
  private finished?: EpisodeEvent;
  private decision?: EpisodeEvent;
  private readonly outcomes: EpisodeReport['outcomes'] = {};
  private readonly checks: EpisodeReport['checks'] = [];
  private readonly failures: EpisodeReport['failures'] = [];

  add(e: EpisodeEvent): void {
    this.first ??= e;
    this.last = e;
    if (e.type === 'started') this.started ??= e;
    if (e.type === 'finished') this.finished = e;
    if (e.type === 'decision') this.decision = e;
    const decision = (e.decision as number) ?? 0;
    const tool = (e.tool as string | null) ?? null;
    if (e.type === 'request' && e.error !== undefined) {
      this.tally(tool, 'rejected');
      this.failures.push({ decision, tool, kind: tool === null ? 'malformed' : 'invalid', message: e.error as string });
    } else if (e.type === 'outcome') {
      this.tally(tool, e.status as string);
      if (e.status !== 'ok')
        this.failures.push({ decision, tool, kind: e.status as string, message: e.message as string });
    } else if (e.type === 'check') {
      this.tally('done', e.complete ? 'confirmed' : 'rejected');
      this.checks.push({ decision, complete: e.complete as boolean, reason: e.reason as string });
      if (!e.complete)
        this.failures.push({ decision, tool: 'done', kind: 'check_rejected', message: e.reason as string });
    } else if (e.type === 'request' && tool === 'give_up') this.tally('give_up', 'ok');
  }

  /** `meta`: the record's episode.json, whose end stands where no `finished` event was recorded
   *  (an episode the daemon stopped in, marked `interrupted` at its next start). */
  report(meta: Record<string, unknown> = {}): EpisodeReport {
    const { started, finished } = this;
    const used = (finished?.used ?? this.decision?.used ?? {}) as Partial<Record<string, number>>;
    const r: EpisodeReport = {
      id: this.first?.episode ?? '',
      robot: (started?.robot as string) ?? null,
      instruction: (started?.instruction as string) ?? null,
      provider: (started?.provider as string) ?? null,
      check: (started?.check as string) ?? null,
      state: (finished?.state as string) ?? (meta.state as string) ?? 'running (no end recorded)',
      reason: (finished?.reason as string) ?? (meta.reason as string) ?? null,
      decisions: used.decisions ?? 0,
      wall_s: used.wall_s ?? this.last?.t ?? 0,
      tokens: { prompt: used.prompt_tokens ?? 0, completion: used.completion_tokens ?? 0 },
      outcomes: structuredClone(this.outcomes),
      checks: [...this.checks],
      failures: [...this.failures],
    };
    if (r.state === 'failed' || r.state === 'interrupted')
      r.failures.push({ decision: r.decisions, tool: null, kind: `episode_${r.state}`, message: r.reason ?? '' });
    return r;
  }

  private tally(tool: string | null, status: string): void {
    const key = tool ?? '(none)';
    const t = this.outcomes[key] ?? {};
    t[status] = (t[status] ?? 0) + 1;
    this.outcomes[key] = t;
  }
}

/** The report of events in memory (see ReportTally.report for `meta`). */
export function episodeReport(events: readonly EpisodeEvent[], meta: Record<string, unknown> = {}): EpisodeReport {
  const tally = new ReportTally();
  for (const e of events) tally.add(e);
  return tally.report(meta);
}

/** The report of events read one at a time (a record's recordEvents). */
export async function streamedReport(
  events: AsyncIterable<EpisodeEvent>,
  meta: Record<string, unknown> = {},
): Promise<EpisodeReport> {
  const tally = new ReportTally();
  for await (const e of events) tally.add(e);
  return tally.report(meta);
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
