// The text records interleaved with the images: compact JSON, numbers rounded (times and poses to
// 3 decimals), missing values as null, never zero.
import type { ActionSample } from './action-log.js';

/** Columns of each row of an "actions" record (named once in the demonstration's header). */
export const ACTION_COLUMNS = ['t_s', 'arm', 'joints', 'tcp', 'gripper', 'gripper_cmd', 'joint_cmd'];

export function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  const r = Math.round(x * f) / f;
  return Object.is(r, -0) ? 0 : r;
}

const vec = (v: number[] | undefined) => (v ? v.map((x) => round(x)) : null);
const opt = (x: number | undefined) => (x === undefined ? null : round(x));

/** One row per sample, time relative to the demonstration's first frame. */
export function actionRow(s: ActionSample, t0: number): unknown[] {
  return [round(s.t - t0), s.arm, vec(s.joints), vec(s.tcp), opt(s.gripper), opt(s.gripperCmd), vec(s.jointCmd)];
}

/** The measured state and the commands of each arm at the sample nearest `t` within `tolerance`. */
export function stateAt(samples: readonly ActionSample[], t: number, tolerance: number) {
  const nearest = new Map<string, ActionSample>();
  for (const s of samples) {
    const d = Math.abs(s.t - t);
    if (d > tolerance + 1e-9) continue;
    const best = nearest.get(s.arm);
    if (!best || d < Math.abs(best.t - t)) nearest.set(s.arm, s);
  }
  const state: Record<string, Record<string, unknown>> = {};
  const action: Record<string, Record<string, unknown>> = {};
  for (const arm of [...nearest.keys()].sort()) {
    const s = nearest.get(arm)!;
    const st = prune({ joints: vec(s.joints), tcp: vec(s.tcp), gripper: opt(s.gripper) });
    const ac = prune({ gripper_cmd: opt(s.gripperCmd), joint_cmd: vec(s.jointCmd) });
    if (st) state[arm] = st;
    if (ac) action[arm] = ac;
  }
  return { state, action };
}

function prune(o: Record<string, unknown>): Record<string, unknown> | null {
  const out = Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null));
  return Object.keys(out).length > 0 ? out : null;
}
