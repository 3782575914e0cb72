// The parts of the compiled context: goal images, then per demonstration a header and its
// keyframes in time order, each a JSON record and its image, followed by the thinned action rows
// up to the next keyframe. Also their form as provider content.
import type { ContentPart } from '../providers/types.js';
import type { AnalysedDemonstration } from './demonstration.js';
import { stageOf } from './events.js';
import { encodeImage } from './images.js';
import type { Keyframe } from './keyframes.js';
import { ACTION_COLUMNS, actionRow, round, stateAt } from './records.js';
import type { ContextOptions, ContextPart } from './types.js';

export interface GoalImage {
  path: string;
  label: string;
  /** The input field that named it, for errors. */
  field: string;
}

/** A keyframe of one of a demonstration's videos (by index). */
export interface KeyframeOf {
  video: number;
  kf: Keyframe;
}

const text = (record: unknown): ContextPart => ({ type: 'text', text: JSON.stringify(record) });

export async function goalParts(goals: readonly GoalImage[], o: ContextOptions): Promise<ContextPart[]> {
  if (goals.length === 0) return [];
  const note = 'goal images: how the scene should look when the task is done';
  const parts = [text({ ref: 'goals', count: goals.length, note })];
  for (const [i, g] of goals.entries()) {
    const id = `goal/${i + 1}`;
    parts.push(text({ ref: 'goal', id, label: g.label }));
    const image = await encodeImage(g.path, o.imageMaxSide, o.jpegQuality, g.field);
    parts.push({ type: 'image', id, label: `goal image ${i + 1}: ${g.label}`, mime: 'image/jpeg', ...image });
  }
  return parts;
}

export async function demonstrationParts(
  d: AnalysedDemonstration,
  chosen: readonly KeyframeOf[],
  o: ContextOptions,
): Promise<ContextPart[]> {
  const timeOf = (p: KeyframeOf) => d.videos[p.video]!.frames.times[p.kf.index]!;
  // Views of one moment together, in camera order.
  const picks = [...chosen].sort((a, b) => timeOf(a) - timeOf(b) || a.video - b.video);
  const times = d.videos[0]!.frames.times;
  const header: Record<string, unknown> = {
    ref: 'demonstration',
    name: d.name,
    note: 'a recorded demonstration to learn from, not commands to replay',
    cameras: d.videos.map((v) => v.camera),
    duration_s: round(times[times.length - 1]! - d.t0),
    keyframes: picks.length,
  };
  if (d.actionsFile !== null) header.action_columns = ACTION_COLUMNS;
  const parts = [text(header)];
  let next = 0;
  const rowsBefore = (limit: number) => {
    const rows: unknown[][] = [];
    while (next < d.kept.length && d.kept[next]!.t < limit) rows.push(actionRow(d.kept[next++]!, d.t0));
    if (rows.length > 0) parts.push(text({ ref: 'actions', demo: d.name, rows }));
  };
  rowsBefore(picks.length > 0 ? timeOf(picks[0]!) : Infinity);
  for (const [k, p] of picks.entries()) {
    const v = d.videos[p.video]!;
    const t = timeOf(p);
    const id = `${d.name}/${v.camera}/${p.kf.index}`;
    const stage = stageOf(t, p.kf.reason, d.events);
    const tRel = round(t - d.t0);
    const record: Record<string, unknown> = {
      ref: 'keyframe',
      id,
      demo: d.name,
      camera: v.camera,
      frame: p.kf.index,
      t_s: tRel,
      stage,
    };
    if (d.actionsFile !== null) Object.assign(record, stateAt(d.samples, t, o.alignToleranceS));
    parts.push(text(record));
    const image = await encodeImage(v.frames.paths[p.kf.index]!, o.imageMaxSide, o.jpegQuality, v.field);
    const label = `demonstration ${d.name}, camera ${v.camera}, t=${tRel.toFixed(2)} s, ${stage}`;
    parts.push({ type: 'image', id, label, mime: 'image/jpeg', ...image });
    const following = picks[k + 1];
    if (!following || timeOf(following) > t) rowsBefore(following ? timeOf(following) : Infinity);
  }
  return parts;
}

/** The parts as provider content (providers/types.ts): images as {mime, bytes} with their label. */
export function referenceContent(parts: readonly ContextPart[]): ContentPart[] {
  return parts.map((p) =>
    p.type === 'text'
      ? { type: 'text', text: p.text }
      : { type: 'image', image: { mime: p.mime, bytes: p.bytes }, label: p.label },
  );
}
