// The streaming profile sized from the memory budget and the model's geometry: which expert path
// each phase takes, staged slots, hot cache, I/O threads and I/O mode. A pure function, so
// `doctor`, `start` and `bench decode` make the same choice and tests can check its rules. The
// paths follow the measured grid in docs/streaming.md: exact through the page cache where it
// holds a fair share of the experts, staged slots with direct reads where it does not, and
// whole-layer prefill (each expert read once per chunk) where two layers fit.
import type { ExpertPath, IoMode } from '../native/binding.js';

export interface ModelGeometry {
  /** Bytes of all tensors in the weight files. */
  fileBytes: number;
  /** Bytes of one routed expert (gate + up + down) of one layer. */
  expertBytes: number;
  moeLayers: number;
  /** Routed experts per MoE layer. */
  experts: number;
  /** Routing width K in use. */
  topK: number;
}

export interface AutoStreamInput extends ModelGeometry {
  /** Memory the engine may use, page cache included (cgroup limit or total memory). */
  budgetBytes: number;
}

export interface AutoStream {
  prefillPath: ExpertPath;
  decodePath: ExpertPath;
  /** Staged slots per MoE layer (used when a staged path is chosen or forced). */
  slots: number;
  /** Hot-path resident experts over all MoE layers, in bytes. */
  cacheBytes: number;
  ioThreads: number;
  ioMode: IoMode;
  /** Tokens per prefill forward step: whole-layer prefill reads every expert once per chunk. */
  prefillChunk: number;
  /** The weights stay in the page cache whole. */
  resident: boolean;
  /** Anonymous bytes the chosen paths pin, plus the weights when resident: never above the budget. */
  plannedBytes: number;
  reasons: string[];
}

const MiB = 1024 ** 2;
/** Kept free of planning: KV cache, activations, the runtime (at least 512 MiB or an eighth). */
export const reserveBytes = (budget: number) => Math.max(512 * MiB, Math.floor(budget / 8));

/** Share of the routed experts the page cache must hold for exact decode to match staged slots. */
export const CACHEABLE_FOR_EXACT = 0.75;

/** I/O threads when streaming: an SSD reads fastest with many requests in flight (moe-30b, 4 GiB,
 * K=8: 3.5 tok/s with 4 threads, 4.0-4.8 with 32, 4.9-5.0 with 64; K=4: 5.7 with 2, 9.5 with 32;
 * docs/streaming.md#io-threads). Each holds a 1 MiB bounce buffer, inside the reserve. */
export const STREAM_IO_THREADS = 32;

const fmt = (b: number) => `${(b / 1024 ** 3).toFixed(2)} GiB`;

/** The engine's prefill chunk (tokens per forward step), kept where memory is tight. */
export const DEFAULT_PREFILL_CHUNK = 128;
/** The chunk where memory allows: longer expert runs for the prefill GEMM, and whole-layer
 * prefill reads every expert once per chunk (docs/streaming.md#prefill-chunk: moe-30b 512-token
 * prompts 1.36x faster resident, 1.48x at 4 GiB; activations stay in the reserve). */
export const LONG_PREFILL_CHUNK = 512;

