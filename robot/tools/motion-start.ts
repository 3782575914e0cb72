// A multi-arm motion's common start: a lead long enough for every arm's message to reach the
// controller before start_time, and the check that the arms did start together (a controller
// shifts a late trajectory alone: docs/protocol.md, "Execution"). Pure.
import type { PlannedArm } from './plan.js';
import { trajectoryBytesBound } from '../link/trajectory-size.js';

export interface StartOptions {
  /** Delay from publishing to the trajectories' common start for the smallest messages (s). */
  startLead: number;
  /** Added to startLead per MiB of all the arms' trajectory messages together (s). */
  startLeadPerMiB: number;
  /** Largest spread of the arms' `started` times before the motion is stopped (s). */
  startSkew: number;
}

/**
 * Bytes of the arms' trajectory messages together (an upper bound, as the planner's check) and
 * the lead to start them with. Every message is serialised, sent, parsed and checked before
 * the last arm is admitted; the lead must cover that for all of them.
 */
export function startLeadFor(
  arms: readonly PlannedArm[],
  rate: number,
  o: StartOptions,
): { bytes: number; lead: number } {
  let bytes = 0;
  for (const p of arms) bytes += trajectoryBytesBound(p.count, p.joints.length, rate, p.q, p.dq, p.ddq);
  return { bytes, lead: o.startLead + (o.startLeadPerMiB * bytes) / 2 ** 20 };
}

/**
 * Why the arms did not start together, or null: two `started` times further apart than the
 * tolerance, or one arm started and another still not `tc` (controller time) later.
 */
export function startSkew(
  starts: readonly { arm: string; startedAt: number | null }[],
  tc: number,
  tolerance: number,
): string | null {
  if (starts.length < 2) return null;
  const begun = starts.filter((s) => s.startedAt !== null) as { arm: string; startedAt: number }[];
  if (begun.length === 0) return null;
  const first = begun.reduce((a, b) => (b.startedAt < a.startedAt ? b : a));
  const waiting = starts.find((s) => s.startedAt === null);
  const ms = (s: number) => `${(s * 1000).toFixed(0)} ms`;
  if (waiting && tc - first.startedAt > tolerance)
    return `arm ${waiting.arm} had not started ${ms(tc - first.startedAt)} after arm ${first.arm} (tolerance ${ms(tolerance)})`;
  const last = begun.reduce((a, b) => (b.startedAt > a.startedAt ? b : a));
  if (last.startedAt - first.startedAt > tolerance)
    return `arm ${last.arm} started ${ms(last.startedAt - first.startedAt)} after arm ${first.arm} (tolerance ${ms(tolerance)})`;
  return null;
}
