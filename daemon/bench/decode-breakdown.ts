// `bench decode --breakdown`: where a decoded token's time goes, from the session's stage
// profile (native/common/step-profile.h) taken before and after the decode loop.
import { PROFILE_STAGES, type ProfileStage, type StepProfile } from '../native/binding.js';

export interface StageCost {
  /** Wall time of the calling thread in this stage, per token (ms). */
  ms: number;
  /** ms ÷ the native step's time. */
  share: number;
  /** Thread-pool loops the stage started, per token. */
  loops: number;
  /** The caller's waits at those loops' ends for another thread's last ranges, per token (ms). */
  wait_ms: number;
}

export interface DecodeBreakdown {
  /** The native forward step per decoded token (ms). */
  step_ms: number;
  /** Decode wall time per token outside the native step: JavaScript, the promise round trip, the logits copy (ms). */
  between_steps_ms: number;
  /** Step time in no stage: the expert executor's bookkeeping, serial glue (ms). */
  other_ms: number;
  loops_per_token: number;
  /** All loop-end waits of the caller per token (ms). */
  loop_wait_ms: number;
  stages: Record<ProfileStage, StageCost>;
}

/** A session's profile before its first step (the native side creates it with that step). */
export const EMPTY_PROFILE: StepProfile = {
  steps: 0,
  stepNs: 0,
  loops: 0,
  waitNs: 0,
  stages: Object.fromEntries(PROFILE_STAGES.map((s) => [s, { ns: 0, loops: 0, waitNs: 0 }])) as StepProfile['stages'],
};

/** The decode loop's share of two profile snapshots; `wallS` is its wall time. */
export function decodeBreakdown(before: StepProfile, after: StepProfile, wallS: number): DecodeBreakdown {
  const steps = Math.max(1, after.steps - before.steps);
  const perMs = (a: number, b: number) => (a - b) / 1e6 / steps;
  const stepMs = perMs(after.stepNs, before.stepNs);
  let staged = 0;
  const stages = {} as Record<ProfileStage, StageCost>;
  for (const s of PROFILE_STAGES) {
    const a = after.stages[s];
    const b = before.stages[s];
    const ms = perMs(a.ns, b.ns);
    staged += ms;
    stages[s] = {
      ms,
      share: stepMs > 0 ? ms / stepMs : 0,
      loops: (a.loops - b.loops) / steps,
      wait_ms: perMs(a.waitNs, b.waitNs),
    };
  }
  return {
    step_ms: stepMs,
    between_steps_ms: (wallS * 1e3) / steps - stepMs,
    other_ms: stepMs - staged,
    loops_per_token: (after.loops - before.loops) / steps,
    loop_wait_ms: perMs(after.waitNs, before.waitNs),
    stages,
  };
}
