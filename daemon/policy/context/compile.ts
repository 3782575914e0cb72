// The context compiler: goal images and demonstrations (keyframes interleaved with text records
// and thinned action rows) as an ordered list of parts, with a report of what was dropped and why.
import { basename } from 'node:path';
import { type AnalysedDemonstration, analyseDemonstration } from './demonstration.js';
import type { FrameSet } from './frames.js';
import { checkContextInput, contextOptions } from './input.js';
import { type GoalImage, type KeyframeOf, demonstrationParts, goalParts } from './parts.js';
import type { CompiledContext, ContextOptions, ContextReport, Dropped } from './types.js';

interface Chosen extends KeyframeOf {
  demo: number;
}

/** Compiles `input` (checked by checkContextInput) with `options` over DEFAULT_CONTEXT_OPTIONS. */
export async function compileContext(input: unknown, options: Partial<ContextOptions> = {}): Promise<CompiledContext> {
  const o = contextOptions(options);
  const spec = checkContextInput(input);
  const opened: FrameSet[] = [];
  try {
    const goals: GoalImage[] = [];
    for (const [i, g] of (spec.goals ?? []).entries()) {
      const field = `context.goals[${i}].path`;
      const path = o.resolvePath ? await o.resolvePath(g.path, field) : g.path;
      goals.push({ path, label: g.label ?? basename(g.path), field });
    }
    const demos: AnalysedDemonstration[] = [];
    for (const [i, d] of (spec.demonstrations ?? []).entries())
      demos.push(await analyseDemonstration(d, `context.demonstrations[${i}]`, o, opened));
    return await assemble(goals, demos, o);
  } finally {
    for (const f of opened) await f.release();
  }
}

async function assemble(
  goals: GoalImage[],
  demos: AnalysedDemonstration[],
  o: ContextOptions,
): Promise<CompiledContext> {
  const dropped: Dropped[] = [];
  const report: ContextReport = { images: 0, videos: [], actions: [], events: [], dropped };
  for (const d of demos) {
    report.events.push(...d.events.map((e) => ({ ...e, demo: d.name })));
    for (const v of d.videos) {
      const ref = `${d.name}/${v.camera}`;
      for (const x of v.selection.dropped)
        dropped.push({
          what: 'frame',
          ref,
          reason: x.reason,
          index: x.index,
          t: v.frames.times[x.index]!,
          detail: x.detail,
        });
      for (const e of v.selection.unaligned)
        dropped.push({
          what: 'event',
          ref,
          reason: 'unaligned',
          line: e.line,
          t: e.t,
          detail: `${e.kind} of ${e.arm}`,
        });
    }
    for (const s of d.unaligned)
      dropped.push({ what: 'sample', ref: d.name, reason: 'unaligned', line: s.line, t: s.t, detail: `arm ${s.arm}` });
    if (d.actionsFile !== null)
      report.actions.push({
        demo: d.name,
        file: d.actionsFile,
        samples: d.samples.length,
        aligned: d.aligned.length,
        unaligned: d.unaligned.length,
        kept: d.kept.length,
        thinned: d.aligned.length - d.kept.length,
      });
  }

  // The images cap: goal images first, then keyframes by rank (every video's first and last before any third).
  const goalsKept = goals.slice(0, o.maxImages);
  goals.slice(o.maxImages).forEach((_, k) => {
    const n = o.maxImages + k + 1;
    dropped.push({
      what: 'goal',
      ref: `goal/${n}`,
      reason: 'cap_total',
      index: n - 1,
      detail: `beyond ${o.maxImages} images`,
    });
  });
  const pool: Chosen[] = demos.flatMap((d, di) =>
    d.videos.flatMap((v, vi) => v.selection.keyframes.map((kf) => ({ demo: di, video: vi, kf }))),
  );
  pool.sort((a, b) => a.kf.rank - b.kf.rank || a.demo - b.demo || a.video - b.video);
  const room = o.maxImages - goalsKept.length;
  for (const p of pool.slice(room)) {
    const d = demos[p.demo]!;
    const v = d.videos[p.video]!;
    const detail = `beyond ${o.maxImages} images in all (${p.kf.reason}, rank ${p.kf.rank})`;
    dropped.push({
      what: 'frame',
      ref: `${d.name}/${v.camera}`,
      reason: 'cap_total',
      index: p.kf.index,
      t: v.frames.times[p.kf.index]!,
      detail,
    });
  }
  const chosen = pool.slice(0, room);

  const parts = await goalParts(goalsKept, o);
  for (const [di, d] of demos.entries()) {
    const picks = chosen.filter((p) => p.demo === di);
    for (const [vi, v] of d.videos.entries()) {
      const keyframes = picks.filter((p) => p.video === vi).map((p) => p.kf.index);
      report.videos.push({
        demo: d.name,
        camera: v.camera,
        frames: v.frames.paths.length,
        candidates: v.selection.candidates,
        keyframes: keyframes.sort((a, b) => a - b),
      });
    }
    parts.push(...(await demonstrationParts(d, picks, o)));
  }
  report.images = parts.filter((p) => p.type === 'image').length;
  return { parts, report };
}
