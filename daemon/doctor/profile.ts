// The streaming profile doctor recommends: the auto-size (engine/stream-autosize.ts) for this
// box's memory budget and a model's geometry — each configured model, or the reference
// 30B-A3B int4 shape — with the reasons, as values for the config's engine.* streaming keys.
// `start` and `bench decode` apply the same choice by themselves for keys left at auto.
import type { EngineConfig } from '../engine/config.js';
import { autoStream, type ModelGeometry } from '../engine/stream-autosize.js';
import type { MemoryBudget } from '../engine/stream-budget.js';
import type { streamEngineFields } from '../engine/stream-config.js';

/** engine.* streaming keys (the CUDA budget is the device's: not recommended here) plus the routing
 *  width (null: the model's own). */
export type RecommendedSettings = Pick<
  EngineConfig,
  Exclude<keyof typeof streamEngineFields, 'device_expert_bytes'>
> & { top_k: number | null };

/** Qwen3-30B-A3B 4-bit g64 (and the synthetic moe-30b): 48 MoE layers × 128 experts of 2.65 MB. */
export const REFERENCE_GEOMETRY: ModelGeometry = {
  fileBytes: 17_190_000_000,
  expertBytes: 2_654_208,
  moeLayers: 48,
  experts: 128,
  topK: 8,
};

export interface EngineProfile {
  name: 'streaming' | 'resident';
  budget_bytes: number;
  /** "cgroup v1 <dir>" or "total memory". */
  budget_source: string;
  /** The model it is sized for: a configured model's name or "reference 30B-A3B int4". */
  model: string;
  geometry: ModelGeometry;
  profile: RecommendedSettings;
  reasons: string[];
}

export function recommendProfile(
  budget: MemoryBudget,
  model = 'reference 30B-A3B int4',
  geometry: ModelGeometry = REFERENCE_GEOMETRY,
): EngineProfile {
  const a = autoStream({ ...geometry, budgetBytes: budget.bytes });
  return {
    name: a.resident ? 'resident' : 'streaming',
    budget_bytes: budget.bytes,
    budget_source: budget.source,
    model,
    geometry,
    profile: {
      top_k: null,
      prefill_path: a.prefillPath,
      decode_path: a.decodePath,
      slots: a.slots,
      cache_bytes: a.cacheBytes,
      io_threads: a.ioThreads,
      io_mode: a.ioMode,
      // Measured 1.4× (4 GiB) and 2.0× (8 GiB) decode on moe-30b; it changes outputs, so it is
      // recommended here, never turned on by the auto-size.
      prerouter: a.resident ? 'off' : 'on',
    },
    reasons: a.resident
      ? a.reasons
      : [
          ...a.reasons,
          'prerouter on: 1.4-2.0× decode measured under 4 and 8 GiB; the predicted routing changes the output',
        ],
  };
}
