// Keyframes of one video from its frame times and greyscale thumbnails (pure, deterministic):
// candidates = the largest scene change in each overlapping window; then one global pass in
// priority order keeps first, last and event frames always, drops near-duplicate candidates,
// and cuts to the per-video cap.
import type { ActionEvent, KeyframeReason, KeyframeSelectionOptions } from './types.js';

export interface Keyframe {
  index: number;
  reason: KeyframeReason;
  /** Place in the priority order (0 = first frame, 1 = last, events, then larger changes). */
  rank: number;
}

export interface KeyframeDrop {
  index: number;
  reason: 'near_duplicate' | 'cap_per_video';
  detail: string;
}

export interface KeyframeSelection {
  candidates: number[];
  /** In frame order. */
  keyframes: Keyframe[];
  dropped: KeyframeDrop[];
  /** Events with no frame within the alignment tolerance. */
  unaligned: ActionEvent[];
}

/** Mean absolute difference of two equal-size greyscale thumbnails, in [0, 1]. */
export function thumbDistance(a: Uint8Array, b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!);
  return a.length === 0 ? 0 : sum / (255 * a.length);
}

// Slack for times computed as i / fps against window edges and tolerances written in decimals.
const EPS = 1e-9;

/** Index of the frame nearest `t` (the earlier on a tie) if within `tolerance`, else -1. `times` increase. */
export function nearestFrame(times: readonly number[], t: number, tolerance: number): number {
  let lo = 0;
  let hi = times.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  let best = lo;
  if (lo > 0 && Math.abs(times[lo - 1]! - t) <= Math.abs(times[lo]! - t)) best = lo - 1;
  return times.length > 0 && Math.abs(times[best]! - t) <= tolerance + EPS ? best : -1;
}

/**
 * Frames with the largest change in each window [start, start + windowS), start = t0 + k·strideS.
 * Windows with no frame are skipped over, so the work follows the frames, not the time span (two
 * frames 1e10 s apart are two windows, not 1e10).
 */
export function windowCandidates(times: readonly number[], change: readonly number[], o: KeyframeSelectionOptions) {
  const picked = new Set<number>();
  const t0 = times[0]!;
  const tLast = times[times.length - 1]!;
  let lo = 0;
  for (let k = 0; t0 + k * o.strideS <= tLast + EPS; k++) {
    let start = t0 + k * o.strideS;
    while (lo < times.length && times[lo]! < start - EPS) lo++;
    if (lo < times.length && times[lo]! >= start + o.windowS - EPS) {
      // The first window that may hold times[lo], one early for rounding.
      k = Math.max(k, Math.floor((times[lo]! - t0 - o.windowS) / o.strideS));
      start = t0 + k * o.strideS;
    }
    let best = -1;
    for (let i = lo; i < times.length && times[i]! < start + o.windowS - EPS; i++)
      if (i > 0 && change[i]! >= o.minChange && (best < 0 || change[i]! > change[best]!)) best = i;
    if (best >= 0) picked.add(best);
  }
  return [...picked].sort((a, b) => a - b);
}

const EVENT_PRIORITY: Record<ActionEvent['kind'], number> = { contact: 0, release: 0, arm_change: 1 };

export function selectKeyframes(
  times: readonly number[],
  thumbs: readonly Uint8Array[],
  events: readonly ActionEvent[],
  o: KeyframeSelectionOptions,
): KeyframeSelection {
  const n = times.length;
  const change = times.map((_, i) => (i === 0 ? 0 : thumbDistance(thumbs[i - 1]!, thumbs[i]!)));
  const candidates = windowCandidates(times, change, o);
  const order: { index: number; reason: KeyframeReason }[] = [{ index: 0, reason: 'first' }];
  if (n > 1) order.push({ index: n - 1, reason: 'last' });
  const unaligned: ActionEvent[] = [];
  const byPriority = [...events].sort((a, b) => EVENT_PRIORITY[a.kind] - EVENT_PRIORITY[b.kind] || a.t - b.t);
  for (const e of byPriority) {
    const f = nearestFrame(times, e.t, o.alignToleranceS);
    if (f < 0) unaligned.push(e);
    else order.push({ index: f, reason: e.kind });
  }
  const byChange = [...candidates].sort((a, b) => change[b]! - change[a]! || a - b);
  for (const i of byChange) order.push({ index: i, reason: 'change' });

  const kept: Keyframe[] = [];
  const dropped: KeyframeDrop[] = [];
  const seen = new Set<number>();
  for (const { index, reason } of order) {
    if (seen.has(index)) continue;
    seen.add(index);
    if (reason === 'change') {
      const dup = nearestKept(kept, thumbs, index);
      if (dup && dup.distance < o.duplicateDistance) {
        const detail = `near-duplicate of frame ${dup.index} (distance ${dup.distance.toFixed(4)})`;
        dropped.push({ index, reason: 'near_duplicate', detail });
        continue;
      }
    }
    if (kept.length >= o.maxKeyframesPerVideo) {
      dropped.push({
        index,
        reason: 'cap_per_video',
        detail: `beyond ${o.maxKeyframesPerVideo} keyframes (${reason})`,
      });
      continue;
    }
    kept.push({ index, reason, rank: kept.length });
  }
  return { candidates, keyframes: kept.sort((a, b) => a.index - b.index), dropped, unaligned };
}

function nearestKept(kept: readonly Keyframe[], thumbs: readonly Uint8Array[], index: number) {
  let best: { index: number; distance: number } | null = null;
  for (const k of kept) {
    const distance = thumbDistance(thumbs[k.index]!, thumbs[index]!);
    if (!best || distance < best.distance || (distance === best.distance && k.index < best.index))
      best = { index: k.index, distance };
  }
  return best;
}
