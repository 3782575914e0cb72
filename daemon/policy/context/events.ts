// Moments the action log marks (gripper closing = contact, opening = release, a change of the arms
// that move = arm_change) and the stage label of a moment derived from them.
import type { ActionSample } from './action-log.js';
import type { ActionEvent, KeyframeReason } from './types.js';

/** Events in time order; `moveThreshold` (rad) is the joint change that counts as an arm moving. */
export function actionEvents(samples: readonly ActionSample[], moveThreshold: number): ActionEvent[] {
  const events: ActionEvent[] = [];
  const lastCmd = new Map<string, number>();
  const lastJoints = new Map<string, number[]>();
  const moving = new Map<string, boolean>();
  let lastSet: string | null = null;
  for (let i = 0; i < samples.length; ) {
    // Samples at one time are taken together, so interleaved arms never show a passing mixed set.
    let j = i;
    while (j < samples.length && samples[j]!.t === samples[i]!.t) j++;
    for (const s of samples.slice(i, j)) {
      const prev = lastCmd.get(s.arm);
      if (s.gripperCmd !== undefined) {
        if (prev !== undefined && s.gripperCmd !== prev)
          events.push({ kind: s.gripperCmd < prev ? 'contact' : 'release', t: s.t, arm: s.arm, line: s.line });
        lastCmd.set(s.arm, s.gripperCmd);
      }
      if (s.joints) {
        const before = lastJoints.get(s.arm);
        if (before)
          moving.set(
            s.arm,
            s.joints.some((q, k) => Math.abs(q - (before[k] ?? q)) > moveThreshold),
          );
        lastJoints.set(s.arm, s.joints);
      }
    }
    const set = [...moving.keys()]
      .filter((a) => moving.get(a))
      .sort()
      .join('+');
    if (set !== '') {
      if (lastSet !== null && set !== lastSet)
        events.push({ kind: 'arm_change', t: samples[i]!.t, arm: set, line: samples[i]!.line });
      lastSet = set;
    }
    i = j;
  }
  return events;
}

/**
 * The stage of a keyframe: start / end for the first and last frame, the event's kind at an event
 * frame; otherwise carry while a gripper holds (closed by a contact, not yet released), approach
 * before a later contact, retreat after a release, move when the log has no gripper events.
 */
export function stageOf(t: number, reason: KeyframeReason, events: readonly ActionEvent[]): string {
  if (reason === 'first') return 'start';
  if (reason === 'last') return 'end';
  if (reason !== 'change') return reason;
  const holding = new Map<string, boolean>();
  let released = false;
  for (const e of events) {
    if (e.t > t) break;
    if (e.kind === 'contact') holding.set(e.arm, true);
    if (e.kind === 'release') {
      holding.set(e.arm, false);
      released = true;
    }
  }
  if ([...holding.values()].some((h) => h)) return 'carry';
  if (events.some((e) => e.kind === 'contact' && e.t > t)) return 'approach';
  return released ? 'retreat' : 'move';
}
