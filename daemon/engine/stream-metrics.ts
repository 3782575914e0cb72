// Prometheus metrics of the expert executor (SSD streaming and the prerouter), by model: each
// request adds the change of its session's monotonic counters; memory split anonymous / file.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { StreamStats } from '../native/binding.js';
import { memoryStats } from '../util/proc-stats.js';

type CounterKey = Exclude<keyof StreamStats, 'blockedNs' | 'bufferBytes'>;

/** Counter name and help per StreamStats field (blockedNs becomes seconds). */
const COUNTERS: [CounterKey, string, string][] = [
  [
    'ioBytes',
    'brainstem_expert_read_bytes_total',
    'Bytes the expert I/O threads read (slot loads, prefetches, layer reads)',
  ],
  ['loads', 'brainstem_expert_loads_total', 'Experts loaded into slots or the hot set'],
  ['prefetchLoads', 'brainstem_expert_prefetch_loads_total', 'Expert loads issued from a prerouter prediction'],
  ['prefetchBytes', 'brainstem_expert_prefetch_bytes_total', 'Bytes loaded from prerouter predictions'],
  [
    'prefetchUnusedBytes',
    'brainstem_expert_prefetch_unused_bytes_total',
    'Prefetched expert bytes replaced before any use',
  ],
  ['slotHits', 'brainstem_expert_slot_hits_total', 'Routed experts already in a slot or the hot set'],
  [
    'slotMisses',
    'brainstem_expert_slot_misses_total',
    'Routed experts that had to be loaded (or computed by exact on the hot path)',
  ],
  [
    'fallbacks',
    'brainstem_expert_fallbacks_total',
    'Routed experts computed by the exact path instead of the chosen one',
  ],
  ['drops', 'brainstem_expert_drops_total', 'Routed rows that hit the zero slot (0 by design)'],
  ['layerReads', 'brainstem_expert_layer_reads_total', 'Whole-layer reads (prefill)'],
  [
    'prefetchMisses',
    'brainstem_expert_prefetch_misses_total',
    'Staged experts of a predicted routing that had not been prefetched (0 by design)',
  ],
  [
    'readHints',
    'brainstem_expert_read_hints_total',
    'Routed experts whose pages were requested from the OS (WILLNEED); flat while every expert is in the page cache',
  ],
  [
    'warmExperts',
    'brainstem_expert_warm_experts_total',
    'Predicted experts read into the page cache ahead of their layer (exact and hot paths)',
  ],
  ['warmBytes', 'brainstem_expert_warm_bytes_total', 'Bytes read into the page cache for predicted experts'],
  ['warmHits', 'brainstem_expert_warm_hits_total', 'Routed experts whose page-cache warm had finished in time'],
  ['predictedLayers', 'brainstem_prerouter_predicted_layers_total', 'MoE layer-steps routed by a prerouter prediction'],
  [
    'recallHits',
    'brainstem_prerouter_recall_hits_total',
    'Predicted experts that the true router also chose (with recall measuring on)',
  ],
  [
    'recallTotal',
    'brainstem_prerouter_recall_total',
    'Experts the true router chose where a prediction routed (with recall measuring on)',
  ],
];

export class StreamMetrics {
  private readonly counters = new Map<CounterKey, Counter<'model'>>();
  private readonly blocked: Counter<'model'>;
  private readonly buffers: Gauge<'model'>;

  constructor(registry: Registry) {
    const registers = [registry];
    for (const [key, name, help] of COUNTERS)
      this.counters.set(key, new Counter({ name, help, labelNames: ['model'], registers }));
    this.blocked = new Counter({
      name: 'brainstem_expert_blocked_seconds_total',
      help: 'Time compute waited on expert loads and layer reads',
      labelNames: ['model'],
      registers,
    });
    this.buffers = new Gauge({
      name: 'brainstem_expert_buffer_bytes',
      help: "The model's slot and layer buffers (anonymous memory)",
      labelNames: ['model'],
      registers,
    });
    // Read at scrape time: the mmapped weights show up as file-backed, reclaimable memory.
    const mem = () => memoryStats();
    new Gauge({
      name: 'brainstem_process_rss_anon_bytes',
      help: 'Anonymous resident memory (RssAnon; absent off Linux)',
      registers,
      collect() {
        const v = mem().rssAnonBytes;
        if (v !== null) this.set(v);
      },
    });
    new Gauge({
      name: 'brainstem_process_rss_file_bytes',
      help: 'File-backed resident memory, mmapped weights included (RssFile; absent off Linux)',
      registers,
      collect() {
        const v = mem().rssFileBytes;
        if (v !== null) this.set(v);
      },
    });
  }

  /** Adds what a request changed: `after` minus `before` of one session's counters. */
  record(model: string, before: StreamStats, after: StreamStats): void {
    for (const [key, counter] of this.counters) {
      const d = after[key] - before[key];
      if (d > 0) counter.inc({ model }, d);
    }
    const blockedNs = after.blockedNs - before.blockedNs;
    if (blockedNs > 0) this.blocked.inc({ model }, blockedNs / 1e9);
    this.buffers.set({ model }, after.bufferBytes);
  }

  /** The model unloaded: its buffers are gone. */
  unloaded(model: string): void {
    this.buffers.set({ model }, 0);
  }
}
