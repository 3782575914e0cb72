// Dual-arm synchronisation: both arms are planned before anything is sent, and segment i of
// each arm is stretched uniformly to the longer of the two, so the arms start and reach every
// target together. A uniform stretch by f divides velocities by f, accelerations by f², jerks
// by f³: limits that held still hold.
import type { TimedSegment } from './path-scaling.js';

/** The segment slowed to last `duration` (≥ its own); a motionless one just holds. */
export function stretchSegment(seg: TimedSegment, duration: number): TimedSegment {
  if (seg.duration === 0) {
    const t = new Float64Array(seg.t.length);
    t[t.length - 1] = duration;
    return { ...seg, t, duration };
  }
  const f = duration / seg.duration;
  const t = new Float64Array(seg.t.length);
  for (let k = 0; k < t.length; k++) t[k] = seg.t[k] * f;
  t[t.length - 1] = duration; // exactly, so synchronised arms share their segment ends
  return { ...seg, t, duration, scale: seg.scale * f };
}

export type SyncResult =
  | { ok: true; left: TimedSegment[]; right: TimedSegment[] }
  | { ok: false; code: 'segment_count_mismatch'; message: string };

/** Stretches segment i of both arms to max(left[i].duration, right[i].duration). */
export function synchroniseArms(left: readonly TimedSegment[], right: readonly TimedSegment[]): SyncResult {
  if (left.length !== right.length) {
    return {
      ok: false,
      code: 'segment_count_mismatch',
      message: `dual-arm segments must pair up: left has ${left.length}, right ${right.length} (give an idle arm motionless segments)`,
    };
  }
  const l: TimedSegment[] = [],
    r: TimedSegment[] = [];
  for (let i = 0; i < left.length; i++) {
    const T = Math.max(left[i].duration, right[i].duration);
    l.push(left[i].duration === T ? left[i] : stretchSegment(left[i], T));
    r.push(right[i].duration === T ? right[i] : stretchSegment(right[i], T));
  }
  return { ok: true, left: l, right: r };
}