export function autoStream(g: AutoStreamInput): AutoStream {
  const budget = Math.max(0, g.budgetBytes);
  const reserve = reserveBytes(budget);
  const routed = g.moeLayers * g.experts * g.expertBytes;
  const dense = Math.max(0, g.fileBytes - routed);
  const layerSet = g.moeLayers * g.expertBytes; // one expert in every MoE layer
  const free = Math.max(0, budget - reserve - dense);
  const reasons: string[] = [];
  const resident = g.fileBytes + reserve <= budget;
  // Page-cache reads: half of what the dense weights leave goes to buffers, half stays for the page
  // cache's reuse. Direct reads bypass the page cache, so staged slots take all of it (below).
  const share = Math.floor(free / 2);
  const fitSlots = layerSet > 0 ? Math.floor(share / layerSet) - 1 : 0; // + the zero slot
  const cacheBytes = Math.max(0, Math.min(g.experts, fitSlots)) * layerSet; // as many experts per layer
  if (resident) {
    reasons.push(
      `weights ${fmt(g.fileBytes)} + reserve ${fmt(reserve)} fit the budget ${fmt(budget)}: exact paths over the page cache, nothing pinned`,
    );
    return {
      prefillPath: 'exact',
      decodePath: 'exact',
      slots: Math.max(1, Math.min(g.experts, fitSlots)),
      cacheBytes,
      ioThreads: 2,
      ioMode: 'page-cache',
      prefillChunk: LONG_PREFILL_CHUNK,
      resident,
      plannedBytes: g.fileBytes,
      reasons,
    };
  }
  reasons.push(
    `weights ${fmt(g.fileBytes)} exceed the budget ${fmt(budget)} less reserve ${fmt(reserve)}: experts stream from disk`,
  );
  // The measured grid (docs/streaming.md#measured-grid, moe-30b, prerouter on): staged slots with
  // direct reads beat exact decode over the page cache at 4 GiB (18% of the routed experts
  // cacheable) and 8 GiB (41%); with 32 I/O threads also at 12 GiB (64%: 8.2-8.3 vs 6.4-6.6
  // tok/s), about tie at 14 GiB (75%: 7.8-8.4 vs 7.5-7.6), and lose at 16 GiB (87%: 7.9-8.2 vs
  // 9.3-9.9), where exact pins nothing. Staged needs K slots, so a layer's prediction fits at once.
  const cacheable = routed > 0 ? free / routed : 1;
  // Whole-layer prefill holds the layer it computes and the next one (direct: in two buffers).
  const layerBytes = g.experts * g.expertBytes;
  // Direct reads leave the page cache nothing to reuse: the slots take what the dense weights and
  // (when they fit beside K slots) the two whole-layer buffers leave. 4 GiB: 16 slots, measured
  // 1.48 tok/s (468 MB read per token) against 0.78 with 10 (655 MB); 20 slots spilled the dense
  // weights out of the page cache (1.20).
  const wholeBeside = free - 2 * layerBytes >= (g.topK + 1) * layerSet;
  const directFit = layerSet > 0 ? Math.floor((free - (wholeBeside ? 2 * layerBytes : 0)) / layerSet) - 1 : 0;
  const staged = cacheable < CACHEABLE_FOR_EXACT && directFit >= g.topK;
  const slots = Math.max(1, Math.min(g.experts, staged ? directFit : fitSlots));
  const pct = `${Math.round(cacheable * 100)}%`;
  if (staged) {
    reasons.push(
      `the page cache holds ${pct} of the routed experts (< ${CACHEABLE_FOR_EXACT * 100}%): decode staged with ${slots} slots and direct reads (measured faster there)`,
    );
  } else if (cacheable < CACHEABLE_FOR_EXACT) {
    reasons.push(`${pct} cacheable but fewer than K=${g.topK} slots fit: decode exact through the page cache`);
  } else {
    reasons.push(
      `the page cache holds ${pct} of the routed experts: decode exact through it, predicted experts warmed (as fast as slots there, nothing pinned)`,
    );
  }
  const ioMode: IoMode = staged ? 'direct' : 'page-cache';
  const slotBytes = staged ? stagedBytes(g, slots) : 0;
  const whole = staged ? wholeBeside : 2 * layerBytes <= free;
  reasons.push(
    whole
      ? `prefill whole-layer in chunks of ${LONG_PREFILL_CHUNK} tokens: each chunk reads every expert of a layer once, in large sequential reads`
      : `two layers (${fmt(2 * layerBytes)}) do not fit beside the rest: prefill exact in chunks of ${DEFAULT_PREFILL_CHUNK} tokens`,
  );
  const ioThreads = STREAM_IO_THREADS;
  reasons.push(`${ioThreads} I/O threads (reads in flight at once); hot cache ${fmt(cacheBytes)} if chosen`);
  return {
    prefillPath: whole ? 'whole-layer' : 'exact',
    decodePath: staged ? 'staged' : 'exact',
    slots,
    cacheBytes,
    ioThreads,
    ioMode,
    prefillChunk: whole ? LONG_PREFILL_CHUNK : DEFAULT_PREFILL_CHUNK,
    resident,
    plannedBytes: slotBytes + (whole && staged ? 2 * layerBytes : 0),
    reasons,
  };
}

/** Anonymous bytes a staged path with `slots` pins, with its zero slot. */
export const stagedBytes = (g: ModelGeometry, slots: number) => (slots + 1) * g.moeLayers * g.expertBytes;
