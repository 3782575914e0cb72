// One demonstration analysed: its action log read and turned into events, each video's frames
// loaded and reduced to keyframes, and the action samples aligned to the timeline video and thinned.
import { type ActionSample, readActionLog } from './action-log.js';
import { type AlignedSample, alignSamples, thinSamples } from './align.js';
import { actionEvents } from './events.js';
import { type FrameSet, loadFrames } from './frames.js';
import { thumbnail } from './images.js';
import { type KeyframeSelection, selectKeyframes } from './keyframes.js';
import type { ActionEvent, ContextOptions, DemonstrationInput } from './types.js';

export interface AnalysedVideo {
  camera: string;
  field: string;
  frames: FrameSet;
  selection: KeyframeSelection;
}

export interface AnalysedDemonstration {
  name: string;
  /** The action log's path as read, and its samples (none without a log). */
  actionsFile: string | null;
  samples: ActionSample[];
  events: ActionEvent[];
  videos: AnalysedVideo[];
  aligned: AlignedSample[];
  unaligned: ActionSample[];
  kept: AlignedSample[];
  /** Time of the timeline video's first frame: records give times relative to it. */
  t0: number;
}

// Frames decoded at once: bounded so a long video never holds thousands of decodes in flight.
const DECODE_BATCH = 8;

/** `field` names the demonstration in the input; frames loaded join `opened`, which the caller releases. */
export async function analyseDemonstration(
  d: DemonstrationInput,
  field: string,
  o: ContextOptions,
  opened: FrameSet[],
): Promise<AnalysedDemonstration> {
  let samples: ActionSample[] = [];
  let actionsFile: string | null = null;
  if (d.actions !== undefined) {
    const f = `${field}.actions`;
    actionsFile = o.resolvePath ? await o.resolvePath(d.actions, f) : d.actions;
    samples = await readActionLog(actionsFile, f);
  }
  const events = actionEvents(samples, o.moveThreshold);
  const videos: AnalysedVideo[] = [];
  for (const [k, v] of d.videos.entries()) {
    const vf = `${field}.videos[${k}]`;
    const frames = await loadFrames(v, vf, o);
    opened.push(frames);
    const thumbs: Uint8Array[] = [];
    for (let i = 0; i < frames.paths.length; i += DECODE_BATCH) {
      const batch = frames.paths.slice(i, i + DECODE_BATCH);
      thumbs.push(...(await Promise.all(batch.map((p) => thumbnail(p, o.thumbSize, vf)))));
    }
    videos.push({ camera: v.camera, field: vf, frames, selection: selectKeyframes(frames.times, thumbs, events, o) });
  }
  const timeline = videos[0]!.frames.times;
  const { aligned, unaligned } = alignSamples(samples, timeline, o.alignToleranceS);
  const kept = thinSamples(aligned, o);
  return { name: d.name, actionsFile, samples, events, videos, aligned, unaligned, kept, t0: timeline[0]! };
}
