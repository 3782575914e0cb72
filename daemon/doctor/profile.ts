// Recommended engine profile for this box's memory. The budget is for non-reclaimable engine
// memory (attention weights, KV cache, expert slots); the rest stays for the OS and for the
// page cache that keeps hot experts of the mmapped weights resident.
const GiB = 1024 ** 3;

export interface EngineProfile {
  name: 'minimal' | 'compact' | 'standard' | 'roomy' | 'resident';
  /** Bytes the engine may pin (half of total memory, at least 1 GiB). */
  engine_budget_bytes: number;
  /** Expert executor for decode (see DESIGN.md: exact, staged, hot). */
  executor: 'exact' | 'staged' | 'hot';
  /** Routing width override (top-k); null keeps the model's own. */
  routing_k: number | null;
  prerouter: boolean;
  note: string;
}

/** Tiers by total memory (GiB): <6, <12, <20, <40, >=40. */
export function recommendProfile(totalBytes: number): EngineProfile {
  const budget = Math.max(GiB, Math.floor(totalBytes / 2));
  const gib = totalBytes / GiB;
  const p = (name: EngineProfile['name'], executor: EngineProfile['executor'], routing_k: number | null, prerouter: boolean, note: string): EngineProfile => ({
    name,
    engine_budget_bytes: budget,
    executor,
    routing_k,
    prerouter,
    note,
  });
  if (gib < 6) return p('minimal', 'exact', 4, true, 'small MoE models only; experts stream from SSD on demand');
  if (gib < 12) return p('compact', 'staged', 4, true, '~30B-A3B class models streamed from SSD with reduced routing width and predicted prefetch');
  if (gib < 20) return p('standard', 'hot', 4, true, '30-35B-A3B streamed; K=4 with the prerouter (about +80% decode on a 16 GB Mac vs on-demand loads)');
  if (gib < 40) return p('roomy', 'hot', null, true, '30-35B-A3B at full routing width with a large hot-expert set');
  return p('resident', 'hot', null, false, 'a 30B-A3B int4 model fits in memory; experts stay in the page cache');
}
