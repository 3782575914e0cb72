// Action samples against the timeline video: each aligned to its nearest frame within the
// tolerance (the rest reported), then thinned to about one sample a period per segment plus
// segment endpoints and both sides of every gripper-command change.
import type { ActionSample } from './action-log.js';
import { nearestFrame } from './keyframes.js';
import type { ContextOptions } from './types.js';

export interface AlignedSample extends ActionSample {
  frame: number;
}

export function alignSamples(
  samples: readonly ActionSample[],
  times: readonly number[],
  toleranceS: number,
): { aligned: AlignedSample[]; unaligned: ActionSample[] } {
  const aligned: AlignedSample[] = [];
  const unaligned: ActionSample[] = [];
  for (const s of samples) {
    const frame = nearestFrame(times, s.t, toleranceS);
    if (frame < 0) unaligned.push(s);
    else aligned.push({ ...s, frame });
  }
  return { aligned, unaligned };
}

// Slack so that a sample exactly one period after the segment start opens the next bucket.
const EPS = 1e-9;

/** The samples thinning keeps, in log order. Segments: per arm, split where `segment` changes or a gap exceeds segmentGapS. */
export function thinSamples<S extends ActionSample>(
  samples: readonly S[],
  o: Pick<ContextOptions, 'samplePeriodS' | 'segmentGapS'>,
): S[] {
  const keep = new Set<S>();
  const arms = new Map<string, S[]>();
  for (const s of samples) {
    const seq = arms.get(s.arm);
    if (seq) seq.push(s);
    else arms.set(s.arm, [s]);
  }
  for (const seq of arms.values()) {
    let segStart = 0;
    let lastBucket = -1;
    let cmd: number | undefined;
    seq.forEach((s, i) => {
      const prev = seq[i - 1];
      if (!prev || s.segment !== prev.segment || s.t - prev.t > o.segmentGapS + EPS) {
        if (prev) keep.add(prev);
        keep.add(s);
        segStart = s.t;
        lastBucket = 0;
      }
      const bucket = Math.floor((s.t - segStart) / o.samplePeriodS + EPS);
      if (bucket > lastBucket) {
        keep.add(s);
        lastBucket = bucket;
      }
      if (s.gripperCmd !== undefined) {
        if (cmd !== undefined && s.gripperCmd !== cmd) {
          if (prev) keep.add(prev);
          keep.add(s);
        }
        cmd = s.gripperCmd;
      }
    });
    if (seq.length > 0) keep.add(seq[seq.length - 1]!);
  }
  return samples.filter((s) => keep.has(s));
}
